package otlpwire

import (
	"bytes"
	"strings"
	"testing"

	"github.com/otelstep/otelstep/pipeline"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// The decoders' strings are the body's bytes (unsafe.String in
// getDecoder and SpanDecoder's trusted): these tests pin down which
// memory each result reads, the ground the receivers' leases stand on.

func aliasRequest(t *testing.T) []byte {
	t.Helper()
	req := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{{Key: "service.name",
			Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "checkout"}}}}},
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{Name: "GET /cart",
			TraceId: bytes.Repeat([]byte{1}, 16), SpanId: bytes.Repeat([]byte{2}, 8)}}}},
	}}}
	body, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

func poisoned(n int) string { return strings.Repeat(string([]byte{pipeline.PoisonByte}), n) }

// An owned decode's strings are the body's memory: whoever writes the body
// (a pool reusing it, a poison build's release) changes them. So a body
// goes back to its pool only with the last release of its batch's lease.
func TestOwnedDecodeAliasesBody(t *testing.T) {
	buf := aliasRequest(t)
	rss, err := DecodeTracesOwned(buf)
	if err != nil {
		t.Fatal(err)
	}
	svc := rss[0].Resource.Attributes[0].GetValue().GetStringValue()
	var dec SpanDecoder
	var name string
	for rec := range rss[0].ScopeSpans[0].Records.All() {
		sp, err := dec.Decode(rec)
		if err != nil {
			t.Fatal(err)
		}
		name = sp.Name
	}
	if svc != "checkout" || name != "GET /cart" {
		t.Fatalf("decoded %q, %q", svc, name)
	}
	pipeline.PoisonBytes(buf)
	if svc != poisoned(len(svc)) || name != poisoned(len(name)) {
		t.Fatalf("after the body was overwritten: %q, %q; want the poison they are views of", svc, name)
	}
}

// The copying form owns its copy: the caller's buffer is the caller's again
// (receivers reuse theirs).
func TestUnmarshalRequestCopies(t *testing.T) {
	data := aliasRequest(t)
	b, err := UnmarshalRequest(pipeline.Traces, data)
	if err != nil {
		t.Fatal(err)
	}
	pipeline.PoisonBytes(data)
	if svc := b.Traces[0].Resource.Attributes[0].GetValue().GetStringValue(); svc != "checkout" {
		t.Fatalf("the caller's buffer overwritten, the batch reads %q", svc)
	}
	var dec SpanDecoder
	for rec := range b.Traces[0].ScopeSpans[0].Records.All() {
		if sp, err := dec.Decode(rec); err != nil || sp.Name != "GET /cart" {
			t.Fatalf("the caller's buffer overwritten, the span reads %v, %v", sp, err)
		}
	}
}
