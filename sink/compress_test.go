package sink

import (
	"bufio"
	"bytes"
	stdgzip "compress/gzip"
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/otelstep/otelstep/batch"
	"github.com/otelstep/otelstep/otlpwire"
	"github.com/otelstep/otelstep/pipeline"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// decompressBody reads a request body of the given Content-Encoding, as a
// backend does: gzip, zstd, snappy (the block format) or "" (plain).
func decompressBody(encoding string, r io.Reader) ([]byte, error) {
	switch encoding {
	case "":
		return io.ReadAll(r)
	case "gzip":
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, err
		}
		return io.ReadAll(zr)
	case "zstd":
		zr, err := zstd.NewReader(r)
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		return io.ReadAll(zr)
	case "snappy":
		b, err := io.ReadAll(r)
		if err != nil {
			return nil, err
		}
		return snappy.Decode(nil, b)
	}
	return nil, fmt.Errorf("unknown Content-Encoding %q", encoding)
}

// compressions are the exporter's settings the tests send with.
var compressions = []Compression{
	DefaultCompression, {Type: "gzip", Level: 1}, {Type: "gzip", Level: 9}, {Type: "gzip", Level: -2},
	{Type: "zstd"}, {Type: "zstd", Level: 9}, {Type: "snappy"},
}

// Every signal's body, in each compression, decompresses to exactly the
// plain body, and the encoder kept between batches produces the same the
// second time. A batch of many resources goes through a streaming
// compressor a piece at a time, never held whole as raw protobuf.
func TestEncodeRequestEachCompression(t *testing.T) {
	// hugeResource: one metrics resource of several pieces goes through
	// the compressor in pieces too (ProtoEncoder.flush).
	small := []*pipeline.Batch{randomSpans(300), bench1000(), {Signal: pipeline.Logs, Logs: pipeline.LogsFromProto(logsFixture(t))}}
	big := []*pipeline.Batch{hugeResource(40_000)}
	for _, b := range bigBatches(t) {
		big = append(big, b)
	}
	for _, c := range compressions {
		var re requestEncoder
		batches := small
		if c == DefaultCompression || c.Type == "zstd" && c.Level == 0 {
			// The big batches, in pieces, for one streamed compressor
			// of each library (the rest compress the same way).
			batches = append(slices.Clip(small), big...)
		}
		for _, b := range batches {
			var plain, body bytes.Buffer
			if err := EncodeRequest(b, Compression{}, &plain); err != nil {
				t.Fatal(err)
			}
			for round := range 2 {
				if err := re.encode(b, c, &body); err != nil {
					t.Fatal(err)
				}
				got, err := decompressBody(c.Encoding(), bytes.NewReader(body.Bytes()))
				if err != nil {
					t.Fatalf("%v %v round %d: %v", c, b.Signal, round, err)
				}
				if !bytes.Equal(got, plain.Bytes()) {
					t.Fatalf("%v %v round %d: decompressed body differs from the plain one (%d vs %d bytes)", c, b.Signal, round, len(got), plain.Len())
				}
				if body.Len() >= plain.Len() && c.Level != -2 {
					t.Errorf("%v %v: the body did not shrink: %d >= %d", c, b.Signal, body.Len(), plain.Len())
				}
				// (An encoder that held the whole body would have
				// dropped it as over maxKeptRaw: the pieces are what
				// stays, about one piece.)
				if c.Type != "snappy" && plain.Len() > 4*compressPiece && (cap(re.raw) == 0 || cap(re.raw) > min(plain.Len()/2, 2*compressPiece)) {
					t.Errorf("%v %v: %d bytes of raw protobuf kept for a %d-byte body: not encoded in pieces", c, b.Signal, cap(re.raw), plain.Len())
				}
			}
		}
	}
}

// The exporter sends each compression with its Content-Encoding, which a
// backend decodes (the test backend checks both).
func TestHTTPSendsEachCompression(t *testing.T) {
	for _, c := range append(compressions, Compression{Type: "none"}) {
		t.Run(strings.ReplaceAll(c.String(), " ", "_"), func(t *testing.T) {
			be := newBackend(t, nil)
			be.encoding = c.Type
			h, logs := newTestHTTP(t, be.URL(), HTTPOptions{Compression: c.Type, CompressionLevel: c.Level})
			if got := h.Compression(); got != c {
				t.Fatalf("Compression() = %+v, want %+v", got, c)
			}
			_ = h.Start(context.Background())
			for i := range 3 {
				if err := h.Enqueue(context.Background(), metricsBatch(fmt.Sprint(i), 10)); err != nil {
					t.Fatal(err)
				}
			}
			if err := h.Shutdown(ctxT(patience)); err != nil {
				t.Fatal(err)
			}
			if st := h.Stats(); st.SentItems != 30 || st.Failed != 0 {
				t.Fatalf("stats %+v", st)
			}
			if got := be.got(); len(got) != 3 {
				t.Fatalf("backend decoded %d requests, want 3", len(got))
			}
			if !strings.Contains(logs.String(), "compression="+quoteIfSpace(c.String())) {
				t.Errorf("the start line does not name the compression %q: %s", c, logs.String())
			}
		})
	}
}

