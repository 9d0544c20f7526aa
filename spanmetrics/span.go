package spanmetrics

import (
	"encoding/binary"
	"math"
	"strconv"
	"unsafe"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// spanFields is what the connector reads of a span. name may alias the
// batch: it is copied when a series keeps it.
type spanFields struct {
	name       string
	kind, code uint8 // indexes into kindNames and codeNames
	start, end uint64
}

// hit is a span's attribute named by a dimension: its value as a record's
// AnyValue bytes (wire, from a span record) or as a message (msg).
type hit struct {
	found bool
	wire  []byte
	msg   *commonpb.AnyValue
}

// appendKey appends the hit's value key (appendValueKey).
func (h *hit) appendKey(dst []byte) []byte {
	if h.msg != nil || h.wire == nil {
		return appendValueKey(dst, h.msg)
	}
	return appendWireValueKey(dst, h.wire)
}

// value returns a copy of the hit's value that shares no memory with the
// batch.
func (h *hit) value() *commonpb.AnyValue {
	if h.msg != nil || h.wire == nil {
		return cloneValue(h.msg)
	}
	return wireValue(h.wire)
}

// fromSpan reads a Span message into sf and c.hits.
func (c *Connector) fromSpan(sp *tracepb.Span, sf *spanFields) {
	*sf = spanFields{
		name:  sp.GetName(),
		kind:  kindIndex(int32(sp.GetKind())),
		code:  codeIndex(int32(sp.GetStatus().GetCode())),
		start: sp.GetStartTimeUnixNano(),
		end:   sp.GetEndTimeUnixNano(),
	}
	if len(c.dims) == 0 {
		return
	}
	clear(c.hits)
	for _, kv := range sp.GetAttributes() {
		for i := range c.dims {
			if h := &c.hits[i]; !h.found && kv.GetKey() == c.dims[i].name {
				h.found, h.msg = true, kv.GetValue()
				if h.msg == nil {
					h.msg = &commonpb.AnyValue{}
				}
			}
		}
	}
}

// scanSpan reads a span record (as pipeline.Records.All yields it) into sf
// and c.hits, reading only the fields it needs, as protobuf would decode
// them (the last of a repeated scalar field wins, status messages merge);
// false if the record is malformed, which the receiver's decoder never
// lets through.
//
// Why not otlpwire.SpanDecoder: it decodes every attribute, event and link
// of the span into messages, which span metrics do not need, and took 2.3
// times as long on the load generator's spans (8 attributes) as this, side
// by side; span metrics may take a quarter of the traces path's CPU at most.
// FuzzScanSpan holds this to protobuf's decoding.
func (c *Connector) scanSpan(rec []byte, sf *spanFields) bool {
	*sf = spanFields{}
	for i := range c.hits {
		c.hits[i].found = false
	}
	for p := 0; p < len(rec); {
		// One-byte tags (fields 1 to 15) and lengths inline, as the
		// receiver's decoder reads them; anything else through nextField.
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
		case f.num == 5 && f.typ == protowire.BytesType: // name
			sf.name = unsafe.String(unsafe.SliceData(f.payload), len(f.payload))
		case f.num == 6 && f.typ == protowire.VarintType: // kind
			sf.kind = kindIndex(int32(f.v))
		case f.num == 7 && f.typ == protowire.Fixed64Type:
			sf.start = f.v
		case f.num == 8 && f.typ == protowire.Fixed64Type:
			sf.end = f.v
		case f.num == 9 && f.typ == protowire.BytesType: // attributes
			if len(c.dims) > 0 && !c.scanAttr(f.payload) {
				return false
			}
		case f.num == 15 && f.typ == protowire.BytesType: // status
			if !scanStatus(f.payload, sf) {
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
// otherwise, were half of the connector's time.
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

// scanStatus reads a Status record's code into sf: a second status field
// merges into the first, so only a code it has replaces sf's.
func scanStatus(b []byte, sf *spanFields) bool {
	for len(b) > 0 {
		f, rest, ok := nextField(b)
		if !ok {
			return false
		}
		b = rest
		if f.num == 3 && f.typ == protowire.VarintType {
			sf.code = codeIndex(int32(f.v))
		}
	}
	return true
}

// scanAttr reads a KeyValue record into c.hits if a dimension names it and
// no earlier attribute of the span had that name.
func (c *Connector) scanAttr(b []byte) bool {
	var key, val []byte
	// Nearly every KeyValue is a short key then a value, nothing else:
	// read that shape inline, and only the key when it is no dimension's.
	if len(b) > 2 && b[0] == 1<<3|2 && b[1] < 0x80 && int(b[1]) < len(b)-2 {
		key, rest := b[2:2+b[1]], b[2+b[1]:]
		if len(rest) < 2 || rest[0] != 2<<3|2 || rest[1] >= 0x80 || int(rest[1]) != len(rest)-2 {
			goto general
		}
		for i := range c.dims {
			if h := &c.hits[i]; !h.found && string(key) == c.dims[i].name {
				h.found, h.wire, h.msg = true, rest[2:], nil
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
	for i := range c.dims {
		if h := &c.hits[i]; !h.found && string(key) == c.dims[i].name {
			h.found, h.wire, h.msg = true, val, nil
			if val == nil {
				h.wire = []byte{} // no value: the empty value, not a message
			}
		}
	}
	return true
}

// Value keys: the bytes of a value in series and resource keys. A value's
// key is the same whether it comes from a message or a record; values of
// different types have different keys; a key never starts with 0 (which
// marks a dimension without a value) and is self-delimiting, so keys can be
// concatenated.
const (
	keyEmpty    = 'n'
	keyString   = 's'
	keyBool     = 'b'
	keyInt      = 'i'
	keyDouble   = 'd'
	keyBytes    = 'y'
	keyArray    = 'a'
	keyKvlist   = 'k'
	keyStrindex = 'x'
)

// appendValueKey appends the value key of v (nil: the empty value).
func appendValueKey(dst []byte, v *commonpb.AnyValue) []byte {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return protowire.AppendString(append(dst, keyString), x.StringValue)
	case *commonpb.AnyValue_BoolValue:
		return append(dst, keyBool, boolByte(x.BoolValue))
	case *commonpb.AnyValue_IntValue:
		return protowire.AppendFixed64(append(dst, keyInt), uint64(x.IntValue))
	case *commonpb.AnyValue_DoubleValue:
		return protowire.AppendFixed64(append(dst, keyDouble), math.Float64bits(x.DoubleValue))
	case *commonpb.AnyValue_BytesValue:
		return protowire.AppendBytes(append(dst, keyBytes), x.BytesValue)
	case *commonpb.AnyValue_ArrayValue:
		// Rare in a dimension: the allocation is not worth avoiding.
		b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(x.ArrayValue)
		return protowire.AppendBytes(append(dst, keyArray), b)
	case *commonpb.AnyValue_KvlistValue:
		b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(x.KvlistValue)
		return protowire.AppendBytes(append(dst, keyKvlist), b)
	case *commonpb.AnyValue_StringValueStrindex:
		return protowire.AppendVarint(append(dst, keyStrindex), uint64(x.StringValueStrindex))
	}
	return append(dst, keyEmpty)
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// wireField is the field of an AnyValue record that holds its value: the
// last one of the oneof, as protobuf decodes it.
type wireField struct {
	num     protowire.Number
	payload []byte // length-delimited fields
	n       uint64 // varint and fixed64 fields
}

// lastValueField returns the value field of the AnyValue record b; num 0
// for an empty (or malformed) one.
func lastValueField(b []byte) wireField {
	var w wireField
	for len(b) > 0 {
		f, rest, ok := nextField(b)
		if !ok {
			return wireField{}
		}
		b = rest
		switch {
		case (f.num == 1 || f.num == 5 || f.num == 6 || f.num == 7) && f.typ == protowire.BytesType:
			w = wireField{num: f.num, payload: f.payload}
		case (f.num == 2 || f.num == 3 || f.num == 8) && f.typ == protowire.VarintType,
			f.num == 4 && f.typ == protowire.Fixed64Type:
			w = wireField{num: f.num, n: f.v}
		}
	}
	return w
}

// appendWireValueKey appends the value key of the AnyValue record b: the
// same bytes as appendValueKey of the message b decodes to.
func appendWireValueKey(dst []byte, b []byte) []byte {
	f := lastValueField(b)
	switch f.num {
	case 1:
		return protowire.AppendBytes(append(dst, keyString), f.payload)
	case 2:
		return append(dst, keyBool, boolByte(f.n != 0))
	case 3:
		return protowire.AppendFixed64(append(dst, keyInt), f.n)
	case 4:
		return protowire.AppendFixed64(append(dst, keyDouble), f.n)
	case 7:
		return protowire.AppendBytes(append(dst, keyBytes), f.payload)
	case 8:
		return protowire.AppendVarint(append(dst, keyStrindex), uint64(int32(f.n)))
	case 5, 6:
		// Arrays and lists decode and encode again, so that the key does
		// not depend on how the sender encoded them.
		return appendValueKey(dst, wireValue(b))
	}
	return append(dst, keyEmpty)
}

// wireValue decodes the AnyValue record b into a value that shares no
// memory with b (for a series to keep).
func wireValue(b []byte) *commonpb.AnyValue {
	f := lastValueField(b)
	switch f.num {
	case 1:
		return strValue(string(f.payload))
	case 2:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: f.n != 0}}
	case 3:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: int64(f.n)}}
	case 4:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: math.Float64frombits(f.n)}}
	case 7:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: append([]byte{}, f.payload...)}}
	case 8:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValueStrindex{StringValueStrindex: int32(f.n)}}
	case 5, 6:
		// proto.Unmarshal copies strings and bytes: the result is owned.
		// A record the receiver's decoder checked always decodes; another
		// one that does not is kept as the empty value.
		v := new(commonpb.AnyValue)
		if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, v); err != nil {
			return &commonpb.AnyValue{}
		}
		return v
	}
	return &commonpb.AnyValue{}
}

// valueString is the string form of a scalar value, for service.name.
func valueString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	}
	return "" // as the collector: no service has such a name
}
