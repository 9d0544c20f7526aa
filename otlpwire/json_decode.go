package otlpwire

// The decoders are written out per message rather than driven by protobuf
// reflection: protojson spends most of its time in reflection and
// allocation. The per-message code is generated from the OTLP descriptors
// (generated_json_decode.go, by otlpwire/internal/gen): each message has an
// index function mapping both JSON spellings of a field name to a small
// field number and the canonical name (for error paths), and a decode
// method that fills the generated struct with the scanner's primitives
// (json_scan*.go). What is written by hand is that, the member loop below,
// the pools (json_decode_pool.go) and the fast paths (json_decode_fast.go).

// document decodes the whole input as one value with decode: whitespace
// around it is allowed, anything else after it is an error. (Each signal's
// entry point, DecodeTraces and the others in generated_api.go, calls it
// with its request's decode method, directly: called through a function
// value, the decoder would escape to the heap.)
func (d *jsonDecoder) document(decode func() error) error {
	d.skipWS()
	if err := decode(); err != nil {
		return err
	}
	d.skipWS()
	if d.pos != len(d.b) {
		return d.fail(d.pos, "unexpected data after the top-level object")
	}
	return nil
}

// unknownField names the members skipped as unknown in error paths: their
// names come from the input and might be anything.
const unknownField = "(unknown field)"

// message decodes a JSON object as a protobuf message. index maps a member
// name to a field number below 32 and its canonical name, or -1 for
// unknown members, which are skipped. oneof has a bit set for each field in
// the message's oneof. field decodes the value of field f at d.pos.
//
// Like protojson it rejects a field given twice (under either name) and two
// members of a oneof, and treats null as an absent field: null does not
// count towards the oneof, but still counts as the field's one occurrence.
func (d *jsonDecoder) message(index func([]byte) (int, string), oneof uint32, field func(f int) error) error {
	start := d.pos
	if d.peek() != '{' {
		return d.typeError(start, "an object")
	}
	if d.depth++; d.depth > maxJSONDepth {
		return d.fail(start, "nesting too deep")
	}
	d.pos++
	d.skipWS()
	if d.peek() == '}' {
		d.pos++
		d.depth--
		return nil
	}
	return d.members(index, oneof, 0, field)
}

// members decodes the members of an object that message has opened, from
// d.pos at a member name to the closing '}'. seen holds the fields already
// decoded (the fast paths start here after decoding some themselves).
func (d *jsonDecoder) members(index func([]byte) (int, string), oneof, seen uint32, field func(f int) error) error {
	oneofSet := oneof&seen != 0
	for {
		keyOff := d.pos
		k, err := d.key()
		if err != nil {
			return err
		}
		f, name := index(k)
		switch {
		case f < 0:
			if err := d.skip(maxJSONDepth - d.depth); err != nil {
				return within(err, unknownField)
			}
		case seen&(1<<f) != 0:
			return within(d.fail(keyOff, "duplicate field"), name)
		default:
			seen |= 1 << f
			if d.null() {
				break
			}
			if oneof&(1<<f) != 0 {
				if oneofSet {
					return within(d.fail(keyOff, "a second field of a oneof"), name)
				}
				oneofSet = true
			}
			if err := field(f); err != nil {
				return within(err, name)
			}
		}
		more, err := d.separator('}')
		if err != nil {
			return err
		}
		if !more {
			d.depth--
			return nil
		}
	}
}
