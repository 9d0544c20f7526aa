package otlpwire_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/otelstep/otelstep/otlpwire"
	"github.com/otelstep/otelstep/pipeline"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// A decoded ScopeSpans keeps its spans as their records, a range of the
// request; they decode (SpanDecoder, ScopeSpans.Messages) to exactly the spans sent,
// and proto.Marshal writes them back.
func TestSpanRecordsOfDecodedRequest(t *testing.T) {
	req := fullTraces()
	data, _ := proto.Marshal(req)
	b, err := otlpwire.UnmarshalOwnedRequest(pipeline.Traces, data)
	if err != nil {
		t.Fatal(err)
	}
	var dec otlpwire.SpanDecoder
	checked := 0
	for i, rs := range b.Traces {
		for j, ss := range rs.ScopeSpans {
			want := req.ResourceSpans[i].ScopeSpans[j].Spans
			recs := ss.Records
			if len(want) == 0 {
				if len(recs) != 0 || ss.Len() != 0 {
					t.Error("no spans, but records")
				}
				continue
			}
			if !bytes.Contains(data, recs) || &recs[0] == nil {
				t.Error("span records are not a range of the request")
			}
			if n := ss.Len(); n != len(want) {
				t.Fatalf("ScopeSpans.Len %d, sent %d", n, len(want))
			}
			k := 0
			for rec := range pipeline.Records(recs).All() {
				s, err := dec.Decode(rec)
				if err != nil {
					t.Fatal(err)
				}
				if !proto.Equal(s, want[k]) {
					t.Errorf("record %d decodes to %v, sent %v", k, s, want[k])
				}
				k++
			}
			got, err := ss.Messages()
			if err != nil || len(got) != len(want) {
				t.Fatalf("Messages: %d spans, %v", len(got), err)
			}
			for k := range got {
				if !proto.Equal(got[k], want[k]) {
					t.Errorf("Messages %d differs", k)
				}
			}
			// The records are the spans' encoding as field 2 of ScopeSpans.
			back, _ := proto.Marshal(&tracepb.ScopeSpans{Scope: ss.Scope, SchemaUrl: ss.SchemaURL})
			back = append(back, ss.Records...)
			var again tracepb.ScopeSpans
			if err := proto.Unmarshal(back, &again); err != nil || !proto.Equal(&again, req.ResourceSpans[i].ScopeSpans[j]) {
				t.Errorf("the kept ScopeSpans with its records does not read back as sent (%v)", err)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("fixture has no spans")
	}
}

// Decoding one span after another reuses the scratch: no allocation per
// span once warmed up, for spans whose values are strings, numbers and
// booleans (array, kvlist and bytes values, rare, are allocated).
func TestSpanDecoderAllocatesNothing(t *testing.T) {
	str := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	attrs := []*commonpb.KeyValue{str("http.method", "GET"), str("http.route", "/api"),
		{Key: "n", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: 7}}},
		{Key: "f", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: 0.5}}},
		{Key: "b", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: true}}}}
	var recs [][]byte
	for i := range 5 {
		s := &tracepb.Span{TraceId: bytes.Repeat([]byte{byte(i)}, 16), SpanId: bytes.Repeat([]byte{2}, 8), Name: "op",
			Attributes: attrs[:2+i%4], Status: &tracepb.Status{Message: "m", Code: 2},
			Events: []*tracepb.Span_Event{{Name: "e", Attributes: attrs[:i]}},
			Links:  []*tracepb.Span_Link{{TraceId: bytes.Repeat([]byte{3}, 16), Attributes: attrs[i:]}}}
		b, _ := proto.Marshal(s)
		recs = append(recs, b)
	}
	var dec otlpwire.SpanDecoder
	run := func() {
		for _, r := range recs {
			if _, err := dec.Decode(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range 20 {
		run() // warm up: the chunks settle at a span's worth
	}
	if n := testing.AllocsPerRun(100, run); n > 0 {
		t.Errorf("%.1f allocations decoding %d spans with a warm decoder", n, len(recs))
	}
	// Log records likewise.
	var lrecs [][]byte
	for i := range 5 {
		b, _ := proto.Marshal(&logspb.LogRecord{TimeUnixNano: uint64(i), SeverityText: "INFO",
			Body: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "line"}}, Attributes: attrs[:1+i]})
		lrecs = append(lrecs, b)
	}
	var ld otlpwire.LogRecordDecoder
	runLogs := func() {
		for _, r := range lrecs {
			if _, err := ld.Decode(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range 20 {
		runLogs()
	}
	if n := testing.AllocsPerRun(100, runLogs); n > 0 {
		t.Errorf("%.1f allocations decoding %d log records with a warm decoder", n, len(lrecs))
	}
}

// Records split by another field are checked as usual and gathered into
// one buffer, in order, without the field between them.
func TestSpanRecordsNotContiguous(t *testing.T) {
	span := func(name string) []byte {
		b, _ := proto.Marshal(&tracepb.Span{Name: name, TraceId: bytes.Repeat([]byte{1}, 16), SpanId: bytes.Repeat([]byte{2}, 8)})
		return b
	}
	scope, _ := proto.Marshal(&commonpb.InstrumentationScope{Name: "lib"})
	var ss []byte
	ss = protowire.AppendTag(ss, 2, protowire.BytesType)
	ss = protowire.AppendBytes(ss, span("a"))
	ss = protowire.AppendTag(ss, 1, protowire.BytesType) // the scope between the spans
	ss = protowire.AppendBytes(ss, scope)
	ss = protowire.AppendTag(ss, 2, protowire.BytesType)
	ss = protowire.AppendBytes(ss, span("b"))
	var rs, req []byte
	rs = protowire.AppendTag(rs, 2, protowire.BytesType)
	rs = protowire.AppendBytes(rs, ss)
	req = protowire.AppendTag(req, 1, protowire.BytesType)
	req = protowire.AppendBytes(req, rs)
	b, err := otlpwire.UnmarshalRequest(pipeline.Traces, req)
	if err != nil {
		t.Fatal(err)
	}
	got := b.Traces[0].ScopeSpans[0]
	spans, err := got.Messages()
	if err != nil || len(spans) != 2 || spans[0].Name != "a" || spans[1].Name != "b" || got.Scope.GetName() != "lib" {
		t.Fatalf("decoded %v (%v)", spans, err)
	}
	var want []byte
	for _, n := range []string{"a", "b"} {
		want = protowire.AppendTag(want, 2, protowire.BytesType)
		want = protowire.AppendBytes(want, span(n))
	}
	if !bytes.Equal(got.Records, want) {
		t.Errorf("records %x, want %x", got.Records, want)
	}
}

// SplitRecords cuts after the k-th span record, skipping other fields
// as Records.All does, and the head cannot be appended into the tail.
func TestSplitSpanRecords(t *testing.T) {
	var recs []byte
	for _, n := range []string{"a", "b", "c"} {
		b, _ := proto.Marshal(&tracepb.Span{Name: n})
		recs = protowire.AppendTag(recs, 2, protowire.BytesType)
		recs = protowire.AppendBytes(recs, b)
		recs = protowire.AppendTag(recs, 9, protowire.VarintType) // not a span
		recs = protowire.AppendVarint(recs, 1)
	}
	if n := pipeline.Records(recs).Len(); n != 3 {
		t.Fatalf("%d spans, want 3", n)
	}
	for k := 0; k <= 4; k++ {
		head, tail := pipeline.Records(recs).Split(k)
		want := min(k, 3)
		if pipeline.Records(head).Len() != want || pipeline.Records(tail).Len() != 3-want {
			t.Errorf("k=%d: %d + %d spans", k, pipeline.Records(head).Len(), pipeline.Records(tail).Len())
		}
		if !bytes.Equal(append(append([]byte(nil), head...), tail...), recs) {
			t.Errorf("k=%d: head and tail are not the records", k)
		}
		if k > 0 && k < 3 && cap(head) != len(head) {
			t.Errorf("k=%d: head has spare capacity into the tail", k)
		}
	}
}

// SpanDecoder does not check UTF-8 again (the decoder checked the records
// it kept): a string that is not UTF-8, in a record from elsewhere, comes
// back as it is rather than failing, while the decoder refuses it.
func TestSpanDecoderTrustsUTF8(t *testing.T) {
	var rec []byte
	rec = protowire.AppendTag(rec, 5, protowire.BytesType)
	rec = protowire.AppendString(rec, "bad \xff name")
	var dec otlpwire.SpanDecoder
	s, err := dec.Decode(rec)
	if err != nil || s.Name != "bad \xff name" {
		t.Fatalf("Decode: %q, %v", s.GetName(), err)
	}
	var ss, rs, req []byte
	ss = protowire.AppendTag(ss, 2, protowire.BytesType)
	ss = protowire.AppendBytes(ss, rec)
	rs = protowire.AppendTag(rs, 2, protowire.BytesType)
	rs = protowire.AppendBytes(rs, ss)
	req = protowire.AppendTag(req, 1, protowire.BytesType)
	req = protowire.AppendBytes(req, rs)
	if _, err := otlpwire.UnmarshalRequest(pipeline.Traces, req); err == nil || !strings.Contains(err.Error(), "UTF-8") {
		t.Fatalf("the decoder accepted a span name that is not UTF-8 (%v)", err)
	}
}
