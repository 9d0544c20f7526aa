package sink

import (
	"bytes"
	"context"
	"encoding/base64"
	"strings"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/otelstep/otelstep/otlpwire"
	"github.com/otelstep/otelstep/pipeline"
)

const scrubToken = "tok_9f8e7d6c5b4a39281706"

// A token an application put in its own span attributes (as a string, as
// part of a longer string and as a bytes value) and in a log body is not
// in the JSONL; the line still decodes, with the rest of it as it was.
func TestFileScrubsTokenAnywhere(t *testing.T) {
	var out syncBuf
	f := newFile(FileOptions{Path: "/x/traces.jsonl", Signal: pipeline.Traces, Secrets: []string{"Bearer " + scrubToken}}, &out)
	_ = f.Start(context.Background())
	kv := func(k string, v *commonpb.AnyValue) *commonpb.KeyValue { return &commonpb.KeyValue{Key: k, Value: v} }
	str := func(s string) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
	}
	for _, pre := range []string{"", "x", "xy"} {
		span := okSpanWith("s-"+pre,
			kv("token", str(scrubToken)),
			kv("header", str("Authorization: Bearer "+scrubToken+"; more")),
			kv("bytes", &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte(pre + scrubToken + "!")}}),
		)
		b := &pipeline.Batch{Signal: pipeline.Traces, Traces: []*pipeline.ResourceSpans{{ScopeSpans: []*pipeline.ScopeSpans{{Spans: spanSlice(span)}}}}}
		if err := f.Enqueue(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Shutdown(ctxT(patience)); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, form := range []string{scrubToken, base64.StdEncoding.EncodeToString([]byte(scrubToken))[:16]} {
		if strings.Contains(got, form) {
			t.Fatalf("the token (%q) is in the JSONL: %s", form, got)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(got), "\n") {
		req, err := otlpwire.DecodeTraces([]byte(line))
		if err != nil {
			t.Fatalf("a scrubbed line does not decode: %v\n%s", err, line)
		}
		for _, a := range req.ResourceSpans[0].ScopeSpans[0].Spans[0].Attributes {
			if v := a.GetValue().GetBytesValue(); bytes.Contains(v, []byte(scrubToken[3:len(scrubToken)-3])) {
				t.Fatalf("the token is in a bytes value: %q", v)
			}
		}
		if !strings.Contains(line, `"Authorization: Bearer `+strings.Repeat("*", len(scrubToken))+`; more"`) {
			t.Fatalf("the text around the token changed: %s", line)
		}
	}
}

// Short secrets are not scrubbed (they would mask ordinary words); the
// credentials of "Scheme credentials" are.
func TestScrubberPatterns(t *testing.T) {
	if newScrubber([]string{"short", ""}) != nil {
		t.Fatal("a secret under 8 bytes scrubbed")
	}
	s := newScrubber([]string{"Bearer " + scrubToken})
	p := []byte("a Bearer " + scrubToken + " b")
	if n := s.scrub(p); n != 1 || !bytes.Equal(p, []byte("a Bearer "+strings.Repeat("*", len(scrubToken))+" b")) {
		t.Fatalf("scrubbed %d: %q", n, p)
	}
}

// BenchmarkScrub is the cost of the scan on a write-out of 256 KiB of
// traces JSON with no token in it (the usual case): bytes a second.
func BenchmarkScrub(b *testing.B) {
	s := newScrubber([]string{"Bearer " + scrubToken})
	var buf []byte
	for len(buf) < fileBufSize {
		span := okSpanWith("bench", &commonpb.KeyValue{Key: "http.url", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "https://example.com/v1/chat/completions?model=llama"}}})
		buf = otlpwire.AppendTraces(buf, []*pipeline.ResourceSpans{{ScopeSpans: []*pipeline.ScopeSpans{{Spans: spanSlice(span)}}}})
	}
	b.SetBytes(int64(len(buf)))
	b.ResetTimer()
	for range b.N {
		if s.scrub(buf) != 0 {
			b.Fatal("found a token")
		}
	}
}

// okSpanWith is a span of valid ids named name with attrs.
func okSpanWith(name string, attrs ...*commonpb.KeyValue) *tracepb.Span {
	return &tracepb.Span{TraceId: bytes.Repeat([]byte{1}, 16), SpanId: bytes.Repeat([]byte{2}, 8), Name: name, Attributes: attrs}
}

func spanSlice(s ...*tracepb.Span) []*tracepb.Span { return s }
