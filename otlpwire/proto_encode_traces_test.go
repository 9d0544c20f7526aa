package otlpwire

import (
	"bytes"
	"testing"

	"github.com/otelstep/otelstep/pipeline"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
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
	str := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	full := &tracepb.Span{
		TraceId: bytes.Repeat([]byte{0xab}, 16), SpanId: bytes.Repeat([]byte{0xcd}, 8), ParentSpanId: []byte{1, 2, 3, 4, 5, 6, 7, 8},
		TraceState: "k=v", Name: "op", Kind: tracepb.Span_SPAN_KIND_CONSUMER, Flags: 0x101,
		StartTimeUnixNano: 1, EndTimeUnixNano: 1<<63 + 5,
		Attributes: []*commonpb.KeyValue{str("a", "b"), {Key: "i", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: -7}}},
			{Key: "arr", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{{Value: &commonpb.AnyValue_BoolValue{BoolValue: true}}}}}}},
			{Key: "nil-value"}},
		DroppedAttributesCount: 3,
		Events:                 []*tracepb.Span_Event{{TimeUnixNano: 9, Name: "ev", Attributes: []*commonpb.KeyValue{str("e", "1")}, DroppedAttributesCount: 1}, {}},
		DroppedEventsCount:     2,
		Links:                  []*tracepb.Span_Link{{TraceId: bytes.Repeat([]byte{9}, 16), SpanId: bytes.Repeat([]byte{8}, 8), TraceState: "x", Attributes: []*commonpb.KeyValue{str("l", "2")}, DroppedAttributesCount: 4, Flags: 1}, {}},
		DroppedLinksCount:      5,
		Status:                 &tracepb.Status{Message: "bad", Code: tracepb.Status_STATUS_CODE_ERROR},
	}
	out = append(out,
		[]*tracepb.ResourceSpans{{
			Resource:  &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "s")}, DroppedAttributesCount: 1},
			SchemaUrl: "https://schema/1",
			ScopeSpans: []*tracepb.ScopeSpans{
				{Scope: &commonpb.InstrumentationScope{Name: "lib", Version: "1", Attributes: []*commonpb.KeyValue{str("x", "y")}, DroppedAttributesCount: 2},
					SchemaUrl: "https://schema/2", Spans: []*tracepb.Span{full, {}, {Status: &tracepb.Status{}}, {Kind: tracepb.Span_SpanKind(-1)}}},
				{}, // empty scope spans
			},
		}, {}}, // a resource-less ResourceSpans
		nil,
	)
	return out
}

func TestTracesEncoderMatchesProtoMarshal(t *testing.T) {
	var enc MetricsProtoEncoder
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
	rss := pipeline.TracesFromProto(benchSpans(1000))
	var enc MetricsProtoEncoder
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = enc.AppendTracesRequest(buf[:0], rss)
	}
	b.ReportMetric(1000*float64(b.N)/b.Elapsed().Seconds(), "spans/s")
}

func BenchmarkTracesProtoMarshal(b *testing.B) {
	req := &coltracepb.ExportTraceServiceRequest{ResourceSpans: benchSpans(1000)}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = proto.MarshalOptions{}.MarshalAppend(buf[:0], req)
	}
	b.ReportMetric(1000*float64(b.N)/b.Elapsed().Seconds(), "spans/s")
}

func benchSpans(n int) []*tracepb.ResourceSpans {
	spans := make([]*tracepb.Span, n)
	for i := range spans {
		attrs := make([]*commonpb.KeyValue, 8)
		for j := range attrs {
			attrs[j] = &commonpb.KeyValue{Key: "attr." + string(rune('a'+j)), Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "abcdefghijklmnop"}}}
		}
		spans[i] = &tracepb.Span{TraceId: bytes.Repeat([]byte{byte(i)}, 16), SpanId: bytes.Repeat([]byte{byte(i)}, 8), Name: "op",
			Kind: tracepb.Span_SPAN_KIND_SERVER, StartTimeUnixNano: uint64(i), EndTimeUnixNano: uint64(i) + 1e6, Attributes: attrs, Status: &tracepb.Status{}}
	}
	return []*tracepb.ResourceSpans{{Resource: &resourcepb.Resource{}, ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}}}}
}
