package otlpwire

import (
	"github.com/otelstep/otelstep/pipeline"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
)

// ExportLogsServiceRequest and everything under it; see proto_decode.go.
// Depths: request 1, ResourceLogs 2, Resource and ScopeLogs 3, Scope and
// LogRecord 4.

var logsRequest = requestShape[pipeline.ResourceLogs]{
	fields:    resourceLogsRequestFields,
	resources: func(d *decoder) *list[pipeline.ResourceLogs] { return &d.rls },
	resource:  (*decoder).resourceLogs,
}

func (d *decoder) logs() ([]*pipeline.ResourceLogs, *DecodeError) {
	d.n = 0 // the log records are kept as records: see traces
	return logsRequest.decode(d)
}

var resourceLogsShape = envelopeShape[resourcepb.Resource, pipeline.ScopeLogs]{
	fields: resourceLogsFields,
	head:   (*decoder).resourceField,
	items:  func(d *decoder) *list[pipeline.ScopeLogs] { return &d.sls },
	item:   (*decoder).scopeLogs,
}

func (d *decoder) resourceLogs(m *pipeline.ResourceLogs, p, end int) (e *DecodeError) {
	m.ScopeLogs, e = resourceLogsShape.decode(d, p, end, &m.Resource, m.ScopeLogs, &m.SchemaURL)
	return e
}

var scopeLogsShape = scopeRecords{fields: scopeLogsFields, check: (*decoder).checkLogRecord}

func (d *decoder) scopeLogs(m *pipeline.ScopeLogs, p, end int) (e *DecodeError) {
	m.Records, e = scopeLogsShape.decode(d, p, end, &m.Scope, &m.SchemaURL)
	return e
}

func (d *decoder) logRecord(m *logspb.LogRecord, p, end int) *DecodeError {
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
		case 2<<3 | wtVarint:
			v, z, e := d.varint(q, end)
			if e != nil {
				return e.in("severity_number")
			}
			m.SeverityNumber, p = logspb.SeverityNumber(int32(v)), z
		case 3<<3 | wtLen:
			if m.SeverityText, p, e = d.str(q, end); e != nil {
				return e.in("severity_text")
			}
		case 5<<3 | wtLen:
			a, z, e := d.lenPrefix(q, end)
			if e != nil {
				return e.in("body")
			}
			if m.Body == nil {
				m.Body = d.avs.new(p, d.n)
			}
			if e := d.anyValue(m.Body, a, z, 5, nil); e != nil {
				return e.in("body")
			}
			p = z
		case 6<<3 | wtLen:
			i := len(m.Attributes) + d.kvs.count(kvMark)
			if p, e = d.attribute(q, end, 5); e != nil {
				return e.at("attributes", i)
			}
		case 7<<3 | wtVarint:
			v, z, e := d.varint(q, end)
			if e != nil {
				return e.in("dropped_attributes_count")
			}
			m.DroppedAttributesCount, p = uint32(v), z
		case 8<<3 | wtI32:
			if m.Flags, p, e = d.fixed32(q, end); e != nil {
				return e.in("flags")
			}
		case 9<<3 | wtLen:
			if m.TraceId, p, e = d.id(q, end, TraceIDSize); e != nil {
				return e.in("trace_id")
			}
		case 10<<3 | wtLen:
			if m.SpanId, p, e = d.id(q, end, SpanIDSize); e != nil {
				return e.in("span_id")
			}
		case 11<<3 | wtI64:
			if m.ObservedTimeUnixNano, p, e = d.fixed64(q, end); e != nil {
				return e.in("observed_time_unix_nano")
			}
		case 12<<3 | wtLen:
			if m.EventName, p, e = d.str(q, end); e != nil {
				return e.in("event_name")
			}
		default:
			if p, e = d.other(tag, p, q, end, logRecordFields); e != nil {
				return e
			}
		}
	}
	m.Attributes = d.kvs.finish(kvMark, m.Attributes, p, d.n)
	return nil
}
