package otlpin

import (
	"bytes"
	"strings"
	"testing"

	"github.com/otelstep/otelstep/pipeline"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// The strings of a batch decoded from a pooled body are views of the body
// (otlpwire's decoder makes them with unsafe.String, not copies). In a
// poison build they read as received while any holder keeps its
// reference, and as poison once the last one let go: a lease released
// early would show here as poisoned strings read by a holder still at
// work, and as CheckLive's panic.
func TestDecodedStringsLiveUntilLastRelease(t *testing.T) {
	if !pipeline.PoisonReleased {
		t.Skip("poisoning is a build with -tags poison")
	}
	body, err := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{{Key: "service.name",
			Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "checkout"}}}}},
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{Name: "GET /cart",
			TraceId: bytes.Repeat([]byte{1}, 16), SpanId: bytes.Repeat([]byte{2}, 8)}}}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	var p bodyPool
	req := &exportRequest{batch: pipeline.Batch{Signal: pipeline.Traces}}
	if err := p.decodeExport(mem.BufferSlice{mem.SliceBuffer(body)}, req); err != nil || req.err != nil {
		t.Fatal(err, req.err)
	}
	b := &req.batch
	if len(b.Leases) != 1 {
		t.Fatalf("the batch holds %d leases, want the pooled body's", len(b.Leases))
	}
	svc := b.Traces[0].Resource.Attributes[0].GetValue().GetStringValue()
	b.Retain(1) // two sinks
	b.Release() // the first is done
	b.CheckLive()
	if svc != "checkout" {
		t.Fatalf("a holder still at work reads %q", svc)
	}
	b.Release() // the last
	if want := strings.Repeat(string([]byte{pipeline.PoisonByte}), len(svc)); svc != want {
		t.Fatalf("after the last release the string reads %q, want the poison of the body it is a view of", svc)
	}
	defer func() {
		if r := recover(); r != pipeline.ErrUseAfterRelease {
			t.Fatalf("CheckLive of a released batch: recovered %v, want %v", r, pipeline.ErrUseAfterRelease)
		}
	}()
	b.CheckLive()
}
