package bench

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/otelstep/otelstep/otlpwire"
	"github.com/otelstep/otelstep/pipeline"
	"github.com/otelstep/otelstep/scraper"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

const textType = "text/plain; version=0.0.4; charset=utf-8"

// samples counts the page's samples as textparse sees them.
func samples(b testing.TB, page []byte) int {
	p, err := textparse.New(page, textType, labels.NewSymbolTable(), textparse.ParserOptions{})
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for {
		e, err := p.Next()
		if err == io.EOF {
			return n
		}
		if err != nil {
			b.Fatal(err)
		}
		if e == textparse.EntrySeries {
			n++
		}
	}
}

// benchScrapePath runs the scrape path on the page. With shift, the scrapes
// cycle through copies of the page with every value changed (ShiftValues),
// as the bench tool's targets serve them; without, every scrape sees the
// same bytes, the best case for the converter's line cache.
func benchScrapePath(b *testing.B, file string, shift bool) {
	page, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	benchScrapePage(b, page, shift)
}

// benchScrapePage is benchScrapePath on a page in hand.
func benchScrapePage(b *testing.B, page []byte, shift bool) {
	n := samples(b, page)
	pages := [][]byte{page}
	if shift {
		pages = pages[:0]
		for k := int64(1); k <= 16; k++ {
			pages = append(pages, ShiftValues(page, k))
		}
	}
	// The attribute sets shared with the encoders, as the service does.
	shared := pipeline.NewSharedAttrs()
	conv := scraper.NewSharingConverter(scraper.Target{JobName: "bench", Address: "127.0.0.1:18200", Scheme: "http", MetricsPath: "/metrics",
		Labels: map[string]string{"gym_service": "bench"}, Interval: 15 * time.Second, Timeout: 10 * time.Second, HonorTimestamps: true}, shared)
	var pb, js []byte
	var zbuf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&zbuf, 6)       // the exporter's default level (sink.DefaultCompression)
	enc := otlpwire.ProtoEncoder{Shared: shared} // long-lived, as each sink's: its buffers are reused
	jenc := otlpwire.MetricsEncoder{Shared: shared}
	ts := time.Now()
	b.ReportAllocs()
	b.SetBytes(int64(len(page)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ts = ts.Add(15 * time.Second)
		rms, leases, err := conv.ConvertLeased(pages[i%len(pages)], textType, ts, 0)
		if err != nil {
			b.Fatal(err)
		}
		pb = enc.AppendMetricsRequest(pb[:0], rms)
		zbuf.Reset()
		zw.Reset(&zbuf)
		_, _ = zw.Write(pb)
		_ = zw.Close()
		js = jenc.AppendMetrics(js[:0], rms, "Authorization")
		// Both sinks are done with it: the scrape's memory goes back, as
		// the pipeline's last release gives it back.
		(&pipeline.Batch{Leases: leases}).Release()
	}
	b.StopTimer()
	perOp := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(n)/perOp, "samples/s")
	b.ReportMetric(float64(len(js))/float64(n), "jsonB/sample")
	b.ReportMetric(float64(zbuf.Len())/float64(n), "gzipB/sample")
}

// BenchmarkScrapePath: parse -> convert -> protobuf+gzip and OTLP/JSON, on
// one core's worth of steady-state scrapes of the same target; the Changing
// forms see new values every scrape, as from a live target.
func BenchmarkScrapePathVLLM(b *testing.B) { benchScrapePath(b, "testdata/vllm.txt", false) }
func BenchmarkScrapePathNode(b *testing.B) { benchScrapePath(b, "testdata/node.txt", false) }
func BenchmarkScrapePathDCGM(b *testing.B) { benchScrapePath(b, "testdata/dcgm.txt", false) }

