package batch

import (
	"context"
	"time"

	"github.com/otelstep/otelstep/internal/otlptest"
	"github.com/otelstep/otelstep/pipeline"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
)

func strKV(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// acked returns otlptest.GaugeBatch(id, points) with a sender's ack.
func acked(id string, points int) (*pipeline.Batch, *pipeline.Ack) {
	b := otlptest.GaugeBatch(id, points)
	a := pipeline.NewAck()
	b.Acks = []*pipeline.Ack{a}
	return b, a
}

func ctxT(d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	_ = cancel // released by the timeout
	return ctx
}

func rm2(rm *metricspb.ResourceMetrics) []*metricspb.ResourceMetrics {
	return []*metricspb.ResourceMetrics{rm}
}
