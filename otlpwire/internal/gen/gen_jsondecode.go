package main

// genJSONDecode writes the OTLP/JSON decode field index and the JSON
// record scanners (owner: the JSON decode).
func genJSONDecode(s *Schema) ([]File, error) {
	return nil, nil
}
