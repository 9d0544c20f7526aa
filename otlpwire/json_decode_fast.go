package otlpwire

import (
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
)

// Attributes are most of an OTLP request, and every encoder we know writes
// them exactly as {"key":"k","value":{"stringValue":"v"}}. keyValue and
// anyValue first try to match that shape byte for byte, skipping the
// general member loop. On anything else (whitespace, other members or value
// types, snake_case, errors) they rewind to the start of the object and take
// the general path, which gives the same result and errors; once a value has
// been decoded, they continue with the general member loop instead of
// rewinding, so no input is decoded twice.

// quickKeyValue decodes a KeyValue that starts {"key":"k","value":, with no
// whitespace, the value being decoded by singleAnyValue and any further
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
		if kv.Value, err = d.singleAnyValue(); err != nil {
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
	return true, d.members(keyValueField, 0, 1<<kvKey|1<<kvValue, field)
}

// quickStringValue decodes {"stringValue":"s"} with no whitespace into v
// (see anyValueWith for str) and reports whether it did; if not, d.pos is
// unchanged.
func (d *jsonDecoder) quickStringValue(v *commonpb.AnyValue, str *commonpb.AnyValue_StringValue) bool {
	const head = `{"stringValue":`
	start := d.pos
	if d.depth >= maxJSONDepth || !d.skipLiteral(head) {
		return false
	}
	s, ok := d.quickString()
	if !ok || d.peek() != '}' {
		d.pos = start
		return false
	}
	d.pos++
	v.Value = d.stringValue(s, str)
	return true
}

// stringValue returns the oneof wrapper for a string AnyValue, in str if
// not nil.
func (d *jsonDecoder) stringValue(s string, str *commonpb.AnyValue_StringValue) *commonpb.AnyValue_StringValue {
	if str == nil {
		str = d.strValues.new(d)
	}
	str.StringValue = s
	return str
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
