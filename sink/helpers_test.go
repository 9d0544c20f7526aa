package sink

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/otelstep/otelstep/internal/otlptest"
	"github.com/otelstep/otelstep/internal/pipelinetest"
	"github.com/otelstep/otelstep/internal/testlog"
	"github.com/otelstep/otelstep/pipeline"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
)

func strKV(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// metricsBatch is otlptest.GaugeBatch with a state attribute on every
// point and a secret Authorization attribute on the resource.
func metricsBatch(id string, points int) *pipeline.Batch {
	b := otlptest.GaugeBatch(id, points)
	res := b.Metrics[0].Resource
	res.Attributes = append(res.Attributes, strKV("Authorization", "Bearer s3cr3t-t0ken"))
	for _, dp := range b.Metrics[0].ScopeMetrics[0].Metrics[0].GetGauge().DataPoints {
		dp.Attributes = append(dp.Attributes, strKV("state", "user"))
	}
	return b
}

func batchID(b *pipeline.Batch) string { return otlptest.BatchID(b) }

// syncBuf is the tests' goroutine-safe log buffer.
type syncBuf = testlog.Buffer

func testLogger() (*slog.Logger, *syncBuf) { return testlog.New() }

// recorder is a Consumer / non-blocking Sink recording what it got.
type recorder struct{ pipelinetest.Recorder }

func (r *recorder) got() []*pipeline.Batch                               { return r.Got() }
func (r *recorder) Name() string                                         { return "recorder" }
func (r *recorder) Enqueue(ctx context.Context, b *pipeline.Batch) error { return r.Consume(ctx, b) }
func (r *recorder) Start(context.Context) error                          { return nil }
func (r *recorder) Shutdown(context.Context) error                       { return nil }

const patience = pipelinetest.Patience

func waitFor(t testing.TB, d time.Duration, cond func() bool, what string) {
	t.Helper()
	pipelinetest.WaitFor(t, d, cond, what)
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
