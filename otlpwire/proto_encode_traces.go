package otlpwire

import (
	"slices"

	"github.com/otelstep/otelstep/pipeline"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
)

// AppendTracesRequest appends the encoding of an ExportTraceServiceRequest
// holding rss to dst, with the same two-pass scheme as AppendMetricsRequest: the
// generic proto.Marshal of a batch of spans was a quarter of the OTLP
// traces ingest path's CPU (otelstep bench otlp --cpuprofile). Unknown
// fields of the input messages are not written, as for metrics. The output
// decodes to a message proto.Equal to the input (proto_encode_traces_test.go).
func (e *ProtoEncoder) AppendTracesRequest(dst []byte, rss []*pipeline.ResourceSpans) []byte {
	e.reset()
	total := 0
	for _, rs := range rss {
		total += lenField(1, e.sizeResourceSpans(rs))
	}
	dst = slices.Grow(dst, total) // one allocation at most: the size pass knows the length
	for _, rs := range rss {
		dst = e.msg(dst, 1)
		dst = e.appendResourceSpans(dst, rs)
	}
	return dst
}

func bytesSize(num protowire.Number, b []byte) int {
	if len(b) == 0 {
		return 0
	}
	return lenField(num, len(b))
}

func appendBytes(dst []byte, num protowire.Number, b []byte) []byte {
	if len(b) == 0 {
		return dst
	}
	dst = appendTag(dst, num, protowire.BytesType)
	return protowire.AppendBytes(dst, b)
}

func fixed32Size(num protowire.Number, v uint32) int {
	if v == 0 {
		return 0
	}
	return protowire.SizeTag(num) + 4
}

func appendFixed32(dst []byte, num protowire.Number, v uint32) []byte {
	if v == 0 {
		return dst
	}
	dst = appendTag(dst, num, protowire.Fixed32Type)
	return protowire.AppendFixed32(dst, v)
}

// enumSize and appendEnum write an enum as protobuf does: an int32,
// sign-extended to 64 bits.
func enumSize(num protowire.Number, v int32) int { return varintSize(num, uint64(int64(v))) }

func appendEnum(dst []byte, num protowire.Number, v int32) []byte {
	return appendVarint(dst, num, uint64(int64(v)))
}

func (e *ProtoEncoder) sizeResourceSpans(rs *pipeline.ResourceSpans) int {
	idx := e.mark()
	n := 0
	if rs.Resource != nil {
		n += lenField(1, e.sizeResource(rs.Resource))
	}
	for _, ss := range rs.ScopeSpans {
		n += lenField(2, e.sizeScopeSpans(ss))
	}
	n += strSize(3, rs.SchemaURL)
	e.sizes[idx] = n
	return n
}

func (e *ProtoEncoder) appendResourceSpans(dst []byte, rs *pipeline.ResourceSpans) []byte {
	if rs.Resource != nil {
		dst = e.msg(dst, 1)
		dst = e.appendResource(dst, rs.Resource)
	}
	for _, ss := range rs.ScopeSpans {
		dst = e.msg(dst, 2)
		dst = e.appendScopeSpans(dst, ss)
	}
	return appendStr(dst, 3, rs.SchemaURL)
}

func (e *ProtoEncoder) sizeScopeSpans(ss *pipeline.ScopeSpans) int {
	idx := e.mark()
	n := 0
	if ss.Scope != nil {
		n += lenField(1, e.sizeScope(ss.Scope))
	}
	for _, sp := range ss.Spans {
		n += lenField(2, e.sizeSpan(sp))
	}
	n += len(ss.Records) // received spans, as they came
	n += strSize(3, ss.SchemaURL)
	e.sizes[idx] = n
	return n
}

func (e *ProtoEncoder) appendScopeSpans(dst []byte, ss *pipeline.ScopeSpans) []byte {
	if ss.Scope != nil {
		dst = e.msg(dst, 1)
		dst = e.appendScope(dst, ss.Scope)
	}
	for _, sp := range ss.Spans {
		dst = e.msg(dst, 2)
		dst = e.appendSpan(dst, sp)
	}
	dst = append(dst, ss.Records...)
	return appendStr(dst, 3, ss.SchemaURL)
}

