package otlpwire

// The messages above a signal's data have one shape in every signal (see
// proto_decode_envelope.go): the request holds Resource* messages, each
// holds its resource, Scope* messages and schemaUrl, each of those its
// scope, items and schemaUrl. jsonRequest and jsonEnvelope decode that
// shape once for all three signals; the per-signal files name the messages
// and decode their items.
//
// What differs is passed as methods bound to the decoder (d.resource,
// d.scopeSpansMsg), not as functions taking it: a decoder passed to a
// function value escapes to the heap, and it is large.

// jsonRequest decodes data, a whole export request, with d: its one field
// (named name, or snake) into *resources, each from p decoded by resource.
func jsonRequest[R any](d *jsonDecoder, name, snake string, resources *[]*R, p *pool[R], resource func(*R) error) error {
	index := func(key []byte) (int, string) {
		if s := string(key); s == name || s == snake {
			return 0, name
		}
		return -1, ""
	}
	return d.document(func() error {
		return d.message(index, 0, func(int) (err error) {
			*resources, err = jsonList(d, p, resource)
			return err
		})
	})
}

// Fields of an envelope.
const (
	envHeader = iota
	envChildren
	envSchemaURL
)

// envelopeNames are the JSON names of a Resource* or a Scope* message's
// fields: its head's (the resource or the scope) and its items', in
// camelCase and snake_case.
type envelopeNames struct {
	head, items, itemsSnake string
}

func (n *envelopeNames) index(key []byte) (int, string) {
	switch s := string(key); s {
	case n.head:
		return envHeader, n.head
	case n.items, n.itemsSnake:
		return envChildren, n.items
	case "schemaUrl", "schema_url":
		return envSchemaURL, "schemaUrl"
	}
	return -1, ""
}

// jsonEnvelope decodes the Resource* or Scope* message at d.pos, whose
// fields are named by names: its head into *head with decodeHead, its items
// into *items, each from p decoded by item, and its schemaUrl into
// *schemaURL.
func jsonEnvelope[H, C any](d *jsonDecoder, names *envelopeNames, head **H, decodeHead func() (*H, error),
	items *[]*C, p *pool[C], item func(*C) error, schemaURL *string) error {
	return d.message(names.index, 0, func(f int) (err error) {
		switch f {
		case envHeader:
			*head, err = decodeHead()
		case envChildren:
			*items, err = jsonList(d, p, item)
		case envSchemaURL:
			*schemaURL, err = d.str()
		}
		return err
	})
}
