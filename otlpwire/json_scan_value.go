package otlpwire

import (
	"bytes"
	"encoding/base64"
)

// The other scalar values: bools, enums by name or number, hex trace and
// span ids, and base64 bytes.

// boolValue reads true or false.
func (d *jsonDecoder) boolValue() (bool, error) {
	if d.peek() == 't' && d.literal("true") {
		return true, nil
	}
	if d.peek() == 'f' && d.literal("false") {
		return false, nil
	}
	return false, d.typeError(d.pos, "true or false")
}

// enumValue reads an enum as a number or a value name.
func (d *jsonDecoder) enumValue(names map[string]int32) (int32, error) {
	const want = "an enum name or 32-bit integer"
	start := d.pos
	switch c := d.peek(); {
	case c == '"':
		name, err := d.rawString(want)
		if err != nil {
			return 0, err
		}
		v, ok := names[string(name)]
		if !ok {
			// As the collector does (and protojson without
			// DiscardUnknown): a name the enum does not have is an
			// error, not the default value.
			// The value is not quoted: errors never quote the input.
			return 0, d.fail(start, "unknown enum name: want one of the enum's names or a 32-bit integer")
		}
		return v, nil
	case c == '-' || isDigit(c):
		n, ok := scanNumber(d.b[start:])
		if !ok {
			return 0, d.fail(start, "invalid number")
		}
		d.pos += n
		v, ok := parseInt(d.b[start:d.pos], 32)
		if !ok {
			return 0, d.fail(start, "want "+want)
		}
		return int32(v), nil
	}
	return 0, d.typeError(start, want)
}

// idValue reads a trace or span id of size bytes (TraceIDSize or
// SpanIDSize) in hex (either case), as OTLP/JSON writes them. An empty
// string is an empty id; any other length is refused, as the collector
// refuses it (ValidID).
func (d *jsonDecoder) idValue(size int) ([]byte, error) {
	start := d.pos
	s, err := d.rawString("a hex string")
	if err != nil || len(s) == 0 {
		return nil, err
	}
	if len(s)%2 != 0 || !ValidID(len(s)/2, size) {
		for _, c := range s {
			if _, ok := fromHex(c); !ok {
				return nil, d.fail(start, "not hex")
			}
		}
		return nil, d.fail(start, IDSizeError(len(s), size, true))
	}
	id := d.bytes(len(s) / 2)
	for i := range id {
		hi, ok1 := fromHex(s[2*i])
		lo, ok2 := fromHex(s[2*i+1])
		if !ok1 || !ok2 {
			return nil, d.fail(start, "not hex")
		}
		id[i] = hi<<4 | lo
	}
	return id, nil
}

// bytesValue reads a base64 bytes value exactly as protojson does: standard
// or URL alphabet, padded or not (and, as base64 does, ignoring newlines).
func (d *jsonDecoder) bytesValue() ([]byte, error) {
	start := d.pos
	s, err := d.rawString("a base64 string")
	if err != nil {
		return nil, err
	}
	enc := base64.StdEncoding
	if bytes.ContainsAny(s, "-_") {
		enc = base64.URLEncoding
	}
	if len(s)%4 != 0 {
		enc = enc.WithPadding(base64.NoPadding)
	}
	b := make([]byte, enc.DecodedLen(len(s)))
	n, err := enc.Decode(b, s)
	if err != nil {
		return nil, d.fail(start, "not base64")
	}
	return b[:n], nil
}
