package otlpwire_test

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/otelstep/otelstep/otlpwire"
	"github.com/otelstep/otelstep/pipeline"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// idCase is one id field of OTLP set to an id of some length, in a request
// whose other items are good: the item with the id is the second item of
// the second scope of the second resource.
type idCase struct {
	name string // the field, as the error path names it
	sig  pipeline.Signal
	size int // 16 or 8
	// build returns the request with id in the field.
	build func(id []byte) proto.Message
}

func goodSpan() *tracepb.Span {
	return &tracepb.Span{TraceId: bytes.Repeat([]byte{1}, 16), SpanId: bytes.Repeat([]byte{2}, 8), Name: "good"}
}

func spanRequest(bad *tracepb.Span) proto.Message {
	good := &tracepb.ResourceSpans{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{goodSpan()}}}}
	return &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{good, {ScopeSpans: []*tracepb.ScopeSpans{
		{Spans: []*tracepb.Span{goodSpan()}}, {Spans: []*tracepb.Span{goodSpan(), bad}}}}}}
}

func logRequest(bad *logspb.LogRecord) proto.Message {
	good := func() *logspb.LogRecord {
		return &logspb.LogRecord{TraceId: bytes.Repeat([]byte{1}, 16), SpanId: bytes.Repeat([]byte{2}, 8)}
	}
	return &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{
		{ScopeLogs: []*logspb.ScopeLogs{{LogRecords: []*logspb.LogRecord{good()}}}},
		{ScopeLogs: []*logspb.ScopeLogs{{LogRecords: []*logspb.LogRecord{good()}}, {LogRecords: []*logspb.LogRecord{good(), bad}}}}}}
}

func exemplarRequest(bad *metricspb.Exemplar) proto.Message {
	gauge := func(ex ...*metricspb.Exemplar) *metricspb.Metric {
		return &metricspb.Metric{Name: "g", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: []*metricspb.NumberDataPoint{
			{Value: &metricspb.NumberDataPoint_AsInt{AsInt: 1}}, {Value: &metricspb.NumberDataPoint_AsInt{AsInt: 2}, Exemplars: ex}}}}}
	}
	good := &metricspb.Exemplar{TraceId: bytes.Repeat([]byte{1}, 16), SpanId: bytes.Repeat([]byte{2}, 8)}
	return &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{
		{ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{gauge(good)}}}},
		{ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{gauge()}}, {Metrics: []*metricspb.Metric{gauge(), gauge(good, bad)}}}}}}
}

