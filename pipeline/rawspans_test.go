package pipeline_test

import (
	"bytes"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/otelstep/otelstep/pipeline"
)

// spanRecords parses raw as repeated field 2 and decodes each record.
func spanRecords(t *testing.T, raw []byte) []*tracepb.Span {
	t.Helper()
	var out []*tracepb.Span
	for len(raw) > 0 {
		num, typ, n := protowire.ConsumeTag(raw)
		if n < 0 || num != 2 || typ != protowire.BytesType {
			t.Fatalf("raw spans: field %d type %d (n %d), want field 2 bytes", num, typ, n)
		}
		raw = raw[n:]
		v, m := protowire.ConsumeBytes(raw)
		if m < 0 {
			t.Fatal("raw spans: bad length")
		}
		s := new(tracepb.Span)
		if err := proto.Unmarshal(v, s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
		raw = raw[m:]
	}
	return out
}

// A decoded ScopeSpans carries its spans' wire bytes, and they decode to
// exactly its spans.
func TestRawSpansOfDecodedRequest(t *testing.T) {
	data, _ := proto.Marshal(fullTraces())
	b, err := pipeline.UnmarshalRequest(pipeline.Traces, data)
	if err != nil {
		t.Fatal(err)
	}
	marked := 0
	for _, rs := range b.Traces {
		for _, ss := range rs.ScopeSpans {
			if len(ss.Spans) == 0 {
				if pipeline.RawSpans(ss.Spans) != nil {
					t.Error("no spans, but raw bytes")
				}
				continue
			}
			raw := pipeline.RawSpans(ss.Spans)
			if raw == nil {
				t.Fatal("a decoded ScopeSpans is not marked")
			}
			if !bytes.Contains(data, raw) {
				t.Error("raw spans are not a range of the request")
			}
			got := spanRecords(t, raw)
			if len(got) != len(ss.Spans) {
				t.Fatalf("%d records for %d spans", len(got), len(ss.Spans))
			}
			for i := range got {
				if !proto.Equal(got[i], ss.Spans[i]) {
					t.Errorf("record %d is not span %d", i, i)
				}
			}
			marked++
		}
	}
	if marked == 0 {
		t.Fatal("fixture has no spans")
	}
}

// Only the very slice the decoder built reads as marked.
func TestRawSpansOnlyTheDecodedSlice(t *testing.T) {
	req := fullTraces()
	ss := req.ResourceSpans[0].ScopeSpans[0]
	ss.Spans = append(ss.Spans, proto.Clone(ss.Spans[0]).(*tracepb.Span)) // at least two
	data, _ := proto.Marshal(req)
	b, err := pipeline.UnmarshalRequest(pipeline.Traces, data)
	if err != nil {
		t.Fatal(err)
	}
	spans := b.Traces[0].ScopeSpans[0].Spans
	if pipeline.RawSpans(spans) == nil {
		t.Fatal("not marked")
	}
	n := len(spans)
	if pipeline.RawSpans(spans[:n:n+1]) == nil {
		t.Error("the slice itself, re-sliced to its own length and capacity, lost its mark")
	}
	for name, s := range map[string][]*tracepb.Span{
		"prefix":  spans[:n-1],
		"prefix3": spans[: n-1 : n-1],
		"suffix":  spans[1:],
		"copy":    append([]*tracepb.Span(nil), spans...),
		"built":   {{Name: "x"}},
	} {
		if pipeline.RawSpans(s) != nil {
			t.Errorf("%s reads as marked", name)
		}
	}
	// Appending writes the spare slot: the result, and the original with
	// it, read as unmarked (never as another slice's bytes).
	appended := append(spans, &tracepb.Span{})
	if pipeline.RawSpans(appended) != nil || pipeline.RawSpans(spans) != nil {
		t.Error("a slice appended to still reads as marked")
	}
}

// Spans whose records are split by another field are decoded as always but
// not marked: their bytes are not one range.
func TestRawSpansNotContiguous(t *testing.T) {
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
	b, err := pipeline.UnmarshalRequest(pipeline.Traces, req)
	if err != nil {
		t.Fatal(err)
	}
	got := b.Traces[0].ScopeSpans[0]
	if len(got.Spans) != 2 || got.Spans[0].Name != "a" || got.Spans[1].Name != "b" || got.Scope.GetName() != "lib" {
		t.Fatalf("decoded %v", got)
	}
	if pipeline.RawSpans(got.Spans) != nil {
		t.Error("spans split by the scope field read as one range")
	}
}
