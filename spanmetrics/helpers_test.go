package spanmetrics

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/otelstep/otelstep/internal/testlog"
	"github.com/otelstep/otelstep/otlpwire"
	"github.com/otelstep/otelstep/pipeline"
	"github.com/otelstep/otelstep/sink"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// The service wires the connector in as a sink of the traces pipeline.
var _ sink.Sink = (*Connector)(nil)

// recorder is the metrics pipeline: it keeps every batch it takes, and
// refuses them while fail returns an error.
type recorder struct {
	mu      sync.Mutex
	batches []*pipeline.Batch
	refused int
	hints   int
	fail    func() error
}

func (r *recorder) Consume(_ context.Context, b *pipeline.Batch) error {
	if n := pipeline.CountItems(b); b.Items != n {
		panic(fmt.Sprintf("a batch of %d points says %d", n, b.Items))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		if err := r.fail(); err != nil {
			r.refused++
			return err
		}
	}
	r.batches = append(r.batches, b)
	return nil
}

func (r *recorder) Flush(context.Context) {
	r.mu.Lock()
	r.hints++
	r.mu.Unlock()
}

func (r *recorder) got() []*pipeline.Batch {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*pipeline.Batch(nil), r.batches...)
}

func (r *recorder) last(t *testing.T) *pipeline.Batch {
	t.Helper()
	bs := r.got()
	if len(bs) == 0 {
		t.Fatal("no batch sent")
	}
	return bs[len(bs)-1]
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newLog is a logger at the default level whose lines a test reads.
func newLog() (*slog.Logger, *testlog.Buffer) {
	lb := &testlog.Buffer{}
	return slog.New(slog.NewTextHandler(lb, nil)), lb
}

func newConnector(t testing.TB, cfg Config, next pipeline.Consumer) *Connector {
	t.Helper()
	c, err := New("span_metrics", cfg, next, quiet())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// v2Config is the span_metrics connector of collector-v2.yaml.
func v2Config() Config {
	return Config{
		Buckets: []time.Duration{250 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second,
			10 * time.Second, 30 * time.Second, 60 * time.Second, 120 * time.Second, 300 * time.Second,
			600 * time.Second, 1800 * time.Second},
		Dimensions:    []Dimension{{Name: "service.name.override"}, {Name: "nemo.gym.sandbox.provider"}},
		FlushInterval: 15 * time.Second,
	}
}

// goldenRequest is testdata/spans.json as the connector gets it: after the
// traces pipeline's transform/identity and resource processors.
func goldenRequest(t testing.TB) *coltracepb.ExportTraceServiceRequest {
	t.Helper()
	data, err := os.ReadFile("testdata/spans.json")
	if err != nil {
		t.Fatal(err)
	}
	// OTLP/JSON, whose ids are hex (protojson would read them as base64).
	req, err := otlpwire.DecodeTraces(data)
	if err != nil {
		t.Fatalf("spans.json: %v", err)
	}
	for _, rs := range req.ResourceSpans {
		if rs.Resource == nil {
			rs.Resource = &resourcepb.Resource{}
		}
		v2Processors(rs.Resource)
	}
	return req
}

// v2Processors does to r what collector-v2.yaml's transform/identity and
// resource processors do, with OTEL_TOKEN=example-ingest-token,
// SLURM_JOB_ID=4242 and the run_id of the golden file.
func v2Processors(r *resourcepb.Resource) {
	if attr(r.Attributes, "service.name.override") == nil {
		if v := attr(r.Attributes, "service.name"); v != nil {
			r.Attributes = append(r.Attributes, &commonpb.KeyValue{Key: "service.name.override", Value: v})
		}
	}
	for _, kv := range [][2]string{{"service.name", "my-registered-service"}, {"Authorization", "example-ingest-token"},
		{"user", "someone"}, {"run_id", "run1"}, {"slurm_job_id", "4242"}, {"benchmark", "scicode"},
		{"cluster", "cluster-a"}, {"model", "/checkpoint"}} {
		upsert(r, kv[0], kv[1]) // slurm_job_id: upserted as 4242 and converted to a string
	}
}

func attr(kvs []*commonpb.KeyValue, key string) *commonpb.AnyValue {
	for _, kv := range kvs {
		if kv.Key == key {
			return kv.Value
		}
	}
	return nil
}

// upsert replaces the attribute key in place, or appends it.
func upsert(r *resourcepb.Resource, key, value string) {
	kv := strKV(key, value)
	for i, a := range r.Attributes {
		if a.Key == key {
			r.Attributes[i] = kv
			return
		}
	}
	r.Attributes = append(r.Attributes, kv)
}

// recordBatch is req as the OTLP receivers hand it on: decoded from
// protobuf, its spans kept as records.
func recordBatch(t testing.TB, req *coltracepb.ExportTraceServiceRequest) *pipeline.Batch {
	t.Helper()
	data, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := otlpwire.UnmarshalRequest(pipeline.Traces, data)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, rs := range b.Traces {
		for _, ss := range rs.ScopeSpans {
			if len(ss.Spans) > 0 {
				t.Fatal("the decoder made span messages")
			}
			n += ss.Records.Len()
		}
	}
	if want := pipeline.CountItems(&pipeline.Batch{Signal: pipeline.Traces, Traces: pipeline.TracesFromProto(req.ResourceSpans)}); n != want {
		t.Fatalf("%d span records, want %d", n, want)
	}
	return b
}

// messageBatch is req with its spans as messages (the OTLP/JSON receiver's).
func messageBatch(req *coltracepb.ExportTraceServiceRequest) *pipeline.Batch {
	c := proto.Clone(req).(*coltracepb.ExportTraceServiceRequest)
	return &pipeline.Batch{Signal: pipeline.Traces, Traces: pipeline.TracesFromProto(c.ResourceSpans)}
}

// tracesBatch is one resource's spans as messages.
func tracesBatch(res []*commonpb.KeyValue, spans ...*tracepb.Span) *pipeline.Batch {
	return &pipeline.Batch{Signal: pipeline.Traces, Traces: pipeline.TracesFromProto([]*tracepb.ResourceSpans{{
		Resource:   &resourcepb.Resource{Attributes: res},
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}},
	}})}
}

