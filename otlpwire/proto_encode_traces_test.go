package otlpwire

import (
	"bytes"
	"testing"

	"github.com/otelstep/otelstep/internal/otlptest"
	"github.com/otelstep/otelstep/pipeline"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// traceFixtures are the collector's span fixtures plus messages that use
// every field of the trace protos, and edge values.
func traceFixtures(t testing.TB) [][]*tracepb.ResourceSpans {
	t.Helper()
	var out [][]*tracepb.ResourceSpans
	forLines(t, "testdata/traces.peer.jsonl", func(l []byte) {
		req, err := DecodeTraces(l)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, req.ResourceSpans)
	})
	out = append(out, otlptest.EdgeSpans()...)
	return out
}

func TestTracesEncoderMatchesProtoMarshal(t *testing.T) {
	var enc ProtoEncoder
	for i, rss := range traceFixtures(t) {
		want := &coltracepb.ExportTraceServiceRequest{ResourceSpans: rss}
		got := enc.AppendTracesRequest(nil, pipeline.TracesFromProto(rss))
		if len(got) != proto.Size(want) {
			t.Errorf("fixture %d: %d bytes, proto.Size says %d", i, len(got), proto.Size(want))
		}
		var back coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(got, &back); err != nil {
			t.Fatalf("fixture %d: does not decode: %v", i, err)
		}
		if !proto.Equal(&back, want) {
			t.Errorf("fixture %d: decodes to another message", i)
		}
		// The same encoder again (its scratch reused) gives the same bytes.
		if again := enc.AppendTracesRequest(nil, pipeline.TracesFromProto(rss)); !bytes.Equal(again, got) {
			t.Errorf("fixture %d: a second encoding differs", i)
		}
	}
}

// BenchmarkTracesEncoder against BenchmarkTracesProtoMarshal: 1000 spans of
// the load generator's shape (8 string attributes).
func BenchmarkTracesEncoder(b *testing.B) {
	rss := pipeline.TracesFromProto(otlptest.BenchSpans(1000))
	var enc ProtoEncoder
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = enc.AppendTracesRequest(buf[:0], rss)
	}
	b.ReportMetric(1000*float64(b.N)/b.Elapsed().Seconds(), "spans/s")
}

func BenchmarkTracesProtoMarshal(b *testing.B) {
	req := &coltracepb.ExportTraceServiceRequest{ResourceSpans: otlptest.BenchSpans(1000)}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = proto.MarshalOptions{}.MarshalAppend(buf[:0], req)
	}
	b.ReportMetric(1000*float64(b.N)/b.Elapsed().Seconds(), "spans/s")
}
