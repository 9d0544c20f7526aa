package otlpwire

import (
	"encoding/binary"

	"google.golang.org/protobuf/encoding/protowire"
)

// ScanSpan and its SpanSummary (generated_proto_scan.go, from the fields
// internal/gen's choices name) read a span record's summary without
// decoding it: span metrics need neither the other attributes nor the
// events and links that SpanDecoder would decode into messages.

// field is one field of a record, as nextField reads it.
type field struct {
	num     protowire.Number
	typ     protowire.Type
	v       uint64 // a varint's, fixed64's or fixed32's value
	payload []byte // a length-delimited field's
}

// nextField reads the field at the start of b and returns it with the rest
// of b; ok is false if b does not start with a whole, valid field. One
// call a field, and one-byte tags and lengths (nearly all of them) read
// inline, rather than protowire's Consume functions for each, which it
// calls otherwise.
func nextField(b []byte) (f field, rest []byte, ok bool) {
	var tag uint64
	if len(b) > 0 && b[0] < 0x80 {
		tag, b = uint64(b[0]), b[1:]
	} else {
		t, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return f, nil, false
		}
		tag, b = t, b[n:]
	}
	f.num, f.typ = protowire.Number(tag>>3), protowire.Type(tag&7)
	if f.num < protowire.MinValidNumber || f.num > protowire.MaxValidNumber {
		return f, nil, false
	}
	switch f.typ {
	case protowire.VarintType:
		if len(b) > 0 && b[0] < 0x80 {
			f.v, b = uint64(b[0]), b[1:]
			break
		}
		v, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return f, nil, false
		}
		f.v, b = v, b[n:]
	case protowire.Fixed64Type:
		if len(b) < 8 {
			return f, nil, false
		}
		f.v, b = binary.LittleEndian.Uint64(b), b[8:]
	case protowire.Fixed32Type:
		if len(b) < 4 {
			return f, nil, false
		}
		f.v, b = uint64(binary.LittleEndian.Uint32(b)), b[4:]
	case protowire.BytesType:
		var l uint64
		if len(b) > 0 && b[0] < 0x80 {
			l, b = uint64(b[0]), b[1:]
		} else {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return f, nil, false
			}
			l, b = v, b[n:]
		}
		if l > uint64(len(b)) {
			return f, nil, false
		}
		f.payload, b = b[:l:l], b[l:]
	default: // groups, long gone from protobuf; skipped whole
		n := protowire.ConsumeFieldValue(f.num, f.typ, b)
		if n < 0 {
			return f, nil, false
		}
		b = b[n:]
	}
	return f, b, true
}

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
	for len(b) > 0 {
		f, rest, ok := nextField(b)
		if !ok {
			return false
		}
		b = rest
		if f.typ == protowire.BytesType {
			switch f.num {
			case 1:
				key = f.payload
			case 2:
				// Two value fields would merge; no sender writes them,
				// and the last one is kept.
				val = f.payload
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
