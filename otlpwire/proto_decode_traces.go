package otlpwire

import (
	"github.com/otelstep/otelstep/pipeline"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// ExportTraceServiceRequest and everything under it; see proto_decode.go.
// Depths: request 1, ResourceSpans 2, Resource and ScopeSpans 3, Scope and
// Span 4, Event, Link and Status 5.

var tracesRequest = requestShape[pipeline.ResourceSpans]{
	fields:    resourceSpansRequestFields,
	resources: func(d *decoder) *list[pipeline.ResourceSpans] { return &d.rss },
	resource:  (*decoder).resourceSpans,
}

func (d *decoder) traces() ([]*pipeline.ResourceSpans, *DecodeError) {
	// The spans, nearly all of the body, are kept as records, not decoded
	// into d's slabs: extrapolating the few resource and scope messages
	// over the whole body would size chunks for thousands (a 600 KB
	// attribute chunk per request). n = 0 turns the extrapolation off;
	// chunks then grow with use.
	d.n = 0
	return tracesRequest.decode(d)
}

var resourceSpansShape = envelopeShape[resourcepb.Resource, pipeline.ScopeSpans]{
	fields: resourceSpansFields,
	head:   (*decoder).resourceField,
	items:  func(d *decoder) *list[pipeline.ScopeSpans] { return &d.sss },
	item:   (*decoder).scopeSpans,
}

func (d *decoder) resourceSpans(m *pipeline.ResourceSpans, p, end int) (e *DecodeError) {
	m.ScopeSpans, e = resourceSpansShape.decode(d, p, end, &m.Resource, m.ScopeSpans, &m.SchemaURL)
	return e
}

var scopeSpansShape = scopeRecords{fields: scopeSpansFields, check: (*decoder).checkSpan}

func (d *decoder) scopeSpans(m *pipeline.ScopeSpans, p, end int) (e *DecodeError) {
	m.Records, e = scopeSpansShape.decode(d, p, end, &m.Scope, &m.SchemaURL)
	return e
}

func (d *decoder) span(m *tracepb.Span, p, end int) *DecodeError {
	kvMark, evMark, lkMark := d.kvs.mark(), d.events.mark(), d.links.mark()
	for p < end {
		tag, q := uint64(d.b[p]), p+1
		var e *DecodeError
		if tag-8 >= 0x80-8 { // not a one-byte tag (field 1 to 15)
			if tag, q, e = d.tagSlow(p, end); e != nil {
				return e
			}
		}
		switch tag {
		case 1<<3 | wtLen:
			if m.TraceId, p, e = d.id(q, end, TraceIDSize); e != nil {
				return e.in("trace_id")
			}
		case 2<<3 | wtLen:
			if m.SpanId, p, e = d.id(q, end, SpanIDSize); e != nil {
				return e.in("span_id")
			}
		case 3<<3 | wtLen:
			if m.TraceState, p, e = d.str(q, end); e != nil {
				return e.in("trace_state")
			}
		case 4<<3 | wtLen:
			if m.ParentSpanId, p, e = d.id(q, end, SpanIDSize); e != nil {
				return e.in("parent_span_id")
			}
		case 5<<3 | wtLen:
			if m.Name, p, e = d.str(q, end); e != nil {
				return e.in("name")
			}
		case 6<<3 | wtVarint:
			v, z, e := d.varint(q, end)
			if e != nil {
				return e.in("kind")
			}
			m.Kind, p = tracepb.Span_SpanKind(int32(v)), z
		case 7<<3 | wtI64:
			if m.StartTimeUnixNano, p, e = d.fixed64(q, end); e != nil {
				return e.in("start_time_unix_nano")
			}
		case 8<<3 | wtI64:
			if m.EndTimeUnixNano, p, e = d.fixed64(q, end); e != nil {
				return e.in("end_time_unix_nano")
			}
		case 9<<3 | wtLen:
			i := len(m.Attributes) + d.kvs.count(kvMark)
			if p, e = d.attribute(q, end, 5); e != nil {
				return e.at("attributes", i)
			}
		case 10<<3 | wtVarint:
			v, z, e := d.varint(q, end)
			if e != nil {
				return e.in("dropped_attributes_count")
			}
			m.DroppedAttributesCount, p = uint32(v), z
		case 11<<3 | wtLen:
			i := len(m.Events) + d.events.count(evMark)
			a, z, e := d.lenPrefix(q, end)
			if e != nil {
				return e.at("events", i)
			}
			ev := d.events.new(p, d.n)
			if e := d.event(ev, a, z); e != nil {
				return e.at("events", i)
			}
			d.events.push(ev)
			p = z
		case 12<<3 | wtVarint:
			v, z, e := d.varint(q, end)
			if e != nil {
				return e.in("dropped_events_count")
			}
			m.DroppedEventsCount, p = uint32(v), z
		case 13<<3 | wtLen:
			i := len(m.Links) + d.links.count(lkMark)
			a, z, e := d.lenPrefix(q, end)
			if e != nil {
				return e.at("links", i)
			}
			lk := d.links.new(p, d.n)
			if e := d.link(lk, a, z); e != nil {
				return e.at("links", i)
			}
			d.links.push(lk)
			p = z
		case 14<<3 | wtVarint:
			v, z, e := d.varint(q, end)
			if e != nil {
				return e.in("dropped_links_count")
			}
			m.DroppedLinksCount, p = uint32(v), z
		case 15<<3 | wtLen:
			a, z, e := d.lenPrefix(q, end)
			if e != nil {
				return e.in("status")
			}
			if m.Status == nil {
				m.Status = d.stats.one(p, d.n)
			}
			if e := d.status(m.Status, a, z); e != nil {
				return e.in("status")
			}
			p = z
		case 16<<3 | wtI32:
			if m.Flags, p, e = d.fixed32(q, end); e != nil {
				return e.in("flags")
			}
		default:
			if p, e = d.other(tag, p, q, end, spanFields); e != nil {
				return e
			}
		}
	}
	m.Attributes = d.kvs.finish(kvMark, m.Attributes, p, d.n)
	m.Events = d.events.finish(evMark, m.Events, p, d.n)
	m.Links = d.links.finish(lkMark, m.Links, p, d.n)
	return nil
}

func (d *decoder) event(m *tracepb.Span_Event, p, end int) *DecodeError {
	kvMark := d.kvs.mark()
	for p < end {
		tag, q := uint64(d.b[p]), p+1
		var e *DecodeError
		if tag-8 >= 0x80-8 { // not a one-byte tag (field 1 to 15)
			if tag, q, e = d.tagSlow(p, end); e != nil {
				return e
			}
		}
		switch tag {
		case 1<<3 | wtI64:
			if m.TimeUnixNano, p, e = d.fixed64(q, end); e != nil {
				return e.in("time_unix_nano")
			}
		case 2<<3 | wtLen:
			if m.Name, p, e = d.str(q, end); e != nil {
				return e.in("name")
			}
		case 3<<3 | wtLen:
			i := len(m.Attributes) + d.kvs.count(kvMark)
			if p, e = d.attribute(q, end, 6); e != nil {
				return e.at("attributes", i)
			}
		case 4<<3 | wtVarint:
			v, z, e := d.varint(q, end)
			if e != nil {
				return e.in("dropped_attributes_count")
			}
			m.DroppedAttributesCount, p = uint32(v), z
		default:
			if p, e = d.other(tag, p, q, end, eventFields); e != nil {
				return e
			}
		}
	}
	m.Attributes = d.kvs.finish(kvMark, m.Attributes, p, d.n)
	return nil
}

func (d *decoder) link(m *tracepb.Span_Link, p, end int) *DecodeError {
	kvMark := d.kvs.mark()
	for p < end {
		tag, q := uint64(d.b[p]), p+1
		var e *DecodeError
		if tag-8 >= 0x80-8 { // not a one-byte tag (field 1 to 15)
			if tag, q, e = d.tagSlow(p, end); e != nil {
				return e
			}
		}
		switch tag {
		case 1<<3 | wtLen:
			if m.TraceId, p, e = d.id(q, end, TraceIDSize); e != nil {
				return e.in("trace_id")
			}
		case 2<<3 | wtLen:
			if m.SpanId, p, e = d.id(q, end, SpanIDSize); e != nil {
				return e.in("span_id")
			}
		case 3<<3 | wtLen:
			if m.TraceState, p, e = d.str(q, end); e != nil {
				return e.in("trace_state")
			}
		case 4<<3 | wtLen:
			i := len(m.Attributes) + d.kvs.count(kvMark)
			if p, e = d.attribute(q, end, 6); e != nil {
				return e.at("attributes", i)
			}
		case 5<<3 | wtVarint:
			v, z, e := d.varint(q, end)
			if e != nil {
				return e.in("dropped_attributes_count")
			}
			m.DroppedAttributesCount, p = uint32(v), z
		case 6<<3 | wtI32:
			if m.Flags, p, e = d.fixed32(q, end); e != nil {
				return e.in("flags")
			}
		default:
			if p, e = d.other(tag, p, q, end, linkFields); e != nil {
				return e
			}
		}
	}
	m.Attributes = d.kvs.finish(kvMark, m.Attributes, p, d.n)
	return nil
}

func (d *decoder) status(m *tracepb.Status, p, end int) *DecodeError {
	for p < end {
		tag, q := uint64(d.b[p]), p+1
		var e *DecodeError
		if tag-8 >= 0x80-8 { // not a one-byte tag (field 1 to 15)
			if tag, q, e = d.tagSlow(p, end); e != nil {
				return e
			}
		}
		switch tag {
		case 2<<3 | wtLen:
			if m.Message, p, e = d.str(q, end); e != nil {
				return e.in("message")
			}
		case 3<<3 | wtVarint:
			v, z, e := d.varint(q, end)
			if e != nil {
				return e.in("code")
			}
			m.Code, p = tracepb.Status_StatusCode(int32(v)), z
		default:
			if p, e = d.other(tag, p, q, end, statusFields); e != nil {
				return e
			}
		}
	}
	return nil
}
