package otlpwire

import (
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
)

// Attributes are most of an OTLP request, and every encoder we know writes
// them exactly as {"key":"k","value":{"stringValue":"v"}}. decodeKeyValue
// and decodeAnyValue (their Quick choice in otlpwire/internal/gen) first try
// to match that shape byte for byte, skipping the general member loop. On anything else (whitespace, other members or value
// types, snake_case, errors) they rewind to the start of the object and take
// the general path, which gives the same result and errors; once a value has
// been decoded, they continue with the general member loop instead of
// rewinding, so no input is decoded twice.

// quickKeyValue decodes a KeyValue that starts {"key":"k","value":, with no
// whitespace, the value being decoded by decodeAnyValueSpare and any further
// members by members with field. done reports whether it decoded the object
// (err is then its error); if not, d.pos is unchanged. It never rewinds
// after decoding the value, so nested values are decoded once.
func (d *jsonDecoder) quickKeyValue(kv *commonpb.KeyValue, field func(int) error) (done bool, err error) {
	const head, mid = `{"key":`, `,"value":`
	start := d.pos
	if d.depth >= maxJSONDepth || !d.skipLiteral(head) {
		return false, nil
	}
	key, ok := d.quickString()
	if !ok || !d.skipLiteral(mid) {
		d.pos = start
		return false, nil
	}
	d.skipWS()
	d.depth++ // the KeyValue, as message counts it
	kv.Key = key
	if !d.null() { // null leaves the value absent, as in message
		x := d.poolSpareAnyValue.new(d)
		kv.Value = &x.msg
		if err := d.decodeAnyValueSpare(&x.msg, &x.spare); err != nil {
			return true, within(err, "value")
		}
	}
	if d.peek() == '}' {
		d.pos++
		d.depth--
		return true, nil
	}
	// Whitespace or more members: continue like message.
	more, err := d.separator('}')
	if err != nil {
		return true, err
	}
	if !more {
		d.depth--
		return true, nil
	}
	return true, d.members(jsonKeyValueIndex, 0, 1<<jsonKeyValueKey|1<<jsonKeyValueValue, field)
}

// quickAnyValue decodes {"stringValue":"s"} with no whitespace into v, its
// wrapper being spare or, if nil, one from the pool, and reports whether it
// did; if not, d.pos is unchanged. Its error is always nil: anything else
// is left to the general path.
func (d *jsonDecoder) quickAnyValue(v *commonpb.AnyValue, spare *commonpb.AnyValue_StringValue, _ func(int) error) (bool, error) {
	const head = `{"stringValue":`
	start := d.pos
	if d.depth >= maxJSONDepth || !d.skipLiteral(head) {
		return false, nil
	}
	s, ok := d.quickString()
	if !ok || d.peek() != '}' {
		d.pos = start
		return false, nil
	}
	d.pos++
	if spare == nil {
		spare = d.poolAnyValueStringValue.new(d)
	}
	spare.StringValue = s
	v.Value = spare
	return true, nil
}

// skipLiteral consumes lit if the input continues with it.
func (d *jsonDecoder) skipLiteral(lit string) bool {
	end := d.pos + len(lit)
	if end > len(d.b) || string(d.b[d.pos:end]) != lit {
		return false
	}
	d.pos = end
	return true
}

// quickString reads a valid string value, reporting false (with d.pos
// unspecified) where str would fail.
func (d *jsonDecoder) quickString() (string, bool) {
	if d.peek() != '"' {
		return "", false
	}
	end, escaped, err := d.scanString(d.pos)
	if err != nil {
		return "", false
	}
	raw := d.b[d.pos+1 : end-1]
	d.pos = end
	if escaped {
		d.buf = unescape(d.buf[:0], raw)
		raw = d.buf
	}
	return d.intern(raw), true
}
