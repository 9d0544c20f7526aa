package otlpwire

import "google.golang.org/protobuf/encoding/protowire"

// ScanSpan and its SpanSummary (generated_proto_scan.go, from the fields
// internal/gen's choices name) read a span record's summary without
// decoding it: span metrics need neither the other attributes nor the
// events and links that SpanDecoder would decode into messages. They read
// a field at a time with readField (json_encode_records.go), which the
// record writers use too.

// scanAttr reads a KeyValue record's value into vals[i] if keys[i] is its
// key and no earlier attribute of the span had that key.
func scanAttr(b []byte, keys []string, vals [][]byte) bool {
	var key, val []byte
	// Nearly every KeyValue is a short key then a value, nothing else:
	// read that shape inline, and only the key when it is no one's asked
	// for.
	if len(b) > 2 && b[0] == 1<<3|2 && b[1] < 0x80 && int(b[1]) < len(b)-2 {
		key, rest := b[2:2+b[1]], b[2+b[1]:]
		if len(rest) < 2 || rest[0] != 2<<3|2 || rest[1] >= 0x80 || int(rest[1]) != len(rest)-2 {
			goto general
		}
		for i := range keys {
			if vals[i] == nil && string(key) == keys[i] {
				vals[i] = rest[2:] // not nil, if empty
			}
		}
		return true
	}
general:
	for p := 0; p < len(b); {
		num, typ, _, a, z, next := readField(b, p)
		if next < 0 || num < protowire.MinValidNumber || num > protowire.MaxValidNumber {
			return false
		}
		p = next
		if typ == protowire.BytesType {
			switch num {
			case 1:
				key = b[a:z:z]
			case 2:
				// Two value fields would merge; no sender writes them,
				// and the last one is kept.
				val = b[a:z:z]
			}
		}
	}
	for i := range keys {
		if vals[i] == nil && string(key) == keys[i] {
			vals[i] = val
			if val == nil {
				vals[i] = []byte{} // no value: the empty value
			}
		}
	}
	return true
}

// ScannedValue is the value of an AnyValue record, as ScanValue reads it.
type ScannedValue struct {
	Kind ValueKind
	// Bytes is a string's or bytes' value, or an array's or kvlist's
	// encoded message, aliasing the record. Several array (or kvlist)
	// fields in a row merge in protobuf: Bytes is only the last one's, so
	// decode the whole record for those.
	Bytes []byte
	// Bits is a bool's (non-zero: true), an int's (two's complement), a
	// double's (math.Float64bits) or a string index's (as int32) value.
	Bits uint64
}
