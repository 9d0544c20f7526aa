package otlpwire

import (
	"slices"

	"github.com/otelstep/otelstep/pipeline"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
)

// AppendLogsRequest appends the encoding of an ExportLogsServiceRequest
// holding rls to dst: AppendTracesRequest for log records.
func (e *ProtoEncoder) AppendLogsRequest(dst []byte, rls []*pipeline.ResourceLogs) []byte {
	e.reset()
	total := 0
	for _, rl := range rls {
		total += lenField(1, e.sizeResourceLogs(rl))
	}
	dst = slices.Grow(dst, total) // one allocation at most: the size pass knows the length
	for _, rl := range rls {
		dst = e.msg(dst, 1)
		dst = e.appendResourceLogs(dst, rl)
	}
	return dst
}

func (e *ProtoEncoder) sizeResourceLogs(rl *pipeline.ResourceLogs) int {
	idx := e.mark()
	n := 0
	if rl.Resource != nil {
		n += lenField(1, e.sizeResource(rl.Resource))
	}
	for _, sl := range rl.ScopeLogs {
		n += lenField(2, e.sizeScopeLogs(sl))
	}
	n += strSize(3, rl.SchemaURL)
	e.sizes[idx] = n
	return n
}

func (e *ProtoEncoder) appendResourceLogs(dst []byte, rl *pipeline.ResourceLogs) []byte {
	if rl.Resource != nil {
		dst = e.msg(dst, 1)
		dst = e.appendResource(dst, rl.Resource)
	}
	for _, sl := range rl.ScopeLogs {
		dst = e.msg(dst, 2)
		dst = e.appendScopeLogs(dst, sl)
	}
	return appendStr(dst, 3, rl.SchemaURL)
}

func (e *ProtoEncoder) sizeScopeLogs(sl *pipeline.ScopeLogs) int {
	idx := e.mark()
	n := 0
	if sl.Scope != nil {
		n += lenField(1, e.sizeScope(sl.Scope))
	}
	for _, r := range sl.LogRecords {
		n += lenField(2, e.sizeLogRecord(r))
	}
	n += len(sl.Records) // received log records, as they came
	n += strSize(3, sl.SchemaURL)
	e.sizes[idx] = n
	return n
}

func (e *ProtoEncoder) appendScopeLogs(dst []byte, sl *pipeline.ScopeLogs) []byte {
	if sl.Scope != nil {
		dst = e.msg(dst, 1)
		dst = e.appendScope(dst, sl.Scope)
	}
	for _, r := range sl.LogRecords {
		dst = e.msg(dst, 2)
		dst = e.appendLogRecord(dst, r)
	}
	dst = append(dst, sl.Records...)
	return appendStr(dst, 3, sl.SchemaURL)
}

func (e *ProtoEncoder) sizeLogRecord(r *logspb.LogRecord) int {
	idx := e.mark()
	n := fixed64Size(1, r.TimeUnixNano) + enumSize(2, int32(r.SeverityNumber)) + strSize(3, r.SeverityText)
	if r.Body != nil {
		n += lenField(5, e.sizeAnyValue(r.Body))
	}
	n += e.sizeKeyValues(6, r.Attributes) + varintSize(7, uint64(r.DroppedAttributesCount)) + fixed32Size(8, r.Flags) +
		bytesSize(9, r.TraceId) + bytesSize(10, r.SpanId) + fixed64Size(11, r.ObservedTimeUnixNano) + strSize(12, r.EventName)
	e.sizes[idx] = n
	return n
}

func (e *ProtoEncoder) appendLogRecord(dst []byte, r *logspb.LogRecord) []byte {
	dst = appendFixed64(dst, 1, r.TimeUnixNano)
	dst = appendEnum(dst, 2, int32(r.SeverityNumber))
	dst = appendStr(dst, 3, r.SeverityText)
	if r.Body != nil {
		dst = e.msg(dst, 5)
		dst = e.appendAnyValue(dst, r.Body)
	}
	dst = e.appendKeyValues(dst, 6, r.Attributes)
	dst = appendVarint(dst, 7, uint64(r.DroppedAttributesCount))
	dst = appendFixed32(dst, 8, r.Flags)
	dst = appendBytes(dst, 9, r.TraceId)
	dst = appendBytes(dst, 10, r.SpanId)
	dst = appendFixed64(dst, 11, r.ObservedTimeUnixNano)
	return appendStr(dst, 12, r.EventName)
}
