package spanmetrics

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/otelstep/otelstep/pipeline"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// BenchmarkConsume is the connector's cost per span on the steady state
// (every series made already): the golden spans.json, after the traces
// pipeline's processors, in record form as the protobuf receivers hand
// them on, on collector-v2.yaml's connector.
func BenchmarkConsume(b *testing.B) {
	benchConsume(b, recordBatch(b, goldenRequest(b)))
}

// BenchmarkConsumeLoad is BenchmarkConsume on the load generator's spans
// (sink's BenchmarkReceivedTraces, the traces path it is a quarter of at
// most): 100 spans of 8 attributes of 16 characters, with ids and a
// status, none of the dimensions among their attributes.
func BenchmarkConsumeLoad(b *testing.B) {
	benchConsume(b, recordBatch(b, loadRequest(100)))
}

func benchConsume(b *testing.B, batch *pipeline.Batch) {
	c := newConnector(b, v2Config(), &recorder{})
	ctx := context.Background()
	if err := c.Enqueue(ctx, batch); err != nil { // makes the series
		b.Fatal(err)
	}
	spans := pipeline.CountItems(batch)
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Enqueue(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(spans), "spans/op")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*spans), "ns/span")
}

// loadRequest is n spans shaped as sink's randomSpans (the load
// generator's), after the traces pipeline's processors.
func loadRequest(n int) *coltracepb.ExportTraceServiceRequest {
	r := rand.New(rand.NewPCG(1, 2))
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	val := func() string {
		b := make([]byte, 16)
		for i := range b {
			b[i] = letters[r.IntN(len(letters))]
		}
		return string(b)
	}
	id := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	spans := make([]*tracepb.Span, n)
	start := uint64(1_780_000_000_000_000_000)
	for i := range spans {
		attrs := make([]*commonpb.KeyValue, 8)
		for j := range attrs {
			attrs[j] = strKV(fmt.Sprintf("attr.%d", j), val())
		}
		start += uint64(r.IntN(1e6))
		spans[i] = &tracepb.Span{TraceId: id(16), SpanId: id(8), ParentSpanId: id(8), Name: fmt.Sprintf("op-%d", i%7),
			Kind: tracepb.Span_SPAN_KIND_SERVER, StartTimeUnixNano: start, EndTimeUnixNano: start + uint64(r.IntN(1e7)),
			Attributes: attrs, Status: &tracepb.Status{}}
	}
	res := &resourcepb.Resource{Attributes: []*commonpb.KeyValue{strKV("service.name", "bench"), strKV("slurm.job.id", "123456")}}
	v2Processors(res)
	return &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: res, ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}}}}}
}