func quoteIfSpace(s string) string {
	if strings.Contains(s, " ") {
		return fmt.Sprintf("%q", s)
	}
	return s
}

func TestHTTPRefusesUnknownCompression(t *testing.T) {
	for _, c := range []Compression{{Type: "lz4"}, {Type: "deflate"}, {Type: "gzip", Level: 10}, {Type: "gzip", Level: -3}, {Type: "snappy", Level: 1}, {Type: "none", Level: 6}} {
		_, err := NewHTTP(HTTPOptions{Name: "otlp_http/x", Endpoint: "http://127.0.0.1:1", Compression: c.Type, CompressionLevel: c.Level})
		if err == nil || !strings.Contains(err.Error(), "otlp_http/x") || !strings.Contains(err.Error(), c.Type) {
			t.Errorf("%+v: error %v, want one naming the exporter and the type", c, err)
		}
	}
}

// The collector's default level is the standard library's -1, level 6;
// the compression library used here would read -1 as level 5.
func TestCompressionDefaultLevels(t *testing.T) {
	for c, want := range map[Compression]string{
		DefaultCompression:        "gzip level 6",
		{Type: "gzip", Level: -1}: "gzip level 6",
		{Type: "gzip", Level: 1}:  "gzip level 1",
		{Type: "zstd"}:            fmt.Sprintf("zstd level %d", zstd.SpeedFastest),
		{Type: "zstd", Level: 3}:  fmt.Sprintf("zstd level %d", zstd.SpeedDefault),
		{Type: "snappy"}:          "snappy",
		{Type: "none"}:            "none",
		{}:                        "none",
	} {
		if got := c.String(); got != want {
			t.Errorf("%+v: %q, want %q", c, got, want)
		}
	}
}

