package pipeline

import (
	"unsafe"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// Received span bytes.
//
// Spans pass through otelstep unchanged: the processors act on resources.
// So the protobuf encoder need not re-encode a received ScopeSpans' spans
// (a tenth of the traces path's CPU): it can copy the bytes they arrived
// in. The owned decoder marks the Spans slice it builds with those bytes,
// in the slot past its length, as MarkShared does for attribute slices,
// so the mark survives batching and fan-out without a side table.
//
// The contract: nobody changes a decoded span in place, or the elements of
// its Spans slice, after decoding (a processor that rewrites spans must
// build new Spans slices, which read as unmarked). Sub-slices read as
// unmarked: the header names the one slice it was made for, by its first
// element's address and its length. Appending to a marked slice writes
// over the header's slot, after which it and the original read as
// unmarked, the safe direction.

// rawSpans sits in the slot just past a marked Spans slice's length.
type rawSpans struct {
	span  tracepb.Span // first: the slot points here
	first **tracepb.Span
	n     int
	b     []byte // the spans' field-2 records of the ScopeSpans, tags included
}

// rawMarker identifies a rawSpans' Span by its Status's address.
var rawMarker = &tracepb.Status{}

// RawSpans returns the wire bytes of spans, as repeated field 2 of a
// ScopeSpans (tags and lengths included), if spans is exactly a slice the
// decoder marked; else nil.
func RawSpans(spans []*tracepb.Span) []byte {
	n := len(spans)
	if n == 0 || cap(spans) <= n {
		return nil
	}
	slot := spans[:n+1][n]
	if slot == nil || slot.Status != rawMarker {
		return nil
	}
	h := (*rawSpans)(unsafe.Pointer(slot))
	if h.first != &spans[0] || h.n != n {
		return nil
	}
	return h.b
}

// markRawSpans returns spans in a slice of capacity len+1 whose extra slot
// holds raw (see RawSpans). spans must not be empty.
func markRawSpans(spans []*tracepb.Span, raw []byte) []*tracepb.Span {
	n := len(spans)
	out := make([]*tracepb.Span, n, n+1)
	copy(out, spans)
	h := &rawSpans{first: &out[0], n: n, b: raw}
	h.span.Status = rawMarker
	out[:n+1][n] = &h.span
	return out
}
