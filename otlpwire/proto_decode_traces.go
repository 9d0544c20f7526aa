package otlpwire

import (
	"github.com/otelstep/otelstep/pipeline"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
)

// ExportTraceServiceRequest and everything under it; see proto_decode.go.
// Depths: request 1, ResourceSpans 2, Resource and ScopeSpans 3, Scope and
// Span 4, Event, Link and Status 5.

var resourceSpansRequestFields = []string{1: "resource_spans"}

func (d *decoder) traces() ([]*pipeline.ResourceSpans, *DecodeError) {
	mark := d.rss.mark()
	p, end := 0, d.n
	// The spans, nearly all of the body, are kept as records, not decoded
	// into d's slabs: extrapolating the few resource and scope messages
	// over the whole body would size chunks for thousands (a 600 KB
	// attribute chunk per request). n = 0 turns the extrapolation off;
	// chunks then grow with use.
	d.n = 0
	for p < end {
		tag, q := uint64(d.b[p]), p+1
		var e *DecodeError
		if tag-8 >= 0x80-8 { // not a one-byte tag (field 1 to 15)
			if tag, q, e = d.tagSlow(p, end); e != nil {
				return nil, e
			}
		}
		switch tag {
		case 1<<3 | wtLen:
			i := d.rss.count(mark)
			a, z, e := d.lenPrefix(q, end)
			if e != nil {
				return nil, e.at("resource_spans", i)
			}
			m := d.rss.new(p, d.n)
			if e := d.resourceSpans(m, a, z); e != nil {
				return nil, e.at("resource_spans", i)
			}
			d.rss.push(m)
			p = z
		default:
			if p, e = d.other(tag, p, q, end, resourceSpansRequestFields); e != nil {
				return nil, e
			}
		}
	}
	return d.rss.finish(mark, nil, p, d.n), nil
}

var resourceSpansFields = []string{1: "resource", 2: "scope_spans", 3: "schema_url"}

func (d *decoder) resourceSpans(m *pipeline.ResourceSpans, p, end int) *DecodeError {
	mark := d.sss.mark()
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
			if p, e = d.resourceField(&m.Resource, q, end); e != nil {
				return e.in("resource")
			}
		case 2<<3 | wtLen:
			i := d.sss.count(mark)
			a, z, e := d.lenPrefix(q, end)
			if e != nil {
				return e.at("scope_spans", i)
			}
			ss := d.sss.new(p, d.n)
			if e := d.scopeSpans(ss, a, z); e != nil {
				return e.at("scope_spans", i)
			}
			d.sss.push(ss)
			p = z
		case 3<<3 | wtLen:
			if m.SchemaURL, p, e = d.str(q, end); e != nil {
				return e.in("schema_url")
			}
		default:
			if p, e = d.other(tag, p, q, end, resourceSpansFields); e != nil {
				return e
			}
		}
	}
	m.ScopeSpans = d.sss.finish(mark, m.ScopeSpans, p, d.n)
	return nil
}

// resourceField decodes the resource field (depth 3) of a Resource* message
// into *r, merging into a resource already there.
func (d *decoder) resourceField(r **resourcepb.Resource, q, end int) (int, *DecodeError) {
	a, z, e := d.lenPrefix(q, end)
	if e != nil {
		return 0, e
	}
	if *r == nil {
		*r = &resourcepb.Resource{}
	}
	if e := d.resource(*r, a, z, 3); e != nil {
		return 0, e
	}
	return z, nil
}

// scopeField decodes the scope field (depth 4) of a Scope* message into
// *s, merging into a scope already there.
func (d *decoder) scopeField(s **commonpb.InstrumentationScope, q, end int) (int, *DecodeError) {
	a, z, e := d.lenPrefix(q, end)
	if e != nil {
		return 0, e
	}
	if *s == nil {
		*s = &commonpb.InstrumentationScope{}
	}
	if e := d.scope(*s, a, z, 4); e != nil {
		return 0, e
	}
	return z, nil
}

var scopeSpansFields = []string{1: "scope", 2: "spans", 3: "schema_url"}

func (d *decoder) scopeSpans(m *pipeline.ScopeSpans, p, end int) *DecodeError {
	var e *DecodeError
	m.Records, e = d.scopeItems(&m.Scope, &m.SchemaURL, p, end, scopeSpansFields, (*decoder).checkSpan)
	return e
}

// scopeItems decodes a ScopeSpans or ScopeLogs in [p, end): its scope and
// schema_url into *scope and *schemaURL, and its items (field 2), each
// checked with check, kept as their records (pipeline.Records), which it
// returns: [start, last) of the body while they are contiguous, as they are
// from every SDK, else copied together.
func (d *decoder) scopeItems(scope **commonpb.InstrumentationScope, schemaURL *string, p, end int, fields []string,
	check func(d *decoder, a, z int) *DecodeError) (pipeline.Records, *DecodeError) {
	from := p
	n, start, last, contiguous := 0, -1, -1, true
	for p < end {
		tag, q := uint64(d.b[p]), p+1
		var e *DecodeError
		if tag-8 >= 0x80-8 { // not a one-byte tag (field 1 to 15)
			if tag, q, e = d.tagSlow(p, end); e != nil {
				return nil, e
			}
		}
		switch tag {
		case 1<<3 | wtLen:
			if p, e = d.scopeField(scope, q, end); e != nil {
				return nil, e.in("scope")
			}
		case 2<<3 | wtLen:
			a, z, e := d.lenPrefix(q, end)
			if e != nil {
				return nil, e.at(fields[2], n)
			}
			if e := check(d, a, z); e != nil {
				return nil, e.at(fields[2], n)
			}
			n++
			if start < 0 {
				start = p
			} else if p != last {
				contiguous = false
			}
			p, last = z, z
		case 3<<3 | wtLen:
			if *schemaURL, p, e = d.str(q, end); e != nil {
				return nil, e.in("schema_url")
			}
		default:
			if p, e = d.other(tag, p, q, end, fields); e != nil {
				return nil, e
			}
		}
	}
	switch {
	case n == 0:
		return nil, nil
	case contiguous:
		return d.b[start:last:last], nil
	}
	return d.gatherRecords(from, end), nil
}

// gatherRecords copies the item records (field 2) of the scope message in
// [p, end), all checked already, into one buffer.
func (d *decoder) gatherRecords(p, end int) pipeline.Records {
	var out pipeline.Records
	for rest := d.b[p:end]; ; {
		num, typ, n := protowire.ConsumeTag(rest)
		if n < 0 {
			return out
		}
		m := protowire.ConsumeFieldValue(num, typ, rest[n:])
		if m < 0 {
			return out
		}
		if num == 2 && typ == protowire.BytesType {
			out = append(out, rest[:n+m]...)
		}
		rest = rest[n+m:]
	}
}

var spanFields = []string{1: "trace_id", 2: "span_id", 3: "trace_state", 4: "parent_span_id", 5: "name",
	6: "kind", 7: "start_time_unix_nano", 8: "end_time_unix_nano", 9: "attributes",
	10: "dropped_attributes_count", 11: "events", 12: "dropped_events_count", 13: "links",
	14: "dropped_links_count", 15: "status", 16: "flags"}

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

var eventFields = []string{1: "time_unix_nano", 2: "name", 3: "attributes", 4: "dropped_attributes_count"}

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

var linkFields = []string{1: "trace_id", 2: "span_id", 3: "trace_state", 4: "attributes",
	5: "dropped_attributes_count", 6: "flags"}

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

// Status field 1 is reserved (the deprecated code): skipped as unknown.
var statusFields = []string{2: "message", 3: "code"}

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
