package scraper

import (
	"bytes"
	"compress/gzip"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/otelstep/otelstep/internal/testlog"
	"github.com/otelstep/otelstep/pipeline"
)

// logBuf is a concurrency-safe log sink for checking scrape errors.
type logBuf = testlog.Buffer

// scrapeLogged scrapes h once with a fresh Manager and returns the batch and the log.
func scrapeLogged(t *testing.T, h http.Handler, mod func(*Target)) (*pipeline.Batch, string) {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	tg := loopbackTarget()
	tg.Address = strings.TrimPrefix(srv.URL, "http://")
	if mod != nil {
		mod(&tg)
	}
	var log logBuf
	col := &collect{ch: make(chan struct{}, 1)}
	m, err := New(Options{Targets: []Target{tg}, Next: col, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	m.ScrapeAll(testCtx(t))
	if len(col.b) != 1 {
		t.Fatalf("%d batches", len(col.b))
	}
	return col.b[0], log.String()
}

// A page that breaks half-way is a failed scrape: up=0, only the synthetic
// series (nothing of the page), and the error names the line.
func TestFetchBrokenMidway(t *testing.T) {
	page := "# TYPE a gauge\na 1\n# TYPE b counter\nb_total 2\nb_total{x=\"1\"} 3\nc{unterminated=\"x} 4\nd 5\n"
	b, log := scrapeLogged(t, serve([]byte(page), ctText), nil)
	if upOf(t, b) != 0 {
		t.Error("up != 0")
	}
	if got := pageNames(b.Metrics[0]); len(got) != 0 {
		t.Errorf("half-converted metrics sent: %v", got)
	}
	if !strings.Contains(log, "line 6") {
		t.Errorf("log does not name line 6: %s", log)
	}
	om := "# TYPE a gauge\na 1\na 2 garbage\n# EOF\n"
	b, log = scrapeLogged(t, serve([]byte(om), ctOM), nil)
	if upOf(t, b) != 0 || !strings.Contains(log, "line 3") {
		t.Errorf("openmetrics: up=%v log=%s", upOf(t, b), log)
	}
}

// bigHandler streams n (uncompressed) bytes of valid page and counts the
// bytes it managed to put on the wire.
func bigHandler(n int, gz bool, withLength bool, written *atomic.Int64) http.Handler {
	line := []byte("# TYPE x gauge\n")
	// 64 KiB of distinct lines: more than gzip's 32 KiB window, so the
	// compressed stream stays big and counting wire bytes means something.
	var filler []byte
	rnd := uint32(1)
	for len(filler) < 64<<10 {
		rnd = rnd*1664525 + 1013904223
		filler = append(filler, "x{v=\""+strconv.FormatUint(uint64(rnd), 16)+"\"} 1\n"...)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctText)
		if withLength {
			w.Header().Set("Content-Length", strconv.Itoa(n))
		}
		wire := &countingWriter{w: w, n: written}
		var out interface{ Write([]byte) (int, error) } = wire
		var zw *gzip.Writer
		if gz {
			w.Header().Set("Content-Encoding", "gzip")
			zw = gzip.NewWriter(wire)
			out = zw
		}
		_, _ = out.Write(line)
		for sent := len(line); sent < n; sent += len(filler) {
			if _, err := out.Write(filler); err != nil {
				return
			}
		}
		if zw != nil {
			_ = zw.Close()
		}
	})
}

// countingWriter counts the bytes that reached the connection.
type countingWriter struct {
	w interface{ Write([]byte) (int, error) }
	n *atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	k, err := c.w.Write(p)
	c.n.Add(int64(k))
	return k, err
}

func TestFetchBodySizeLimit(t *testing.T) {
	const limit = 1 << 20
	for _, tc := range []struct {
		name           string
		gz, withLength bool
	}{
		{"plain streamed", false, false},
		{"plain with Content-Length", false, true},
		{"gzip", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var written atomic.Int64
			b, log := scrapeLogged(t, bigHandler(256<<20, tc.gz, tc.withLength, &written), func(tg *Target) {
				tg.BodySizeLimit = limit // the timeout stays a minute: compressing the stream is slow under -race
			})
			if upOf(t, b) != 0 {
				t.Error("up != 0")
			}
			if !strings.Contains(log, "body size limit") {
				t.Errorf("log: %s", log)
			}
			// The scrape stops reading soon after the limit: the server
			// could not push the whole 256 MiB (decompressed) through.
			if w := written.Load(); w > 64<<20 {
				t.Errorf("server wrote %d bytes: body read far past the limit", w)
			}
		})
	}
	// at the limit exactly is fine, also gzip-encoded
	page := []byte("# TYPE g gauge\ng 1\n")
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	_, _ = zw.Write(page)
	_ = zw.Close()
	gzServe := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctText)
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write(zb.Bytes())
	})
	for _, h := range []http.Handler{serve(page, ctText), gzServe} {
		if b := scrapeOnce(t, h, func(tg *Target) { tg.BodySizeLimit = int64(len(page)) }); upOf(t, b) != 1 || findPoints(b.Metrics[0], "g") == nil {
			t.Error("page at the limit refused")
		}
	}
}

