package sink

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/otelstep/otelstep/pipeline"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// noisyTraces is a batch of spans whose attribute values are random hex:
// gzip halves it and no more, as with the hung-backend fault case's spans.
func noisyTraces(spans, payload int) *pipeline.Batch {
	rng := rand.New(rand.NewPCG(1, 2))
	raw := make([]byte, payload/2)
	ss := &pipeline.ScopeSpans{Scope: &commonpb.InstrumentationScope{Name: "noise"}}
	for i := range spans {
		for j := range raw {
			raw[j] = byte(rng.Uint32())
		}
		ss.Spans = append(ss.Spans, &tracepb.Span{
			TraceId: make([]byte, 16), SpanId: make([]byte, 8), Name: fmt.Sprintf("span%d", i),
			Attributes: []*commonpb.KeyValue{strKV("payload", hex.EncodeToString(raw))},
		})
	}
	return &pipeline.Batch{Signal: pipeline.Traces, Traces: []*pipeline.ResourceSpans{{ScopeSpans: []*pipeline.ScopeSpans{ss}}}}
}

// A body too big to be kept for reuse holds a buffer of about its length,
// not the doubled one gzip's writes grew: the queue and the workers hold
// such bodies while the backend is down or hung, and the queue counts
// their capacity. The level is the fastest: what is tested is the
// buffer's size, and random payloads barely shrink at any level.
func TestBigBodyHoldsItsLength(t *testing.T) {
	h, err := NewHTTP(HTTPOptions{Endpoint: "http://127.0.0.1:1", CompressionLevel: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, spans := range []int{5000, 8000, 12000} {
		if err := h.Enqueue(context.Background(), noisyTraces(spans, 2000)); err != nil {
			t.Fatal(err)
		}
		bd, ok := h.pop()
		if !ok {
			t.Fatal("encoding failed")
		}
		n, c := bd.buf.Len(), bd.buf.Cap()
		if n <= maxKeptOut {
			t.Fatalf("%d spans: a body of %d bytes, want one over %d to test", spans, n, maxKeptOut)
		}
		if c > n+n/8 {
			t.Errorf("%d spans: a body of %d bytes holds a buffer of %d", spans, n, c)
		}
	}
}