func idCases() []idCase {
	span := func(set func(*tracepb.Span, []byte)) func([]byte) proto.Message {
		return func(id []byte) proto.Message {
			s := goodSpan()
			set(s, id)
			return spanRequest(s)
		}
	}
	link := func(set func(*tracepb.Span_Link, []byte)) func([]byte) proto.Message {
		return func(id []byte) proto.Message {
			s := goodSpan()
			l := &tracepb.Span_Link{TraceId: bytes.Repeat([]byte{3}, 16), SpanId: bytes.Repeat([]byte{4}, 8)}
			set(l, id)
			s.Links = []*tracepb.Span_Link{{TraceId: bytes.Repeat([]byte{3}, 16)}, l}
			return spanRequest(s)
		}
	}
	logRec := func(set func(*logspb.LogRecord, []byte)) func([]byte) proto.Message {
		return func(id []byte) proto.Message {
			r := &logspb.LogRecord{TraceId: bytes.Repeat([]byte{1}, 16), SpanId: bytes.Repeat([]byte{2}, 8)}
			set(r, id)
			return logRequest(r)
		}
	}
	exemplar := func(set func(*metricspb.Exemplar, []byte)) func([]byte) proto.Message {
		return func(id []byte) proto.Message {
			e := &metricspb.Exemplar{TraceId: bytes.Repeat([]byte{1}, 16), SpanId: bytes.Repeat([]byte{2}, 8)}
			set(e, id)
			return exemplarRequest(e)
		}
	}
	const spanAt = "resource_spans[1].scope_spans[1].spans[1]."
	const logAt = "resource_logs[1].scope_logs[1].log_records[1]."
	const exAt = "resource_metrics[1].scope_metrics[1].metrics[1].gauge.data_points[1].exemplars[1]."
	return []idCase{
		{spanAt + "trace_id", pipeline.Traces, 16, span(func(s *tracepb.Span, id []byte) { s.TraceId = id })},
		{spanAt + "span_id", pipeline.Traces, 8, span(func(s *tracepb.Span, id []byte) { s.SpanId = id })},
		{spanAt + "parent_span_id", pipeline.Traces, 8, span(func(s *tracepb.Span, id []byte) { s.ParentSpanId = id })},
		{spanAt + "links[1].trace_id", pipeline.Traces, 16, link(func(l *tracepb.Span_Link, id []byte) { l.TraceId = id })},
		{spanAt + "links[1].span_id", pipeline.Traces, 8, link(func(l *tracepb.Span_Link, id []byte) { l.SpanId = id })},
		{logAt + "trace_id", pipeline.Logs, 16, logRec(func(r *logspb.LogRecord, id []byte) { r.TraceId = id })},
		{logAt + "span_id", pipeline.Logs, 8, logRec(func(r *logspb.LogRecord, id []byte) { r.SpanId = id })},
		{exAt + "trace_id", pipeline.Metrics, 16, exemplar(func(e *metricspb.Exemplar, id []byte) { e.TraceId = id })},
		{exAt + "span_id", pipeline.Metrics, 8, exemplar(func(e *metricspb.Exemplar, id []byte) { e.SpanId = id })},
	}
}

// Every id of OTLP is accepted empty or of its size and refused with any
// other length, with an error naming the field, where it is and the
// lengths; proto.Unmarshal (which takes any length) agrees otherwise.
func TestDecodeIDLengths(t *testing.T) {
	for _, c := range idCases() {
		for _, n := range []int{0, 1, c.size - 1, c.size, c.size + 1, 2 * c.size, 64} {
			id := bytes.Repeat([]byte{0xab}, n)
			data := marshal(c.build(id))
			err := compare(t, c.sig, data)
			if otlpwire.ValidID(n, c.size) {
				if err != nil {
					t.Errorf("%s of %d bytes: %v", c.name, n, err)
				}
				continue
			}
			what := map[int]string{16: "trace id", 8: "span id"}[c.size]
			want := c.sig.String() + " export request: " + c.name + ": " + what + " of " + strconv.Itoa(n) +
				" bytes, must be " + strconv.Itoa(c.size) + " bytes or empty at byte "
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("%s of %d bytes: got %v, want %q...", c.name, n, err, want)
			}
		}
	}
}

// pdata checks each occurrence of an id as it reads it: a bad id followed
// by a good one in the same field is refused (proto.Unmarshal would keep
// the good one), and so is a good one followed by a bad one.
func TestDecodeIDEveryOccurrence(t *testing.T) {
	traceID := func(n int) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), bytes.Repeat([]byte{1}, n))
	}
	for name, ids := range map[string][]byte{
		"bad then good": append(traceID(15), traceID(16)...),
		"good then bad": append(traceID(16), traceID(15)...),
	} {
		span := append(ids, marshal(&tracepb.Span{SpanId: bytes.Repeat([]byte{2}, 8), Name: "x"})...)
		req := spanRequest(goodSpan()).(*coltracepb.ExportTraceServiceRequest)
		// The scope's second span as raw bytes: proto.Marshal writes the
		// scope's unknown fields after its known ones.
		ss := req.ResourceSpans[1].ScopeSpans[1]
		ss.Spans = ss.Spans[:1]
		ss.ProtoReflect().SetUnknown(protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), span))
		err := compare(t, pipeline.Traces, marshal(req))
		if err == nil || !strings.Contains(err.Error(), "resource_spans[1].scope_spans[1].spans[1].trace_id: trace id of 15 bytes") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