func BenchmarkScrapePathChangingVLLM(b *testing.B) { benchScrapePath(b, "testdata/vllm.txt", true) }
func BenchmarkScrapePathChangingNode(b *testing.B) { benchScrapePath(b, "testdata/node.txt", true) }
func BenchmarkScrapePathChangingDCGM(b *testing.B) { benchScrapePath(b, "testdata/dcgm.txt", true) }

// BenchmarkScrapePathGen is one target of the issue's load (`bench scrape
// --pages gen:20000:5`): 20,000 series, a quarter of them histograms, the
// same values every scrape (Frozen) or new ones (Changing).
func BenchmarkScrapePathGenFrozen(b *testing.B) {
	benchScrapePage(b, ShiftValues(GenPage(20000, 5).Body, 1), false)
}
func BenchmarkScrapePathGenChanging(b *testing.B) { benchScrapePage(b, GenPage(20000, 5).Body, true) }

// BenchmarkParseOnly is the ceiling: textparse alone on the same page.
func BenchmarkParseOnlyVLLM(b *testing.B) {
	page, _ := os.ReadFile("testdata/vllm.txt")
	n := samples(b, page)
	b.ReportAllocs()
	for b.Loop() {
		p, _ := textparse.New(page, textType, labels.NewSymbolTable(), textparse.ParserOptions{})
		for {
			e, err := p.Next()
			if err == io.EOF {
				break
			}
			if e == textparse.EntrySeries {
				_, _, _ = p.Series()
			}
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}

// TestScrapePathOutputs keeps the benchmark honest: both encodings of a
// converted page are non-empty and decode back to the same points.
func TestScrapePathOutputs(t *testing.T) {
	page, _ := os.ReadFile("testdata/vllm.txt")
	conv := scraper.NewConverter(scraper.Target{JobName: "bench", Address: "127.0.0.1:1", Scheme: "http", MetricsPath: "/metrics", HonorTimestamps: true, Interval: time.Second, Timeout: time.Second})
	rm, err := conv.Convert(page, textType, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	js := otlpwire.AppendMetrics(nil, []*metricspb.ResourceMetrics{rm})
	req, err := otlpwire.DecodeMetrics(js)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(req.ResourceMetrics[0], rm) {
		t.Fatal("OTLP/JSON round trip changed the converted metrics")
	}
}

// ShiftValues changes every finite value and nothing else: the pages keep
// their samples, series bytes and histogram consistency.
func TestShiftValues(t *testing.T) {
	for _, name := range []string{"vllm", "dcgm", "node"} {
		p, err := LoadPage(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int64{0, 1, 12345} {
			got := ShiftValues(p.Body, n)
			if n == 0 && !bytes.Equal(got, p.Body) {
				t.Fatalf("%s: shift 0 changed the page", name)
			}
			if c, err := CountSamples(got); err != nil || c != p.Samples {
				t.Fatalf("%s +%d: %d samples (%v), want %d", name, n, c, err, p.Samples)
			}
			a, b := bytes.Split(p.Body, []byte("\n")), bytes.Split(got, []byte("\n"))
			changed := 0
			for i := range a {
				if !bytes.Equal(a[i], b[i]) {
					changed++
					if j := bytes.LastIndexByte(a[i], '}'); j > 0 && !bytes.HasPrefix(b[i], a[i][:j+1]) {
						t.Fatalf("%s: series bytes changed: %q → %q", name, a[i], b[i])
					}
				}
			}
			if n > 0 && changed < p.Samples/2 {
				t.Fatalf("%s +%d: only %d of %d lines changed", name, n, changed, p.Samples)
			}
		}
	}
}

// The ceiling counts the CPU time of its thread: it reads, and a page of n
// samples parses at a positive rate.
func TestTextparseRate(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	a, err := threadCPU()
	if err != nil {
		if runtime.GOOS != "linux" {
			t.Skipf("thread CPU time: %v", err)
		}
		t.Fatalf("thread CPU time: %v", err)
	}
	for { // burn 20 ms of this thread's CPU
		if b, _ := threadCPU(); b-a > 20*time.Millisecond {
			break
		}
	}
	page, err := os.ReadFile("testdata/node.txt")
	if err != nil {
		t.Fatal(err)
	}
	if r := TextparseRate([]Page{{Name: "node", Body: page, Samples: samples(t, page)}}, 20*time.Millisecond); r <= 0 {
		t.Fatalf("TextparseRate = %v", r)
	}
}

// Distinct adds node="N" to every sample's labels and changes nothing
// else: the same samples, values and other labels, as textparse reads them.
func TestDistinct(t *testing.T) {
	labelsOf := func(body []byte) []labels.Labels {
		p, err := textparse.New(body, textContentType, labels.NewSymbolTable(), textparse.ParserOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out []labels.Labels
		for {
			e, err := p.Next()
			if err == io.EOF {
				return out
			}
			if err != nil {
				t.Fatal(err)
			}
			if e == textparse.EntrySeries {
				var l labels.Labels
				p.Labels(&l)
				out = append(out, l)
			}
		}
	}
	bodies := map[string][]byte{"noLabels": []byte("# TYPE a gauge\na 1\nb{} 2\nc{x=\"y\"} 3 1700000000000\n")}
	for _, name := range []string{"vllm", "dcgm", "node"} {
		p, err := LoadPage(name)
		if err != nil {
			t.Fatal(err)
		}
		bodies[name] = p.Body
	}
	for name, body := range bodies {
		want := labelsOf(body)
		got := labelsOf(Distinct(body, 7))
		if len(got) != len(want) || len(want) == 0 {
			t.Fatalf("%s: %d samples, want %d", name, len(got), len(want))
		}
		for i := range want {
			if got[i].Get("node") != "7" {
				t.Fatalf("%s: sample %d has no node label: %s", name, i, got[i])
			}
			// MatchLabels(false, ...) drops the name too.
			if !labels.Equal(got[i].MatchLabels(false, "node"), want[i].MatchLabels(false)) ||
				got[i].Get(labels.MetricName) != want[i].Get(labels.MetricName) {
				t.Fatalf("%s: sample %d: %s, want %s plus node", name, i, got[i], want[i])
			}
		}
	}
}

// BenchmarkConvertTargets converts the three fixture pages, each of
// `copies` targets, one target after another as a job's scrapes come: at
// 84 targets a target's state is out of the CPU caches by the time it is
// scraped again, which single-target benchmarks do not show (the line
// cache's compares against scattered keys cost a quarter of the
// conversion there until the keys were laid out in page order). An
// iteration is one pass over all the targets.
func BenchmarkConvertTargets(b *testing.B) {
	for _, copies := range []int{1, 28} {
		b.Run(fmt.Sprintf("targets=%d", 3*copies), func(b *testing.B) {
			var pages [][][]byte // by target: its page with values shifted
			var convs []*scraper.Converter
			n := 0
			for _, f := range []string{"node.txt", "vllm.txt", "dcgm.txt"} {
				page, err := os.ReadFile("testdata/" + f)
				if err != nil {
					b.Fatal(err)
				}
				var shifted [][]byte
				for k := int64(1); k <= 8; k++ {
					shifted = append(shifted, ShiftValues(page, k))
				}
				for range copies {
					pages = append(pages, shifted)
					n += samples(b, page)
					convs = append(convs, scraper.NewConverter(scraper.Target{JobName: "bench", Scheme: "http", MetricsPath: "/metrics",
						Address: fmt.Sprintf("127.0.0.1:%d", 18200+len(convs)), Interval: time.Second, Timeout: time.Second, HonorTimestamps: true}))
				}
			}
			ts := time.Now()
			convert := func(pass int) {
				for j, c := range convs {
					if _, err := c.Convert(pages[j][pass%8], textType, ts); err != nil {
						b.Fatal(err)
					}
				}
				ts = ts.Add(time.Second)
			}
			convert(0)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				convert(i + 1)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
		})
	}
}
