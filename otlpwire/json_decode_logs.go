package otlpwire

import (
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
)

// The resource and scope messages of logs: see json_decode_envelope.go.

var (
	resourceLogsNames = envelopeNames{"resource", "scopeLogs", "scope_logs"}
	scopeLogsNames    = envelopeNames{"scope", "logRecords", "log_records"}
)

func (d *jsonDecoder) resourceLogsMsg(m *logspb.ResourceLogs) error {
	return jsonEnvelope(d, &resourceLogsNames, &m.Resource, d.resource, &m.ScopeLogs, &d.scopeLogs, d.scopeLogsMsg, &m.SchemaUrl)
}

func (d *jsonDecoder) scopeLogsMsg(m *logspb.ScopeLogs) error {
	return jsonEnvelope(d, &scopeLogsNames, &m.Scope, d.scope, &m.LogRecords, &d.logRecords, d.logRecord, &m.SchemaUrl)
}

// Fields of LogRecord.
const (
	lrTimeUnixNano = iota
	lrObservedTimeUnixNano
	lrSeverityNumber
	lrSeverityText
	lrBody
	lrAttributes
	lrDroppedAttributesCount
	lrFlags
	lrTraceID
	lrSpanID
	lrEventName
)

func logRecordField(k []byte) (int, string) {
	switch string(k) {
	case "timeUnixNano", "time_unix_nano":
		return lrTimeUnixNano, "timeUnixNano"
	case "observedTimeUnixNano", "observed_time_unix_nano":
		return lrObservedTimeUnixNano, "observedTimeUnixNano"
	case "severityNumber", "severity_number":
		return lrSeverityNumber, "severityNumber"
	case "severityText", "severity_text":
		return lrSeverityText, "severityText"
	case "body":
		return lrBody, "body"
	case "attributes":
		return lrAttributes, "attributes"
	case "droppedAttributesCount", "dropped_attributes_count":
		return lrDroppedAttributesCount, "droppedAttributesCount"
	case "flags":
		return lrFlags, "flags"
	case "traceId", "trace_id":
		return lrTraceID, "traceId"
	case "spanId", "span_id":
		return lrSpanID, "spanId"
	case "eventName", "event_name":
		return lrEventName, "eventName"
	}
	return -1, ""
}

func (d *jsonDecoder) logRecord(r *logspb.LogRecord) error {
	return d.message(logRecordField, 0, func(f int) (err error) {
		switch f {
		case lrTimeUnixNano:
			r.TimeUnixNano, err = d.uint64Value()
		case lrObservedTimeUnixNano:
			r.ObservedTimeUnixNano, err = d.uint64Value()
		case lrSeverityNumber:
			var v int32
			v, err = d.enumValue(logspb.SeverityNumber_value)
			r.SeverityNumber = logspb.SeverityNumber(v)
		case lrSeverityText:
			r.SeverityText, err = d.str()
		case lrBody:
			r.Body, err = d.singleAnyValue()
		case lrAttributes:
			r.Attributes, err = d.attributes()
		case lrDroppedAttributesCount:
			r.DroppedAttributesCount, err = d.uint32Value()
		case lrFlags:
			r.Flags, err = d.uint32Value()
		case lrTraceID:
			r.TraceId, err = d.idValue(TraceIDSize)
		case lrSpanID:
			r.SpanId, err = d.idValue(SpanIDSize)
		case lrEventName:
			r.EventName, err = d.str()
		}
		return err
	})
}
