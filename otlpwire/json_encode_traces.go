package otlpwire

import (
	"github.com/otelstep/otelstep/pipeline"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

func appendResourceSpans(b []byte, rs *pipeline.ResourceSpans, skip []string) []byte {
	b = append(b, '{')
	if rs == nil {
		return append(b, '}')
	}
	first := true
	if rs.Resource != nil {
		b = key(b, &first, "resource")
		b = appendResource(b, rs.Resource, skip)
	}
	b = fieldList(b, &first, "scopeSpans", rs.ScopeSpans, appendScopeSpans)
	b = fieldString(b, &first, "schemaUrl", rs.SchemaURL)
	return append(b, '}')
}

func appendScopeSpans(b []byte, ss *pipeline.ScopeSpans) []byte {
	b = append(b, '{')
	if ss == nil {
		return append(b, '}')
	}
	first := true
	if ss.Scope != nil {
		b = key(b, &first, "scope")
		b = appendScope(b, ss.Scope)
	}
	b = fieldItems(b, &first, "spans", ss.Spans, ss.Records, appendSpanRecord, &spanDecoders, appendSpan)
	b = fieldString(b, &first, "schemaUrl", ss.SchemaURL)
	return append(b, '}')
}

func appendSpan(b []byte, s *tracepb.Span) []byte {
	b = append(b, '{')
	if s == nil {
		return append(b, '}')
	}
	first := true
	b = fieldHex(b, &first, "traceId", s.TraceId)
	b = fieldHex(b, &first, "spanId", s.SpanId)
	b = fieldString(b, &first, "traceState", s.TraceState)
	b = fieldHex(b, &first, "parentSpanId", s.ParentSpanId)
	b = fieldUint32(b, &first, "flags", s.Flags)
	b = fieldString(b, &first, "name", s.Name)
	b = fieldInt32(b, &first, "kind", int32(s.Kind))
	b = fieldUint64(b, &first, "startTimeUnixNano", s.StartTimeUnixNano)
	b = fieldUint64(b, &first, "endTimeUnixNano", s.EndTimeUnixNano)
	b = fieldAttrs(b, &first, "attributes", s.Attributes, nil)
	b = fieldUint32(b, &first, "droppedAttributesCount", s.DroppedAttributesCount)
	if len(s.Events) > 0 {
		b = key(b, &first, "events")
		b = append(b, '[')
		for i, e := range s.Events {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '{')
			if e != nil {
				f := true
				b = fieldUint64(b, &f, "timeUnixNano", e.TimeUnixNano)
				b = fieldString(b, &f, "name", e.Name)
				b = fieldAttrs(b, &f, "attributes", e.Attributes, nil)
				b = fieldUint32(b, &f, "droppedAttributesCount", e.DroppedAttributesCount)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = fieldUint32(b, &first, "droppedEventsCount", s.DroppedEventsCount)
	if len(s.Links) > 0 {
		b = key(b, &first, "links")
		b = append(b, '[')
		for i, l := range s.Links {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '{')
			if l != nil {
				f := true
				b = fieldHex(b, &f, "traceId", l.TraceId)
				b = fieldHex(b, &f, "spanId", l.SpanId)
				b = fieldString(b, &f, "traceState", l.TraceState)
				b = fieldAttrs(b, &f, "attributes", l.Attributes, nil)
				b = fieldUint32(b, &f, "droppedAttributesCount", l.DroppedAttributesCount)
				b = fieldUint32(b, &f, "flags", l.Flags)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = fieldUint32(b, &first, "droppedLinksCount", s.DroppedLinksCount)
	if s.Status != nil {
		b = key(b, &first, "status")
		b = append(b, '{')
		f := true
		b = fieldString(b, &f, "message", s.Status.Message)
		b = fieldInt32(b, &f, "code", int32(s.Status.Code))
		b = append(b, '}')
	}
	return append(b, '}')
}
