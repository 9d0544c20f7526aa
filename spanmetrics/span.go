package spanmetrics

import (
	"math"

	"github.com/otelstep/otelstep/internal/anyvalue"
	"github.com/otelstep/otelstep/otlpwire"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// spanFields is what the connector reads of a span. name may alias the
// batch (a record's) or c.nameBuf (a message's): it is copied when a
// series keeps it.
type spanFields struct {
	name       []byte
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
	c.nameBuf = append(c.nameBuf[:0], sp.GetName()...)
	*sf = spanFields{
		name:  c.nameBuf,
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
// and c.hits (otlpwire.ScanSpan); false if the record is malformed, which
// the receiver's decoder never lets through. FuzzScanSpan holds it to
// fromSpan of the decoded Span.
func (c *Connector) scanSpan(rec []byte, sf *spanFields) bool {
	var s otlpwire.SpanSummary
	if !otlpwire.ScanSpan(rec, &s, c.dimNames, c.vals) {
		*sf = spanFields{}
		return false
	}
	*sf = spanFields{
		name:  s.Name,
		kind:  kindIndex(int32(s.Kind)),
		code:  codeIndex(int32(s.StatusCode)),
		start: s.Start,
		end:   s.End,
	}
	for i, v := range c.vals[:len(c.hits)] {
		c.hits[i] = hit{found: v != nil, wire: v}
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

// appendWireValueKey appends the value key of the AnyValue record b: the
// same bytes as appendValueKey of the message b decodes to.
func appendWireValueKey(dst []byte, b []byte) []byte {
	f := otlpwire.ScanValue(b)
	switch f.Kind {
	case otlpwire.ValueString:
		return protowire.AppendBytes(append(dst, keyString), f.Bytes)
	case otlpwire.ValueBool:
		return append(dst, keyBool, boolByte(f.Bits != 0))
	case otlpwire.ValueInt:
		return protowire.AppendFixed64(append(dst, keyInt), f.Bits)
	case otlpwire.ValueDouble:
		return protowire.AppendFixed64(append(dst, keyDouble), f.Bits)
	case otlpwire.ValueBytes:
		return protowire.AppendBytes(append(dst, keyBytes), f.Bytes)
	case otlpwire.ValueStrindex:
		return protowire.AppendVarint(append(dst, keyStrindex), uint64(int32(f.Bits)))
	case otlpwire.ValueArray, otlpwire.ValueKvlist:
		// Arrays and lists decode and encode again, so that the key does
		// not depend on how the sender encoded them.
		return appendValueKey(dst, wireValue(b))
	}
	return append(dst, keyEmpty)
}

// wireValue decodes the AnyValue record b into a value that shares no
// memory with b (for a series to keep).
func wireValue(b []byte) *commonpb.AnyValue {
	f := otlpwire.ScanValue(b)
	switch f.Kind {
	case otlpwire.ValueString:
		return strValue(string(f.Bytes))
	case otlpwire.ValueBool:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: f.Bits != 0}}
	case otlpwire.ValueInt:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: int64(f.Bits)}}
	case otlpwire.ValueDouble:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: math.Float64frombits(f.Bits)}}
	case otlpwire.ValueBytes:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: append([]byte{}, f.Bytes...)}}
	case otlpwire.ValueStrindex:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValueStrindex{StringValueStrindex: int32(f.Bits)}}
	case otlpwire.ValueArray, otlpwire.ValueKvlist:
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
	s, _ := anyvalue.Scalar(v) // as the collector: "" for others, no service has such a name
	return s
}