// A target that sends its header and then trickles its body without end
// is cut at the scrape timeout like one that never answers: the timeout is
// the scrape's, not one of each read.
func TestFetchSlowBody(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctText)
		f := w.(http.Flusher)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			if _, err := w.Write([]byte("# trickle\n")); err != nil {
				return
			}
			f.Flush()
			select {
			case <-tick.C:
			case <-r.Context().Done():
				return
			}
		}
	})
	b, log := scrapeLogged(t, h, func(tg *Target) { tg.Timeout = 300 * time.Millisecond })
	if upOf(t, b) != 0 {
		t.Error("up != 0")
	}
	if !strings.Contains(log, "scrape timeout of 300ms reached while reading the body") {
		t.Errorf("log does not say why: %s", log)
	}
}

// One Manager's gzip readers are reused from page to page: every gzipped
// page reads whole, a broken gzip body in between fails only its own
// scrape, and plain pages still read.
func TestFetchGzipReadersReused(t *testing.T) {
	gz := func(s string) []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write([]byte(s))
		_ = zw.Close()
		return b.Bytes()
	}
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := n.Add(1)
		w.Header().Set("Content-Type", ctText)
		page := "# TYPE g gauge\ng " + strconv.FormatInt(i, 10) + "\n"
		switch i % 4 {
		case 0: // plain
			_, _ = w.Write([]byte(page))
		case 2: // not gzip at all
			w.Header().Set("Content-Encoding", "gzip")
			_, _ = w.Write([]byte(page))
		case 3: // cut short
			w.Header().Set("Content-Encoding", "gzip")
			z := gz(page)
			_, _ = w.Write(z[:len(z)-6])
		default:
			w.Header().Set("Content-Encoding", "gzip")
			_, _ = w.Write(gz(page))
		}
	}))
	defer srv.Close()
	m, col := oneTarget(t, srv, nil)
	for i := int64(1); i <= 12; i++ {
		col.b = nil
		m.ScrapeAll(context.Background())
		if len(col.b) != 1 {
			t.Fatalf("scrape %d: %d batches", i, len(col.b))
		}
		b := col.b[0]
		if i%4 == 2 || i%4 == 3 {
			if upOf(t, b) != 0 {
				t.Errorf("scrape %d of a broken gzip body: up != 0", i)
			}
			continue
		}
		g := findPoints(b.Metrics[0], "g")
		if upOf(t, b) != 1 || g == nil || g.GetGauge().DataPoints[0].GetAsDouble() != float64(i) {
			t.Errorf("scrape %d: up %v, g %v", i, upOf(t, b), g)
		}
	}
}

// A page of known length is read into a buffer sized for it at once: the
// first scrape of a target has no last size to go by, and growing by
// doubling as the body arrives would leave a buffer of up to twice the page
// in the free list (and copy it on every doubling).
func TestFetchSizedByContentLength(t *testing.T) {
	const n = 300_000
	line := []byte("# TYPE g gauge\n")
	page := bytes.Repeat([]byte("g 1\n"), (n-len(line))/4)
	page = append(line, page...)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctText)
		w.Header().Set("Content-Length", strconv.Itoa(len(page)))
		_, _ = w.Write(page)
	}))
	defer srv.Close()
	m, col := oneTarget(t, srv, nil)
	m.ScrapeAll(context.Background())
	if len(col.b) != 1 || upOf(t, col.b[0]) != 1 {
		t.Fatalf("scrape failed: %d batches", len(col.b))
	}
	if len(m.bodies.free) != 1 {
		t.Fatalf("%d free page buffers after one scrape, want 1", len(m.bodies.free))
	}
	// the page, its slack (pageSlack), and a large allocation's rounding
	// up to whole 8 KiB pages at most
	if c, most := m.bodies.free[0].Cap(), len(page)+len(page)/pageSlack+bytes.MinRead+8<<10; c > most {
		t.Errorf("page buffer of %d bytes for a page of %d: regrown while reading (want at most %d)", c, len(page), most)
	}
}
