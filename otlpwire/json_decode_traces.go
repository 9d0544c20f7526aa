package otlpwire

import (
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// The resource and scope messages of traces: see json_decode_envelope.go.

var (
	resourceSpansNames = envelopeNames{"resource", "scopeSpans", "scope_spans"}
	scopeSpansNames    = envelopeNames{"scope", "spans", "spans"}
)

func (d *jsonDecoder) resourceSpansMsg(m *tracepb.ResourceSpans) error {
	return jsonEnvelope(d, &resourceSpansNames, &m.Resource, d.resource, &m.ScopeSpans, &d.scopeSpans, d.scopeSpansMsg, &m.SchemaUrl)
}

func (d *jsonDecoder) scopeSpansMsg(m *tracepb.ScopeSpans) error {
	return jsonEnvelope(d, &scopeSpansNames, &m.Scope, d.scope, &m.Spans, &d.spans, d.span, &m.SchemaUrl)
}

// Fields of Span.
const (
	spTraceID = iota
	spSpanID
	spTraceState
	spParentSpanID
	spFlags
	spName
	spKind
	spStartTimeUnixNano
	spEndTimeUnixNano
	spAttributes
	spDroppedAttributesCount
	spEvents
	spDroppedEventsCount
	spLinks
	spDroppedLinksCount
	spStatus
)

func spanField(k []byte) (int, string) {
	switch string(k) {
	case "traceId", "trace_id":
		return spTraceID, "traceId"
	case "spanId", "span_id":
		return spSpanID, "spanId"
	case "traceState", "trace_state":
		return spTraceState, "traceState"
	case "parentSpanId", "parent_span_id":
		return spParentSpanID, "parentSpanId"
	case "flags":
		return spFlags, "flags"
	case "name":
		return spName, "name"
	case "kind":
		return spKind, "kind"
	case "startTimeUnixNano", "start_time_unix_nano":
		return spStartTimeUnixNano, "startTimeUnixNano"
	case "endTimeUnixNano", "end_time_unix_nano":
		return spEndTimeUnixNano, "endTimeUnixNano"
	case "attributes":
		return spAttributes, "attributes"
	case "droppedAttributesCount", "dropped_attributes_count":
		return spDroppedAttributesCount, "droppedAttributesCount"
	case "events":
		return spEvents, "events"
	case "droppedEventsCount", "dropped_events_count":
		return spDroppedEventsCount, "droppedEventsCount"
	case "links":
		return spLinks, "links"
	case "droppedLinksCount", "dropped_links_count":
		return spDroppedLinksCount, "droppedLinksCount"
	case "status":
		return spStatus, "status"
	}
	return -1, ""
}

func (d *jsonDecoder) span(s *tracepb.Span) error {
	return d.message(spanField, 0, func(f int) (err error) {
		switch f {
		case spTraceID:
			s.TraceId, err = d.idValue(TraceIDSize)
		case spSpanID:
			s.SpanId, err = d.idValue(SpanIDSize)
		case spTraceState:
			s.TraceState, err = d.str()
		case spParentSpanID:
			s.ParentSpanId, err = d.idValue(SpanIDSize)
		case spFlags:
			s.Flags, err = d.uint32Value()
		case spName:
			s.Name, err = d.str()
		case spKind:
			var v int32
			v, err = d.enumValue(tracepb.Span_SpanKind_value)
			s.Kind = tracepb.Span_SpanKind(v)
		case spStartTimeUnixNano:
			s.StartTimeUnixNano, err = d.uint64Value()
		case spEndTimeUnixNano:
			s.EndTimeUnixNano, err = d.uint64Value()
		case spAttributes:
			s.Attributes, err = d.attributes()
		case spDroppedAttributesCount:
			s.DroppedAttributesCount, err = d.uint32Value()
		case spEvents:
			s.Events, err = jsonList(d, &d.events, d.event)
		case spDroppedEventsCount:
			s.DroppedEventsCount, err = d.uint32Value()
		case spLinks:
			s.Links, err = jsonList(d, &d.links, d.link)
		case spDroppedLinksCount:
			s.DroppedLinksCount, err = d.uint32Value()
		case spStatus:
			s.Status, err = d.status()
		}
		return err
	})
}

// Fields of Span.Event.
const (
	evTimeUnixNano = iota
	evName
	evAttributes
	evDroppedAttributesCount
)

func eventField(k []byte) (int, string) {
	switch string(k) {
	case "timeUnixNano", "time_unix_nano":
		return evTimeUnixNano, "timeUnixNano"
	case "name":
		return evName, "name"
	case "attributes":
		return evAttributes, "attributes"
	case "droppedAttributesCount", "dropped_attributes_count":
		return evDroppedAttributesCount, "droppedAttributesCount"
	}
	return -1, ""
}

func (d *jsonDecoder) event(e *tracepb.Span_Event) error {
	return d.message(eventField, 0, func(f int) (err error) {
		switch f {
		case evTimeUnixNano:
			e.TimeUnixNano, err = d.uint64Value()
		case evName:
			e.Name, err = d.str()
		case evAttributes:
			e.Attributes, err = d.attributes()
		case evDroppedAttributesCount:
			e.DroppedAttributesCount, err = d.uint32Value()
		}
		return err
	})
}

// Fields of Span.Link.
const (
	lkTraceID = iota
	lkSpanID
	lkTraceState
	lkAttributes
	lkDroppedAttributesCount
	lkFlags
)

func linkField(k []byte) (int, string) {
	switch string(k) {
	case "traceId", "trace_id":
		return lkTraceID, "traceId"
	case "spanId", "span_id":
		return lkSpanID, "spanId"
	case "traceState", "trace_state":
		return lkTraceState, "traceState"
	case "attributes":
		return lkAttributes, "attributes"
	case "droppedAttributesCount", "dropped_attributes_count":
		return lkDroppedAttributesCount, "droppedAttributesCount"
	case "flags":
		return lkFlags, "flags"
	}
	return -1, ""
}

func (d *jsonDecoder) link(l *tracepb.Span_Link) error {
	return d.message(linkField, 0, func(f int) (err error) {
		switch f {
		case lkTraceID:
			l.TraceId, err = d.idValue(TraceIDSize)
		case lkSpanID:
			l.SpanId, err = d.idValue(SpanIDSize)
		case lkTraceState:
			l.TraceState, err = d.str()
		case lkAttributes:
			l.Attributes, err = d.attributes()
		case lkDroppedAttributesCount:
			l.DroppedAttributesCount, err = d.uint32Value()
		case lkFlags:
			l.Flags, err = d.uint32Value()
		}
		return err
	})
}

// Fields of Status.
const (
	stMessage = iota
	stCode
)

func statusField(k []byte) (int, string) {
	switch string(k) {
	case "message":
		return stMessage, "message"
	case "code":
		return stCode, "code"
	}
	return -1, ""
}

func (d *jsonDecoder) status() (*tracepb.Status, error) {
	s := d.statuses.new(d)
	return s, d.message(statusField, 0, func(f int) (err error) {
		switch f {
		case stMessage:
			s.Message, err = d.str()
		case stCode:
			var v int32
			v, err = d.enumValue(tracepb.Status_StatusCode_value)
			s.Code = tracepb.Status_StatusCode(v)
		}
		return err
	})
}