func (e *ProtoEncoder) sizeSpan(s *tracepb.Span) int {
	idx := e.mark()
	n := bytesSize(1, s.TraceId) + bytesSize(2, s.SpanId) + strSize(3, s.TraceState) + bytesSize(4, s.ParentSpanId) +
		strSize(5, s.Name) + enumSize(6, int32(s.Kind)) +
		fixed64Size(7, s.StartTimeUnixNano) + fixed64Size(8, s.EndTimeUnixNano) +
		e.sizeKeyValues(9, s.Attributes) + varintSize(10, uint64(s.DroppedAttributesCount))
	for _, ev := range s.Events {
		eidx := e.mark()
		m := fixed64Size(1, ev.TimeUnixNano) + strSize(2, ev.Name) + e.sizeKeyValues(3, ev.Attributes) + varintSize(4, uint64(ev.DroppedAttributesCount))
		e.sizes[eidx] = m
		n += lenField(11, m)
	}
	n += varintSize(12, uint64(s.DroppedEventsCount))
	for _, l := range s.Links {
		lidx := e.mark()
		m := bytesSize(1, l.TraceId) + bytesSize(2, l.SpanId) + strSize(3, l.TraceState) +
			e.sizeKeyValues(4, l.Attributes) + varintSize(5, uint64(l.DroppedAttributesCount)) + fixed32Size(6, l.Flags)
		e.sizes[lidx] = m
		n += lenField(13, m)
	}
	n += varintSize(14, uint64(s.DroppedLinksCount))
	if st := s.Status; st != nil {
		n += lenField(15, strSize(2, st.Message)+enumSize(3, int32(st.Code)))
	}
	n += fixed32Size(16, s.Flags)
	e.sizes[idx] = n
	return n
}

func (e *ProtoEncoder) appendSpan(dst []byte, s *tracepb.Span) []byte {
	dst = appendBytes(dst, 1, s.TraceId)
	dst = appendBytes(dst, 2, s.SpanId)
	dst = appendStr(dst, 3, s.TraceState)
	dst = appendBytes(dst, 4, s.ParentSpanId)
	dst = appendStr(dst, 5, s.Name)
	dst = appendEnum(dst, 6, int32(s.Kind))
	dst = appendFixed64(dst, 7, s.StartTimeUnixNano)
	dst = appendFixed64(dst, 8, s.EndTimeUnixNano)
	dst = e.appendKeyValues(dst, 9, s.Attributes)
	dst = appendVarint(dst, 10, uint64(s.DroppedAttributesCount))
	for _, ev := range s.Events {
		dst = e.msg(dst, 11)
		dst = appendFixed64(dst, 1, ev.TimeUnixNano)
		dst = appendStr(dst, 2, ev.Name)
		dst = e.appendKeyValues(dst, 3, ev.Attributes)
		dst = appendVarint(dst, 4, uint64(ev.DroppedAttributesCount))
	}
	dst = appendVarint(dst, 12, uint64(s.DroppedEventsCount))
	for _, l := range s.Links {
		dst = e.msg(dst, 13)
		dst = appendBytes(dst, 1, l.TraceId)
		dst = appendBytes(dst, 2, l.SpanId)
		dst = appendStr(dst, 3, l.TraceState)
		dst = e.appendKeyValues(dst, 4, l.Attributes)
		dst = appendVarint(dst, 5, uint64(l.DroppedAttributesCount))
		dst = appendFixed32(dst, 6, l.Flags)
	}
	dst = appendVarint(dst, 14, uint64(s.DroppedLinksCount))
	if st := s.Status; st != nil {
		dst = appendTag(dst, 15, protowire.BytesType)
		dst = appendUvarint(dst, uint64(strSize(2, st.Message)+enumSize(3, int32(st.Code))))
		dst = appendStr(dst, 2, st.Message)
		dst = appendEnum(dst, 3, int32(st.Code))
	}
	return appendFixed32(dst, 16, s.Flags)
}
