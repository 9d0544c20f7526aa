package main

// genEncode writes the protobuf and OTLP/JSON encoders, size and append
// from one description (owner: the encoders).
func genEncode(s *Schema) ([]File, error) {
	return nil, nil
}
