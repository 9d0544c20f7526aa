package otlpwire

import (
	"github.com/otelstep/otelstep/pipeline"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
)

func appendResourceLogs(b []byte, rl *pipeline.ResourceLogs, skip []string) []byte {
	b = append(b, '{')
	if rl == nil {
		return append(b, '}')
	}
	first := true
	if rl.Resource != nil {
		b = key(b, &first, "resource")
		b = appendResource(b, rl.Resource, skip)
	}
	b = fieldList(b, &first, "scopeLogs", rl.ScopeLogs, appendScopeLogs)
	b = fieldString(b, &first, "schemaUrl", rl.SchemaURL)
	return append(b, '}')
}

func appendScopeLogs(b []byte, sl *pipeline.ScopeLogs) []byte {
	b = append(b, '{')
	if sl == nil {
		return append(b, '}')
	}
	first := true
	if sl.Scope != nil {
		b = key(b, &first, "scope")
		b = appendScope(b, sl.Scope)
	}
	b = fieldItems(b, &first, "logRecords", sl.LogRecords, sl.Records, appendLogRecordRecord, &logRecordDecoders, appendLogRecord)
	b = fieldString(b, &first, "schemaUrl", sl.SchemaURL)
	return append(b, '}')
}

func appendLogRecord(b []byte, r *logspb.LogRecord) []byte {
	b = append(b, '{')
	if r == nil {
		return append(b, '}')
	}
	first := true
	b = fieldUint64(b, &first, "timeUnixNano", r.TimeUnixNano)
	b = fieldUint64(b, &first, "observedTimeUnixNano", r.ObservedTimeUnixNano)
	b = fieldInt32(b, &first, "severityNumber", int32(r.SeverityNumber))
	b = fieldString(b, &first, "severityText", r.SeverityText)
	if r.Body != nil {
		b = key(b, &first, "body")
		b = appendAnyValue(b, r.Body)
	}
	b = fieldAttrs(b, &first, "attributes", r.Attributes, nil)
	b = fieldUint32(b, &first, "droppedAttributesCount", r.DroppedAttributesCount)
	b = fieldUint32(b, &first, "flags", r.Flags)
	b = fieldHex(b, &first, "traceId", r.TraceId)
	b = fieldHex(b, &first, "spanId", r.SpanId)
	b = fieldString(b, &first, "eventName", r.EventName)
	return append(b, '}')
}