// telemetrygenSpans is a traces request shaped like telemetrygen's: the
// fixture's spans (which telemetrygen made) in one resource and scope, n of
// them, each with random trace and span ids and its own timestamps.
func telemetrygenSpans(t testing.TB, n int) *pipeline.Batch {
	t.Helper()
	base := fixtureTraces(t)
	var tmpl []*tracepb.Span
	for _, rs := range base {
		for _, ss := range rs.ScopeSpans {
			tmpl = append(tmpl, ss.Spans...)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	id := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	rs := proto.Clone(base[0]).(*tracepb.ResourceSpans)
	ss := rs.ScopeSpans[0]
	ss.Spans = nil
	ts := uint64(1_780_000_000_000_000_000)
	for i := range n {
		s := proto.Clone(tmpl[i%len(tmpl)]).(*tracepb.Span)
		s.TraceId, s.SpanId = id(16), id(8)
		if len(s.ParentSpanId) > 0 {
			s.ParentSpanId = id(8)
		}
		ts += uint64(r.IntN(1e6))
		d := s.EndTimeUnixNano - s.StartTimeUnixNano
		s.StartTimeUnixNano, s.EndTimeUnixNano = ts, ts+d+uint64(r.IntN(1e4))
		ss.Spans = append(ss.Spans, s)
	}
	return &pipeline.Batch{Signal: pipeline.Traces, Traces: pipeline.TracesFromProto([]*tracepb.ResourceSpans{rs})}
}

func fixtureTraces(t testing.TB) []*tracepb.ResourceSpans {
	t.Helper()
	var out []*tracepb.ResourceSpans
	forLines(t, "testdata/traces.peer.jsonl", func(l []byte) {
		req, err := otlpwire.DecodeTraces(l)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, req.ResourceSpans...)
	})
	return out
}

type namedBatch struct {
	name string
	b    *pipeline.Batch
}

// referenceRequests are the requests whose size through the collector's
// default gzip testdata/collector_gzip_sizes.txt records.
func referenceRequests(t testing.TB) []namedBatch {
	return []namedBatch{
		{"traces.peer.jsonl", &pipeline.Batch{Signal: pipeline.Traces, Traces: pipeline.TracesFromProto(fixtureTraces(t))}},
		{"telemetrygen-1800-spans", telemetrygenSpans(t, 1800)},
		{"random-1000-spans", randomSpans(1000)},
		{"logs.peer.jsonl", &pipeline.Batch{Signal: pipeline.Logs, Logs: pipeline.LogsFromProto(logsFixture(t))}},
		{"metrics-28-targets", fixtureTargets(t, 28)},
		{"random-1000-points", randomPoints(1000)},
		{"spanmetrics.peer.jsonl", fixtureMetrics(t, 1, "testdata/spanmetrics.peer.jsonl")},
	}
}

var updateGzipReference = flag.Bool("update-gzip-reference", false, "rewrite testdata/collector_gzip_sizes.txt with the collector's default gzip")

const gzipReferenceFile = "testdata/collector_gzip_sizes.txt"

// collectorGzip is what the collector's otlphttp exporter does to a body
// by default (confighttp's compressor): the standard library's
// compress/gzip at DefaultCompression (-1), a writer from a pool reset to
// the output, the body copied in, closed.
func collectorGzip(raw []byte) int {
	var out bytes.Buffer
	zw, _ := stdgzip.NewWriterLevel(nil, stdgzip.DefaultCompression)
	zw.Reset(&out)
	_, _ = io.Copy(zw, bytes.NewReader(raw))
	_ = zw.Close()
	return out.Len()
}

// The exporter's default gzip of each reference request is within 5% of
// the size the collector's default gives the same protobuf bytes, recorded
// once in testdata (its README says how). The raw size is recorded too, so
// that a change of the encoder or the fixtures, which changes what is
// compressed, shows here and the reference is made anew.
func TestGzipSizeAsCollectors(t *testing.T) {
	type ref struct{ raw, gz int }
	want := map[string]ref{}
	if !*updateGzipReference {
		f, err := os.Open(gzipReferenceFile)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var name string
			var r ref
			if strings.HasPrefix(sc.Text(), "#") {
				continue
			}
			if _, err := fmt.Sscan(sc.Text(), &name, &r.raw, &r.gz); err != nil {
				t.Fatalf("%s: %q: %v", gzipReferenceFile, sc.Text(), err)
			}
			want[name] = r
		}
	}
	var lines strings.Builder
	lines.WriteString("# request raw_protobuf_bytes collector_default_gzip_bytes (go test ./sink -run TestGzipSizeAsCollectors -update-gzip-reference)\n")
	for _, rq := range referenceRequests(t) {
		var raw, gz bytes.Buffer
		if err := EncodeRequest(rq.b, Compression{}, &raw); err != nil {
			t.Fatal(err)
		}
		if err := EncodeRequest(rq.b, DefaultCompression, &gz); err != nil {
			t.Fatal(err)
		}
		if *updateGzipReference {
			fmt.Fprintf(&lines, "%s %d %d\n", rq.name, raw.Len(), collectorGzip(raw.Bytes()))
			continue
		}
		r, ok := want[rq.name]
		if !ok {
			t.Errorf("%s: no reference size in %s", rq.name, gzipReferenceFile)
			continue
		}
		if raw.Len() != r.raw {
			t.Errorf("%s: %d bytes of protobuf, the reference was made from %d: make it anew (-update-gzip-reference)", rq.name, raw.Len(), r.raw)
			continue
		}
		ratio := float64(gz.Len()) / float64(r.gz)
		t.Logf("%s: %d bytes of protobuf, gzipped %d, the collector's %d: %.3f×", rq.name, raw.Len(), gz.Len(), r.gz, ratio)
		if ratio > 1.05 {
			t.Errorf("%s: gzipped to %d bytes, %.3f× the collector's %d", rq.name, gz.Len(), ratio, r.gz)
		}
	}
	if *updateGzipReference {
		if err := os.WriteFile(gzipReferenceFile, []byte(lines.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A gzip request gathered from several batches is one gzip member that any
// inflater reads whole (the standard library's, told not to look past the
// first member), holding the batches' requests one after another, the
// second time from the encoder as the first left it; across the batches'
// one history it is no bigger than the collector's default gzip of the
// whole request (its batches of 100 spans, as an OTLP receiver's requests
// make them) by more than 5%.
func TestGatheredGzipIsOneStream(t *testing.T) {
	var batches []*pipeline.Batch
	for rest := randomSpans(1000); rest != nil; {
		var head *pipeline.Batch
		head, rest = batch.Split(rest, 100)
		batches = append(batches, head)
	}
	var raw, one bytes.Buffer
	for _, b := range batches {
		if err := EncodeRequest(b, Compression{}, &one); err != nil {
			t.Fatal(err)
		}
		raw.Write(one.Bytes())
	}
	var re requestEncoder
	var body bytes.Buffer
	for round := range 2 {
		if err := re.begin(DefaultCompression, pipeline.Traces, false, &body); err != nil {
			t.Fatal(err)
		}
		for _, b := range batches {
			if err := re.add(b); err != nil {
				t.Fatal(err)
			}
		}
		if err := re.end(); err != nil {
			t.Fatal(err)
		}
		in := bytes.NewReader(body.Bytes())
		zr, err := stdgzip.NewReader(in)
		if err != nil {
			t.Fatal(err)
		}
		zr.Multistream(false)
		got, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if !bytes.Equal(got, raw.Bytes()) {
			t.Fatalf("round %d: %d bytes decoded, want the batches' %d", round, len(got), raw.Len())
		}
		if in.Len() != 0 {
			t.Fatalf("round %d: %d bytes past the first gzip member", round, in.Len())
		}
	}
	ratio := float64(body.Len()) / float64(collectorGzip(raw.Bytes()))
	t.Logf("%d batches, %d bytes, %.3f× the collector's", len(batches), body.Len(), ratio)
	if ratio > 1.05 {
		t.Errorf("%.3f× the collector's bytes", ratio)
	}
}

// Metrics batches the scraper made and other metrics batches go in
// requests of their own, however close they come: the others are
// compressed by the collector's own gzip (the standard library's, level 6),
// so the backend gets the collector's bytes for the collector's protobuf;
// the scraper's by the compression library's level 6.
func TestHTTPCompressesScrapedMetricsApart(t *testing.T) {
	be := newBackend(t, nil)
	h, _ := newTestHTTP(t, be.URL(), HTTPOptions{RequestItems: 1000, RequestWait: time.Hour})
	_ = h.Start(context.Background())
	batches := []*pipeline.Batch{scraped(metricsBatch("s1", 10)), scraped(metricsBatch("s2", 10)), metricsBatch("r1", 10), metricsBatch("r2", 10), scraped(metricsBatch("s3", 10))}
	for _, b := range batches {
		if err := h.Enqueue(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Shutdown(ctxT(patience)); err != nil {
		t.Fatal(err)
	}
	reqs := be.Accepted()
	var got []string
	for _, r := range reqs {
		ids := ""
		for _, rm := range r.Metrics.GetResourceMetrics() {
			ids += batchID(&pipeline.Batch{Metrics: []*metricspb.ResourceMetrics{rm}})
		}
		got = append(got, ids)
	}
	// The workers send side by side: the requests' order is the backend's.
	if want := []string{"r1r2", "s1s2", "s3"}; !slices.Equal(slices.Sorted(slices.Values(got)), want) {
		t.Fatalf("requests hold %q, want %q in any order", got, want)
	}
	for i, r := range reqs {
		var lib bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&lib, 6)
		zw.Write(r.Body)
		zw.Close()
		want, by := lib.Len(), "the compression library's level 6"
		if got[i][0] == 'r' {
			want, by = collectorGzip(r.Body), "the collector's gzip"
		}
		if r.WireBytes != want {
			t.Errorf("request %d (%s): %d bytes on the wire, %s gives %d", i+1, got[i], r.WireBytes, by, want)
		}
	}
}

// Where the two kinds are compressed alike (here zstd), they share
// requests as any batches of a signal do.
func TestHTTPGathersScrapedMetricsCompressedAlike(t *testing.T) {
	be := newBackend(t, nil)
	be.encoding = "zstd"
	h, _ := newTestHTTP(t, be.URL(), HTTPOptions{Compression: "zstd", RequestItems: 1000, RequestWait: time.Hour})
	_ = h.Start(context.Background())
	for _, b := range []*pipeline.Batch{scraped(metricsBatch("s1", 10)), metricsBatch("r1", 10), scraped(metricsBatch("s2", 10))} {
		if err := h.Enqueue(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Shutdown(ctxT(patience)); err != nil {
		t.Fatal(err)
	}
	if reqs := be.Accepted(); len(reqs) != 1 || len(reqs[0].Metrics.GetResourceMetrics()) != 3 {
		t.Fatalf("%d requests, want the 3 batches in one", len(reqs))
	}
}
