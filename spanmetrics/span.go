package spanmetrics

import (
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
	return wireValue(h.wire, true)
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

// scanSpan reads a span record (as pipeline.NextRecord returns it) into sf
// and c.hits, reading only the fields it needs, as protobuf would decode
// them (the last of a repeated scalar field wins, status messages merge);
// false if the record is malformed, which the receiver's decoder never
// lets through.
//
// Why not pipeline.SpanDecoder: it decodes every attribute, event and link
// of the span into messages, several times what span metrics need, and a
// quarter of the traces path's CPU is all they may take.
func (c *Connector) scanSpan(rec []byte, sf *spanFields) bool {
	*sf = spanFields{}
	clear(c.hits)
	for len(rec) > 0 {
		num, typ, n := protowire.ConsumeTag(rec)
		if n < 0 {
			return false
		}
		rec = rec[n:]
		switch {
		case num == 5 && typ == protowire.BytesType: // name
			v, m := protowire.ConsumeBytes(rec)
			if m < 0 {
				return false
			}
			sf.name = unsafe.String(unsafe.SliceData(v), len(v))
			rec = rec[m:]
		case num == 6 && typ == protowire.VarintType: // kind
			v, m := protowire.ConsumeVarint(rec)
			if m < 0 {
				return false
			}
			sf.kind = kindIndex(int32(v))
			rec = rec[m:]
		case (num == 7 || num == 8) && typ == protowire.Fixed64Type: // start, end
			v, m := protowire.ConsumeFixed64(rec)
			if m < 0 {
				return false
			}
			if num == 7 {
				sf.start = v
			} else {
				sf.end = v
			}
			rec = rec[m:]
		case num == 9 && typ == protowire.BytesType: // attributes
			v, m := protowire.ConsumeBytes(rec)
			if m < 0 {
				return false
			}
			if len(c.dims) > 0 && !c.scanAttr(v) {
				return false
			}
			rec = rec[m:]
		case num == 15 && typ == protowire.BytesType: // status
			v, m := protowire.ConsumeBytes(rec)
			if m < 0 {
				return false
			}
			if !scanStatus(v, sf) {
				return false
			}
			rec = rec[m:]
		default:
			m := protowire.ConsumeFieldValue(num, typ, rec)
			if m < 0 {
				return false
			}
			rec = rec[m:]
		}
	}
	return true
}

// scanStatus reads a Status record's code into sf: a second status field
// merges into the first, so only a code it has replaces sf's.
func scanStatus(b []byte, sf *spanFields) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		if num == 3 && typ == protowire.VarintType {
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return false
			}
			sf.code = codeIndex(int32(v))
			b = b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return false
		}
		b = b[m:]
	}
	return true
}

// scanAttr reads a KeyValue record into c.hits if a dimension names it and
// no earlier attribute of the span had that name.
func (c *Connector) scanAttr(b []byte) bool {
	var key, val []byte
	hasVal := false
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		if (num == 1 || num == 2) && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return false
			}
			if num == 1 {
				key = v
			} else {
				// Two value fields would merge; no sender writes them,
				// and the last one is kept.
				val, hasVal = v, true
			}
			b = b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return false
		}
		b = b[m:]
	}
	for i := range c.dims {
		if h := &c.hits[i]; !h.found && string(key) == c.dims[i].name {
			h.found, h.wire = true, val
			if !hasVal || val == nil {
				h.wire = []byte{} // an empty value, not "no record"
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
	var f wireField
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return wireField{}
		}
		b = b[n:]
		var m int
		switch {
		case (num == 1 || num == 5 || num == 6 || num == 7) && typ == protowire.BytesType:
			var v []byte
			v, m = protowire.ConsumeBytes(b)
			f = wireField{num: num, payload: v}
		case (num == 2 || num == 3 || num == 8) && typ == protowire.VarintType:
			var v uint64
			v, m = protowire.ConsumeVarint(b)
			f = wireField{num: num, n: v}
		case num == 4 && typ == protowire.Fixed64Type:
			var v uint64
			v, m = protowire.ConsumeFixed64(b)
			f = wireField{num: num, n: v}
		default:
			m = protowire.ConsumeFieldValue(num, typ, b)
		}
		if m < 0 {
			return wireField{}
		}
		b = b[m:]
	}
	return f
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
		return appendValueKey(dst, wireValue(b, false))
	}
	return append(dst, keyEmpty)
}

// wireValue decodes the AnyValue record b. With own, nothing of the result
// shares memory with b (for a series to keep); without, its strings may.
func wireValue(b []byte, own bool) *commonpb.AnyValue {
	f := lastValueField(b)
	switch f.num {
	case 1:
		if own {
			return strValue(string(f.payload))
		}
		return strValue(unsafe.String(unsafe.SliceData(f.payload), len(f.payload)))
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