// span returns a span of d's duration, starting at 1 s.
func span(name string, kind tracepb.Span_SpanKind, code tracepb.Status_StatusCode, d time.Duration, attrs ...*commonpb.KeyValue) *tracepb.Span {
	return &tracepb.Span{Name: name, Kind: kind, StartTimeUnixNano: 1e9, EndTimeUnixNano: uint64(1e9 + d),
		Status: &tracepb.Status{Code: code}, Attributes: attrs}
}

// point is one series' two data points in a flush.
type point struct {
	res   []*commonpb.KeyValue
	calls *metricspb.NumberDataPoint
	dur   *metricspb.HistogramDataPoint
}

// points returns the series of a flush by resource and point attributes
// (collector.instance.id left out), checking the two metrics' shape and
// that calls equals the histogram's count.
func points(t *testing.T, b *pipeline.Batch, c *Connector) map[string]point {
	t.Helper()
	if b.Signal != pipeline.Metrics {
		t.Fatalf("a %s batch", b.Signal)
	}
	out := map[string]point{}
	for _, rm := range b.Metrics {
		if len(rm.ScopeMetrics) != 1 || rm.ScopeMetrics[0].Scope.GetName() != "spanmetricsconnector" {
			t.Fatalf("scopes %v", rm.ScopeMetrics)
		}
		ms := rm.ScopeMetrics[0].Metrics
		if len(ms) != 2 {
			t.Fatalf("%d metrics", len(ms))
		}
		calls, dur := ms[0].GetSum(), ms[1].GetHistogram()
		if calls == nil || dur == nil || ms[0].Name != c.callsName || ms[1].Name != c.durName {
			t.Fatalf("metrics %s %s", ms[0].Name, ms[1].Name)
		}
		if len(calls.DataPoints) == 0 || len(calls.DataPoints) != len(dur.DataPoints) {
			t.Fatalf("%d calls points, %d duration points", len(calls.DataPoints), len(dur.DataPoints))
		}
		// The collector's two metrics list their points in different
		// orders (it ranges over maps): pair them by attributes.
		durs := map[string]*metricspb.HistogramDataPoint{}
		for _, dp := range dur.DataPoints {
			durs[kvsString(dp.Attributes)] = dp
		}
		for _, cp := range calls.DataPoints {
			dp := durs[kvsString(cp.Attributes)]
			k := kvsString(rm.Resource.GetAttributes()) + " | " + kvsString(cp.Attributes)
			if dp == nil {
				t.Errorf("no duration point for %s", k)
				continue
			}
			if cp.GetAsInt() != int64(dp.Count) {
				t.Errorf("%s: calls %d, histogram count %d", k, cp.GetAsInt(), dp.Count)
			}
			if _, dup := out[k]; dup {
				t.Errorf("two points of %s", k)
			}
			out[k] = point{res: rm.Resource.GetAttributes(), calls: cp, dur: dp}
		}
	}
	return out
}

// kvsString renders attributes in order, collector.instance.id left out.
func kvsString(kvs []*commonpb.KeyValue) string {
	var b bytes.Buffer
	for _, kv := range kvs {
		if kv.Key == instanceIDKey {
			continue
		}
		fmt.Fprintf(&b, "%s=%s;", kv.Key, valueText(kv.Value))
	}
	return b.String()
}

func valueText(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return fmt.Sprintf("%q", x.StringValue)
	case *commonpb.AnyValue_IntValue:
		return fmt.Sprintf("int:%d", x.IntValue)
	case *commonpb.AnyValue_DoubleValue:
		return fmt.Sprintf("double:%g", x.DoubleValue)
	case *commonpb.AnyValue_BoolValue:
		return fmt.Sprintf("bool:%t", x.BoolValue)
	case nil:
		return "empty"
	}
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(v)
	return fmt.Sprintf("proto:%x", b)
}

// sameFields reports whether a and b read the same span.
func sameFields(a, b spanFields) bool {
	return string(a.name) == string(b.name) && a.kind == b.kind && a.code == b.code && a.start == b.start && a.end == b.end
}
