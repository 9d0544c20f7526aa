package sink

import (
	"bytes"
	"testing"

	"github.com/otelstep/otelstep/otlpjson"
	"github.com/otelstep/otelstep/pipeline"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// traceFixtures are the collector's span fixtures plus messages that use
// every field of the trace protos, and edge values.
func traceFixtures(t testing.TB) [][]*tracepb.ResourceSpans {
	t.Helper()
	var out [][]*tracepb.ResourceSpans
	forLines(t, "testdata/traces.peer.jsonl", func(l []byte) {
		req, err := otlpjson.DecodeTraces(l)
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
		got := enc.AppendTracesRequest(nil, rss)
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
		if again := enc.AppendTracesRequest(nil, rss); !bytes.Equal(again, got) {
			t.Errorf("fixture %d: a second encoding differs", i)
		}
	}
}

func TestEncodeRequestTraces(t *testing.T) {
	rss := traceFixtures(t)[0]
	var out bytes.Buffer
	if err := EncodeRequest(&pipeline.Batch{Signal: pipeline.Traces, Traces: rss}, false, &out); err != nil {
		t.Fatal(err)
	}
	b, err := pipeline.UnmarshalRequest(pipeline.Traces, out.Bytes())
	if err == nil {
		b.Traces, err = pipeline.ExpandSpans(b.Traces)
	}
	if err != nil || !proto.Equal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: b.Traces}, &coltracepb.ExportTraceServiceRequest{ResourceSpans: rss}) {
		t.Fatalf("round trip through EncodeRequest: %v", err)
	}
}

