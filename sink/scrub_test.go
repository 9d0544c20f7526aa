package sink

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
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
// The same with the sampled-word search off (FileOptions.PlainScrub).
func TestFileScrubsTokenAnywhere(t *testing.T) {
	for _, plain := range []bool{false, true} {
		t.Run(fmt.Sprintf("plain=%v", plain), func(t *testing.T) { testFileScrubsTokenAnywhere(t, plain) })
	}
}

func testFileScrubsTokenAnywhere(t *testing.T, plain bool) {
	var out syncBuf
	f := newFile(FileOptions{Path: "/x/traces.jsonl", Signal: pipeline.Traces, Secrets: []string{"Bearer " + scrubToken}, PlainScrub: plain}, &out)
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
	if newScrubber([]string{"short", ""}, false) != nil {
		t.Fatal("a secret under 8 bytes scrubbed")
	}
	s := newScrubber([]string{"Bearer " + scrubToken}, false)
	p := []byte("a Bearer " + scrubToken + " b")
	if n := s.scrub(p); n != 1 || !bytes.Equal(p, []byte("a Bearer "+strings.Repeat("*", len(scrubToken))+" b")) {
		t.Fatalf("scrubbed %d: %q", n, p)
	}
}

// The sampled-word search and its off switch, the plain search, mask the
// same bytes and count the same matches: on traces JSON holding the
// token's forms (bytes, JSON escape, base64 at each alignment, std and
// URL), their prefixes and suffixes, near misses, at random places,
// several secrets at once.
func TestScrubPlainSame(t *testing.T) {
	secrets := []string{"Bearer " + scrubToken, "an0ther-s3cret\\\"quoted\\\"", "Basic " + strings.Repeat("q", 40)}
	sampled, plain := newScrubber(secrets, false), newScrubber(secrets, true)
	var forms []string
	for _, p := range sampled.pats {
		forms = append(forms, string(p.b), string(p.b[1:]), string(p.b[:len(p.b)-1]), string(p.b[:8]))
	}
	text := otlpwire.AppendTraces(nil, []*pipeline.ResourceSpans{{ScopeSpans: []*pipeline.ScopeSpans{{Spans: spanSlice(okSpanWith("base"))}}}})
	rng := rand.New(rand.NewPCG(1, 2))
	found := 0
	for round := range 2000 {
		var p []byte
		for range rng.IntN(12) {
			p = append(p, text[:rng.IntN(len(text))]...)
			f := forms[rng.IntN(len(forms))]
			if rng.IntN(4) == 0 { // a near miss: one byte changed
				b := []byte(f)
				b[rng.IntN(len(b))] ^= 1
				f = string(b)
			}
			p = append(p, f...)
			if rng.IntN(3) == 0 {
				p = append(p, f...) // back to back
			}
		}
		a, b := bytes.Clone(p), bytes.Clone(p)
		na, nb := sampled.scrub(a), plain.scrub(b)
		if na != nb || !bytes.Equal(a, b) {
			t.Fatalf("round %d: sampled found %d, plain %d\ninput   %q\nsampled %q\nplain   %q", round, na, nb, p, a, b)
		}
		found += na
	}
	if found == 0 {
		t.Fatal("no round held a secret")
	}
}

// BenchmarkScrub is the cost of the scan on a write-out of 256 KiB of
// traces JSON with no token in it (the usual case): bytes a second, with
// the sampled-word search and with its off switch.
func BenchmarkScrub(b *testing.B) {
	var buf []byte
	for len(buf) < fileBufSize {
		span := okSpanWith("bench", &commonpb.KeyValue{Key: "http.url", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "https://example.com/v1/chat/completions?model=llama"}}})
		buf = otlpwire.AppendTraces(buf, []*pipeline.ResourceSpans{{ScopeSpans: []*pipeline.ScopeSpans{{Spans: spanSlice(span)}}}})
	}
	for _, plain := range []bool{false, true} {
		b.Run(fmt.Sprintf("plain=%v", plain), func(b *testing.B) {
			s := newScrubber([]string{"Bearer " + scrubToken}, plain)
			b.SetBytes(int64(len(buf)))
			b.ResetTimer()
			for range b.N {
				if s.scrub(buf) != 0 {
					b.Fatal("found a token")
				}
			}
		})
	}
}

// okSpanWith is a span of valid ids named name with attrs.
func okSpanWith(name string, attrs ...*commonpb.KeyValue) *tracepb.Span {
	return &tracepb.Span{TraceId: bytes.Repeat([]byte{1}, 16), SpanId: bytes.Repeat([]byte{2}, 8), Name: name, Attributes: attrs}
}

func spanSlice(s ...*tracepb.Span) []*tracepb.Span { return s }
