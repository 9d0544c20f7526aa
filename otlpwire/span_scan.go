package otlpwire

import (
	"encoding/binary"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
)

// SpanSummary is what ScanSpan reads of a span record: the fields span
// metrics are made of.
type SpanSummary struct {
	// Name aliases the record: a caller that keeps it copies it.
	Name       []byte
	Kind       tracepb.Span_SpanKind
	StatusCode tracepb.Status_StatusCode // of the status field, if any
	Start, End uint64                    // start_time_unix_nano, end_time_unix_nano
}

// ScanSpan reads the span record rec (a Span message's encoding, as
// pipeline.Records.All yields it) into s, and for each keys[i] the value of
// the span's first attribute with that key into vals[i] (len(vals) >=
// len(keys)): the attribute's AnyValue record, aliasing rec; nil if no
// attribute has the key, empty but not nil for an attribute without a
// value. Attributes of events and links are not the span's.
//
// It reads only these fields, as proto.Unmarshal would decode them into a
// Span: the last of a repeated scalar field wins, and status messages
// merge, so a later one without a code keeps the code. It is false if rec
// is not a sequence of whole, valid fields; a record proto.Unmarshal
// decodes is always read (FuzzScanSpan). It does not check what it does
// not read (UTF-8, ids' lengths): the receivers' decoder checked the
// records it kept.
//
// Why not SpanDecoder: it decodes every attribute, event and link of the
// span into messages, which span metrics do not need; on the load
// generator's spans (8 attributes) that took more than twice as long.
func ScanSpan(rec []byte, s *SpanSummary, keys []string, vals [][]byte) bool {
	*s = SpanSummary{}
	vals = vals[:len(keys)]
	clear(vals)
	for p := 0; p < len(rec); {
		// One-byte tags (fields 1 to 15) and lengths inline, as the
		// receivers' decoder reads them; anything else through
		// nextField.
		tag := rec[p]
		var f field
		switch {
		case tag&7 == 2 && tag >= 1<<3 && tag < 0x80 && p+1 < len(rec) && rec[p+1] < 0x80:
			a := p + 2
			z := a + int(rec[p+1])
			if z > len(rec) {
				return false
			}
			f = field{num: protowire.Number(tag >> 3), typ: protowire.BytesType, payload: rec[a:z:z]}
			p = z
		case tag&7 == 1 && tag >= 1<<3 && tag < 0x80 && p+9 <= len(rec):
			f = field{num: protowire.Number(tag >> 3), typ: protowire.Fixed64Type, v: binary.LittleEndian.Uint64(rec[p+1:])}
			p += 9
		default:
			var rest []byte
			var ok bool
			if f, rest, ok = nextField(rec[p:]); !ok {
				return false
			}
			p = len(rec) - len(rest)
		}
		switch {
		case f.num == 5 && f.typ == protowire.BytesType:
			s.Name = f.payload
		case f.num == 6 && f.typ == protowire.VarintType:
			s.Kind = tracepb.Span_SpanKind(int32(f.v))
		case f.num == 7 && f.typ == protowire.Fixed64Type:
			s.Start = f.v
		case f.num == 8 && f.typ == protowire.Fixed64Type:
			s.End = f.v
		case f.num == 9 && f.typ == protowire.BytesType:
			if len(keys) > 0 && !scanAttr(f.payload, keys, vals) {
				return false
			}
		case f.num == 15 && f.typ == protowire.BytesType:
			if !scanStatus(f.payload, s) {
				return false
			}
		}
	}
	return true
}

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
// inline: protowire's Consume functions for each, which this does
// otherwise, were half of span metrics' time.
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

// scanStatus reads a Status record's code into s: a second status field
// merges into the first, so only a code it has replaces s's.
func scanStatus(b []byte, s *SpanSummary) bool {
	for len(b) > 0 {
		f, rest, ok := nextField(b)
		if !ok {
			return false
		}
		b = rest
		if f.num == 3 && f.typ == protowire.VarintType {
			s.StatusCode = tracepb.Status_StatusCode(int32(f.v))
		}
	}
	return true
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

// ValueKind is the member of an AnyValue's value oneof, numbered as its
// field.
type ValueKind uint8

// The kinds of AnyValue (ValueEmpty: none set).
const (
	ValueEmpty    ValueKind = 0
	ValueString   ValueKind = 1
	ValueBool     ValueKind = 2
	ValueInt      ValueKind = 3
	ValueDouble   ValueKind = 4
	ValueArray    ValueKind = 5
	ValueKvlist   ValueKind = 6
	ValueBytes    ValueKind = 7
	ValueStrindex ValueKind = 8
)

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

// ScanValue reads the value of the AnyValue record b (as ScanSpan yields
// it): the last field of the oneof, as proto.Unmarshal decodes it. A
// malformed record reads as the empty value.
func ScanValue(b []byte) ScannedValue {
	var w ScannedValue
	for len(b) > 0 {
		f, rest, ok := nextField(b)
		if !ok {
			return ScannedValue{}
		}
		b = rest
		switch {
		case (f.num == 1 || f.num == 5 || f.num == 6 || f.num == 7) && f.typ == protowire.BytesType:
			w = ScannedValue{Kind: ValueKind(f.num), Bytes: f.payload}
		case (f.num == 2 || f.num == 3 || f.num == 8) && f.typ == protowire.VarintType,
			f.num == 4 && f.typ == protowire.Fixed64Type:
			w = ScannedValue{Kind: ValueKind(f.num), Bits: f.v}
		}
	}
	return w
}