// BenchmarkTracesEncoder against BenchmarkTracesProtoMarshal: 1000 spans of
// the load generator's shape (8 string attributes).
func BenchmarkTracesEncoder(b *testing.B) {
	rss := benchSpans(1000)
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

// Received spans go out as the bytes they came in (pipeline.Records), and
// a batch split inside a ScopeSpans still encodes each half's own spans.
func TestTracesEncoderForwardsReceivedSpans(t *testing.T) {
	var enc MetricsProtoEncoder
	for i, rss := range traceFixtures(t) {
		want := &coltracepb.ExportTraceServiceRequest{ResourceSpans: rss}
		data, err := proto.MarshalOptions{Deterministic: true}.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		b, err := pipeline.UnmarshalRequest(pipeline.Traces, data)
		if err != nil {
			t.Fatalf("fixture %d: %v", i, err)
		}
		marked := 0
		for _, rs := range b.Traces {
			for _, ss := range rs.ScopeSpans {
				if len(pipeline.Records(ss)) > 0 {
					marked++
				}
			}
		}
		// The JSONL line of received spans (decoded from their records
		// as they are encoded) is the line of the same spans as messages.
		if js, want := otlpjson.AppendTraces(nil, b.Traces), otlpjson.AppendTraces(nil, rss); !bytes.Equal(js, want) {
			t.Errorf("fixture %d: JSON of the received spans differs from the JSON of the spans sent\ngot  %.300s\nwant %.300s", i, js, want)
		}
		got := enc.AppendTracesRequest(nil, b.Traces)
		if !bytes.Equal(got, data) {
			t.Errorf("fixture %d (%d ScopeSpans forwarded raw): re-encoding differs from the %d bytes received (%d)", i, marked, len(data), len(got))
		}
		total := b.Items()
		if total < 2 {
			continue
		}
		if marked == 0 {
			t.Errorf("fixture %d: nothing marked", i)
		}
		for k := 1; k < total; k++ {
			head, rest := splitBatch(b, k)
			if head.Items() != k || rest.Items() != total-k {
				t.Fatalf("fixture %d split at %d: %d + %d spans", i, k, head.Items(), rest.Items())
			}
			var back []*tracepb.ResourceSpans
			for _, part := range []*pipeline.Batch{head, rest} {
				var req coltracepb.ExportTraceServiceRequest
				if err := proto.Unmarshal(enc.AppendTracesRequest(nil, part.Traces), &req); err != nil {
					t.Fatal(err)
				}
				if n := (&pipeline.Batch{Signal: pipeline.Traces, Traces: req.ResourceSpans}).Items(); n != part.Items() {
					t.Fatalf("fixture %d split at %d: a part of %d spans encodes %d", i, k, part.Items(), n)
				}
				back = append(back, req.ResourceSpans...)
				// Each half's JSON holds its own spans too.
				js, err := otlpjson.DecodeTraces(otlpjson.AppendTraces(nil, part.Traces))
				if err != nil {
					t.Fatal(err)
				}
				if n := (&pipeline.Batch{Signal: pipeline.Traces, Traces: js.ResourceSpans}).Items(); n != part.Items() {
					t.Fatalf("fixture %d split at %d: a part of %d spans has %d in its JSON", i, k, part.Items(), n)
				}
			}
			var wantSpans, gotSpans []*tracepb.Span
			for _, rs := range want.ResourceSpans {
				for _, ss := range rs.ScopeSpans {
					wantSpans = append(wantSpans, ss.Spans...)
				}
			}
			for _, rs := range back {
				for _, ss := range rs.ScopeSpans {
					gotSpans = append(gotSpans, ss.Spans...)
				}
			}
			if len(gotSpans) != len(wantSpans) {
				t.Fatalf("fixture %d split at %d: %d spans, want %d", i, k, len(gotSpans), len(wantSpans))
			}
			for j := range wantSpans {
				if !proto.Equal(gotSpans[j], wantSpans[j]) {
					t.Fatalf("fixture %d split at %d: span %d differs", i, k, j)
				}
			}
		}
	}
}

// A ScopeSpans holding both kinds of spans, messages first and then
// records (as after a producer appends spans to a received scope), encodes
// and splits as the same spans all as messages would.
func TestMixedSpansAndRecords(t *testing.T) {
	spans := benchSpans(6)[0].ScopeSpans[0].Spans
	var recs []byte
	for _, s := range spans[2:] {
		b, err := proto.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		recs = protowire.AppendTag(recs, 2, protowire.BytesType)
		recs = protowire.AppendBytes(recs, b)
	}
	mixed := &tracepb.ScopeSpans{Spans: spans[:2:2]}
	pipeline.SetRecords(mixed, recs)
	mixedRS := []*tracepb.ResourceSpans{{Resource: &resourcepb.Resource{}, ScopeSpans: []*tracepb.ScopeSpans{mixed}}}
	plainRS := []*tracepb.ResourceSpans{{Resource: &resourcepb.Resource{}, ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}}}}
	if n := pipeline.ScopeSpansCount(mixed); n != len(spans) {
		t.Fatalf("ScopeSpansCount %d, want %d", n, len(spans))
	}
	var enc MetricsProtoEncoder
	if got, want := enc.AppendTracesRequest(nil, mixedRS), enc.AppendTracesRequest(nil, plainRS); !bytes.Equal(got, want) {
		t.Error("protobuf of the mixed scope differs")
	}
	if got, want := otlpjson.AppendTraces(nil, mixedRS), otlpjson.AppendTraces(nil, plainRS); !bytes.Equal(got, want) {
		t.Errorf("JSON of the mixed scope differs\ngot  %.200s\nwant %.200s", got, want)
	}
	b := &pipeline.Batch{Signal: pipeline.Traces, Traces: mixedRS}
	plain := &pipeline.Batch{Signal: pipeline.Traces, Traces: plainRS}
	for k := 1; k < len(spans); k++ {
		h, r := splitBatch(b, k)
		ph, pr := splitBatch(plain, k)
		for _, pair := range [][2]*pipeline.Batch{{h, ph}, {r, pr}} {
			if got, want := otlpjson.AppendTraces(nil, pair[0].Traces), otlpjson.AppendTraces(nil, pair[1].Traces); !bytes.Equal(got, want) {
				t.Fatalf("split at %d: JSON differs\ngot  %.200s\nwant %.200s", k, got, want)
			}
		}
	}
}
