package batch

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/otelstep/otelstep/pipeline"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
)

func strKV(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// metricsBatch returns a batch of one resource (tagged id) holding one
// gauge with points data points valued 0, 1, ...
func metricsBatch(id string, points int) *pipeline.Batch {
	dps := make([]*metricspb.NumberDataPoint, points)
	for i := range dps {
		dps[i] = &metricspb.NumberDataPoint{
			TimeUnixNano: uint64(1700000000000000000 + i),
			Value:        &metricspb.NumberDataPoint_AsDouble{AsDouble: float64(i)},
			Attributes:   []*commonpb.KeyValue{strKV("cpu", fmt.Sprint(i%16))},
		}
	}
	return &pipeline.Batch{Signal: pipeline.Metrics, Items: points, Metrics: []*metricspb.ResourceMetrics{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{strKV("service.name", "svc"), strKV("batch.id", id)}},
		ScopeMetrics: []*metricspb.ScopeMetrics{{
			Scope:   &commonpb.InstrumentationScope{Name: "otelstep"},
			Metrics: []*metricspb.Metric{{Name: "system.cpu.time", Unit: "s", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: dps}}}},
		}},
	}}}
}

// acked returns metricsBatch(id, points) with a sender's ack.
func acked(id string, points int) (*pipeline.Batch, *pipeline.Ack) {
	b := metricsBatch(id, points)
	a := pipeline.NewAck()
	b.Acks = []*pipeline.Ack{a}
	return b, a
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

// recorder is the next consumer, recording what it got.
type recorder struct {
	mu      sync.Mutex
	batches []*pipeline.Batch
	refuse  int // refuse this many calls with ErrFull
}

func (r *recorder) Consume(_ context.Context, b *pipeline.Batch) error {
	if n := pipeline.CountItems(b); b.Items != n {
		panic(fmt.Sprintf("a batch of %d items says %d", n, b.Items))
	}
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

func rm2(rm *metricspb.ResourceMetrics) []*metricspb.ResourceMetrics {
	return []*metricspb.ResourceMetrics{rm}
}
