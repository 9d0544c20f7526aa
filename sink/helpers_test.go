package sink

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/otelstep/otelstep/internal/testlog"
	"github.com/otelstep/otelstep/pipeline"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
)

func strKV(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// metricsBatch returns a batch of one resource (tagged id, with a secret
// Authorization attribute) holding one gauge with points data points.
func metricsBatch(id string, points int) *pipeline.Batch {
	dps := make([]*metricspb.NumberDataPoint, points)
	for i := range dps {
		dps[i] = &metricspb.NumberDataPoint{
			TimeUnixNano: uint64(1700000000000000000 + i),
			Value:        &metricspb.NumberDataPoint_AsDouble{AsDouble: float64(i)},
			Attributes:   []*commonpb.KeyValue{strKV("cpu", fmt.Sprint(i%16)), strKV("state", "user")},
		}
	}
	return &pipeline.Batch{Signal: pipeline.Metrics, Items: points, Metrics: []*metricspb.ResourceMetrics{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
			strKV("service.name", "svc"), strKV("batch.id", id), strKV("Authorization", "Bearer s3cr3t-t0ken"),
		}},
		ScopeMetrics: []*metricspb.ScopeMetrics{{
			Scope:   &commonpb.InstrumentationScope{Name: "otelstep"},
			Metrics: []*metricspb.Metric{{Name: "system.cpu.time", Unit: "s", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: dps}}}},
		}},
	}}}
}

func batchID(b *pipeline.Batch) string {
	for _, rm := range b.Metrics {
		for _, kv := range rm.GetResource().GetAttributes() {
			if kv.Key == "batch.id" {
				return kv.GetValue().GetStringValue()
			}
		}
	}
	return ""
}

// syncBuf is the tests' goroutine-safe log buffer.
type syncBuf = testlog.Buffer

func testLogger() (*slog.Logger, *syncBuf) { return testlog.New() }

// recorder is a Consumer / non-blocking Sink recording what it got.
type recorder struct {
	mu      sync.Mutex
	batches []*pipeline.Batch
	refuse  int // refuse this many calls with ErrFull
}

func (r *recorder) Consume(_ context.Context, b *pipeline.Batch) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.refuse > 0 {
		r.refuse--
		return pipeline.ErrFull
	}
	r.batches = append(r.batches, b)
	return nil
}

func (r *recorder) got() []*pipeline.Batch {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*pipeline.Batch(nil), r.batches...)
}

func (r *recorder) Name() string                                         { return "recorder" }
func (r *recorder) Enqueue(ctx context.Context, b *pipeline.Batch) error { return r.Consume(ctx, b) }
func (r *recorder) Start(context.Context) error                          { return nil }
func (r *recorder) Shutdown(context.Context) error                       { return nil }

// patience bounds every wait on a condition: long enough for a busy CI
// machine, never a measuring window.
const patience = time.Minute

func waitFor(t testing.TB, d time.Duration, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func ctxT(d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	_ = cancel // released by the timeout
	return ctx
}

// forLines calls fn with every line of a JSONL fixture.
func forLines(t testing.TB, path string, fn func(line []byte)) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		fn(l)
	}
}

// hugeResource is a batch of one resource holding two metrics of points
// points each, as one scrape of a 20,000-series target makes it: its
// encodings are megabytes, one resource.
func hugeResource(points int) *pipeline.Batch {
	b := metricsBatch("huge", points)
	m2 := metricsBatch("huge", points).Metrics[0].ScopeMetrics[0].Metrics[0]
	m2.Name = "system.cpu.utilization"
	sm := b.Metrics[0].ScopeMetrics[0]
	sm.Metrics = append(sm.Metrics, m2)
	b.Items += points
	return b
}
