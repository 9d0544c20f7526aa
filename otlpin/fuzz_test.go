package otlpin

import (
	"bytes"
	"compress/zlib"
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/otelstep/otelstep/pipeline"
)

// checkingConsumer takes every batch after checking it marshals (what the
// sinks will do with it), and lets go of it.
type checkingConsumer struct {
	mu      sync.Mutex
	batches int
	err     error
}

func (c *checkingConsumer) Consume(_ context.Context, b *pipeline.Batch) error {
	var msgs []proto.Message
	for _, r := range b.Metrics {
		msgs = append(msgs, r)
	}
	// Spans and log records as messages: their records decode.
	rss, terr := pipeline.TracesProto(b.Traces)
	for _, r := range rss {
		msgs = append(msgs, r)
	}
	rls, lerr := pipeline.LogsProto(b.Logs)
	for _, r := range rls {
		msgs = append(msgs, r)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.batches++
	for _, err := range []error{terr, lerr} {
		if err != nil && c.err == nil {
			c.err = err
		}
	}
	for _, m := range msgs {
		if _, err := proto.Marshal(m); err != nil && c.err == nil {
			c.err = err
		}
	}
	b.Release()
	b.ResolveAcks(nil)
	return nil
}

// fuzzPaths are the paths FuzzHTTPHandler picks from.
var fuzzPaths = []string{"/v1/metrics", "/v1/traces", "/v1/logs", "/v1/other"}

// compress encodes body as enc names it; ok is false for an encoding it
// does not know (the request then goes as it is).
func compress(enc string, body []byte) ([]byte, bool) {
	var b bytes.Buffer
	switch enc {
	case "gzip":
		w := gzip.NewWriter(&b)
		_, _ = w.Write(body)
		_ = w.Close()
	case "deflate":
		w := zlib.NewWriter(&b)
		_, _ = w.Write(body)
		_ = w.Close()
	case "zstd":
		w, _ := zstd.NewWriter(&b)
		_, _ = w.Write(body)
		_ = w.Close()
	default:
		return body, false
	}
	return b.Bytes(), true
}

// FuzzHTTPHandler sends the OTLP/HTTP handler any body with any
// Content-Type and Content-Encoding (compressed as named when zip is set
// and the encoding is one the test knows), on each OTLP path and one that
// is not. It must never panic and never answer 5xx (the consumer takes
// everything): 200 for what it decodes, a 4xx for the rest; what it passes
// on must marshal.
func FuzzHTTPHandler(f *testing.F) {
	str := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	res := &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "svc")}}
	seeds := []proto.Message{
		&colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{{Resource: res, ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{
			{Name: "g", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: []*metricspb.NumberDataPoint{{TimeUnixNano: 1, Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: 1}}}}}},
			{Name: "h", Data: &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{AggregationTemporality: 2, DataPoints: []*metricspb.HistogramDataPoint{{Count: 2, ExplicitBounds: []float64{1}, BucketCounts: []uint64{1, 1}}}}}},
		}}}}}},
		&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{Resource: res, ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{
			{Name: "s", TraceId: bytes.Repeat([]byte{1}, 16), SpanId: bytes.Repeat([]byte{2}, 8), Attributes: []*commonpb.KeyValue{str("k", "v")}},
		}}}}}},
		&collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{Resource: res, ScopeLogs: []*logspb.ScopeLogs{{LogRecords: []*logspb.LogRecord{
			{Body: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "hello"}}, SeverityNumber: 9},
		}}}}}},
	}
	for i, m := range seeds {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), "application/x-protobuf", "", false, b)
		f.Add(uint8(i), "application/x-protobuf", "gzip", true, b)
		f.Add(uint8(i), "application/x-protobuf", "zstd", true, b)
	}
	f.Add(uint8(0), "application/json", "", false, []byte(`{"resourceMetrics":[{"resource":{"attributes":[{"key":"a","value":{"stringValue":"b"}}]},"scopeMetrics":[{"metrics":[{"name":"g","gauge":{"dataPoints":[{"timeUnixNano":"1","asInt":"3"}]}}]}]}]}`))
	f.Add(uint8(1), "application/json; charset=utf-8", "deflate", true, []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"s","traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","kind":2}]}]}]}`))
	f.Add(uint8(2), "application/json", "", false, []byte(`{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":{"kvlistValue":{"values":[{"key":"k","value":{"arrayValue":{"values":[{"intValue":"1"}]}}}]}}}]}]}]}`))
	f.Add(uint8(3), "text/plain", "br", false, []byte("x"))

	cons := &checkingConsumer{}
	r, err := New(Options{HTTPEndpoint: "127.0.0.1:0", Metrics: cons, Traces: cons, Logs: cons, MaxRequestBytes: 64 << 10})
	if err != nil {
		f.Fatal(err)
	}
	h := r.newHTTPServer().Handler
	f.Fuzz(func(t *testing.T, path uint8, ct, enc string, zip bool, body []byte) {
		if zip {
			body, _ = compress(enc, body)
		}
		req := httptest.NewRequest(http.MethodPost, fuzzPaths[int(path)%len(fuzzPaths)], bytes.NewReader(body))
		req.Header.Set("Content-Type", ct)
		if enc != "" {
			req.Header.Set("Content-Encoding", enc)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code >= 500 || w.Code < 200 || w.Code >= 300 && w.Code < 400 {
			t.Fatalf("%s %q %q (%d bytes): answered %d: %s", req.URL.Path, ct, enc, len(body), w.Code, w.Body.Bytes())
		}
		cons.mu.Lock()
		defer cons.mu.Unlock()
		if cons.err != nil {
			t.Fatalf("a batch passed on does not marshal: %v", cons.err)
		}
	})
}
