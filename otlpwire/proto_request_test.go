package otlpwire

import (
	"strings"
	"testing"

	"github.com/otelstep/otelstep/pipeline"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

func TestUnmarshalRequest(t *testing.T) {
	data, _ := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{
		{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{Name: "a"}, {Name: "b"}}}}},
	}})
	s, ok := pipeline.SignalOfPath("/v1/traces")
	if !ok || s != pipeline.Traces {
		t.Fatalf("SignalOfPath: %v %v", s, ok)
	}
	b, err := UnmarshalRequest(s, data)
	if err != nil || b.Items != 2 || b.Signal != pipeline.Traces {
		t.Fatalf("got %v items, %v", b, err)
	}
	if _, err := UnmarshalRequest(pipeline.Metrics, []byte{0xff, 0xff}); err == nil || !strings.Contains(err.Error(), "metrics export request") {
		t.Errorf("garbage: %v", err)
	}
	if _, ok := pipeline.SignalOfPath("/v1/profiles"); ok {
		t.Error("/v1/profiles is not a signal here")
	}
}
