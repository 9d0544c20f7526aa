package scraper

import (
	"bytes"
	"compress/gzip"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
)

// fuzzPage is what the fuzz target's server serves: one fuzz input at a
// time (a worker runs its inputs one after another).
type fuzzPage struct {
	mu   sync.Mutex // the server's goroutines read it (over a socket, which the race detector cannot see)
	body []byte
	ct   string
	gz   bool
}

// set makes body, of content type ct and gzipped if gz, the page served.
func (p *fuzzPage) set(body []byte, ct string, gz bool) {
	p.mu.Lock()
	p.body, p.ct, p.gz = body, ct, gz
	p.mu.Unlock()
}

// FuzzScrape is the exposition path end to end: a page served over HTTP
// (text or OpenMetrics, gzipped or not) is scraped by a Manager's loops,
// fetched, converted and delivered, three times (the page, the page again:
// the line cache and the series cache; its first half: staleness), by a
// target with limits and one without. Nothing may panic; every scrape
// delivers one batch, which marshals; up is 0 or 1, and a scrape within
// the limits says so.
func FuzzScrape(f *testing.F) {
	for _, name := range []string{"vllm.txt", "node.txt", "dcgm.txt", "edge.txt", "federate.txt", "metafirst.txt", "timestamps.txt", "utf8.txt", "openmetrics.om", "utf8.om"} {
		// The page's first 2 KiB of whole lines: a seed that small mutates
		// (and minimises) at a useful speed.
		page := read(f, name)
		if len(page) > 2<<10 {
			page = page[:bytes.LastIndexByte(page[:2<<10], '\n')+1]
		}
		om := bytes.HasSuffix([]byte(name), []byte(".om"))
		f.Add(page, om, false)
		f.Add(page, om, true)
	}
	f.Add([]byte("# TYPE c counter\nc_total{a=\"1\"} 1 # {trace_id=\"0af7651916cd43dd8448eb211c80319c\"} 1\n# EOF\n"), true, false)
	f.Add([]byte("{\"a.b\",\"c.d\"=\"e\"} 1\n"), false, false)

	var cur fuzzPage
	m, col, lim := fuzzSetup(f, &cur)
	f.Fuzz(func(t *testing.T, page []byte, om, gz bool) { scrapeFuzzed(t, m, col, &cur, page, om, gz, lim) })
}

// scrapeFuzzed is one input of FuzzScrape.
func scrapeFuzzed(t *testing.T, m *Manager, col *collect, cur *fuzzPage, page []byte, om, gz bool, lim Limits) {
	ct := ctText
	if om {
		ct = ctOM
	}
	// Each input starts from converters that have seen nothing, so
	// that it fails the same way every time it is run; the loops'
	// clients (and their connections) stay.
	for _, l := range m.loops {
		l.conv = NewConverter(l.t)
	}
	for i, body := range [][]byte{page, page, page[:len(page)/2]} {
		cur.set(body, ct, gz)
		col.b = nil
		m.ScrapeAll(context.Background())
		if len(col.b) != 2 {
			t.Fatalf("scrape %d: %d batches, want 2", i, len(col.b))
		}
		for _, b := range col.b {
			rm := b.Metrics[0]
			for _, r := range b.Metrics {
				if _, err := proto.Marshal(r); err != nil {
					t.Fatalf("scrape %d: the batch does not marshal: %v", i, err)
				}
			}
			c := countsOf(rm)
			if c.up != 0 && c.up != 1 {
				t.Fatalf("scrape %d: up %v", i, c.up)
			}
			job := rm.Resource.Attributes[0].Value.GetStringValue()
			if job == "limited" && c.up == 1 && c.post > float64(lim.Samples) {
				t.Fatalf("scrape %d: %v samples kept under sample_limit %d", i, c.post, lim.Samples)
			}
			b.Release()
		}
	}
}

// fuzzSetup is FuzzScrape's target, served what cur says, and a Manager
// of two loops scraping it (with and without limits).
func fuzzSetup(tb testing.TB, cur *fuzzPage) (*Manager, *collect, Limits) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		cur.mu.Lock()
		body, ct, gz := cur.body, cur.ct, cur.gz
		cur.mu.Unlock()
		w.Header().Set("Content-Type", ct)
		if gz {
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			_, _ = zw.Write(body)
			_ = zw.Close()
			return
		}
		_, _ = w.Write(body)
	}))
	limited := targetAt(srv)
	limited.JobName = "limited"
	limited.Interval, limited.Timeout = time.Minute, 10*time.Second
	lim := Limits{Samples: 200, Labels: 12, LabelNameLength: 64, LabelValueLength: 256}
	limited.Limits = lim
	open := limited
	open.JobName, open.Limits = "open", Limits{}
	col := &collect{}
	m, err := New(Options{Targets: []Target{limited, open}, Next: col, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(m.Close)

	return m, col, lim
}
