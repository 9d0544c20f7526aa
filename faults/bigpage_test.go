package faults

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// bigTarget is a scrape target on loopback that serves a big page, an
// endless one, or a small good one, as the test sets it.
type bigTarget struct {
	ts   *httptest.Server
	mu   sync.Mutex
	page []byte // nil: endless
	good bool
}

// bigPage is a page of n gauge series of two labels: about 50 bytes a
// series.
func bigPage(n int) []byte {
	var b bytes.Buffer
	b.Grow(n * 52)
	b.WriteString("# HELP hostile_series A series of a page too big.\n# TYPE hostile_series gauge\n")
	for i := range n {
		fmt.Fprintf(&b, "hostile_series{pod=\"pod-%d\",i=\"%d\"} %d\n", i%1000, i, i)
	}
	return b.Bytes()
}

func newBigTarget(t testing.TB, page []byte) *bigTarget {
	bt := &bigTarget{page: page}
	bt.ts = httptest.NewServer(bt)
	t.Cleanup(bt.ts.Close)
	return bt
}

func (bt *bigTarget) Addr() string { return strings.TrimPrefix(bt.ts.URL, "http://") }

// recover makes the target serve a small good page.
func (bt *bigTarget) recover() {
	bt.mu.Lock()
	bt.good = true
	bt.mu.Unlock()
}

func (bt *bigTarget) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	bt.mu.Lock()
	page, good := bt.page, bt.good
	bt.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	switch {
	case good:
		_, _ = w.Write([]byte("# TYPE hostile_series gauge\nhostile_series{pod=\"pod-0\",i=\"0\"} 0\n"))
	case page != nil:
		_, _ = w.Write(page)
	default: // endless: lines until the scraper hangs up
		line := bytes.Repeat([]byte("hostile_series{pod=\"pod-0\",i=\"0\"} 0\n"), 1000)
		for r.Context().Err() == nil {
			if _, err := w.Write(line); err != nil {
				return
			}
		}
	}
}

// A target serving a page far bigger than a job's (a million series, or
// an endless page) beside a steady one: each scrape of it stops reading
// at what bounds it (the scrapes' memory budget, sample_limit,
// body_size_limit) and records up = 0 with the reason at once, logged
// once; the steady target is scraped as ever; peak RSS stays under the
// bound; once the target serves a small page again it is up, logged at
// INFO, and the memory is given back (RSS a while later); exit 0.
func TestBigScrapePage(t *testing.T) {
	series := size(50_000, 1_000_000)
	// The short form: a page a twentieth of the long one's, under a
	// budget of a sixteenth (or an eighth) of the default.
	budget := func(shortMiB int) (string, int) {
		if *long {
			return "", 128 // the default
		}
		return fmt.Sprintf("    memory_limit_mib: %d\n", shortMiB), shortMiB
	}
	settle := time.Duration(size(2, 60)) * time.Second
	// The long form's million series at the scrape timeout a job has
	// (10 s): at the suite's 1 s, the conversion's timeout stops the page
	// before the budget does.
	interval := time.Duration(size(1, 10)) * time.Second
	page := bigPage(series)
	sampleLimit := size(1000, 200_000)
	cases := []struct {
		name         string
		page         []byte // nil: endless
		budgetMiB    int
		prometheus   string
		scrapeConfig string
		reasons      []string // one of them
	}{
		{name: fmt.Sprintf("%d series", series), page: page, reasons: []string{"scrape memory budget exhausted"}},
		// The short form's limit is reached early in the page, long before
		// its 1 s scrape timeout even on a loaded machine.
		{name: fmt.Sprintf("%d series, sample_limit %d", series, sampleLimit), page: page,
			scrapeConfig: fmt.Sprintf("        sample_limit: %d\n", sampleLimit),
			// 200,000 series of the long form need more than the default
			// budget: whichever comes first
			reasons: []string{"sample limit exceeded", "scrape memory budget exhausted"}},
		{name: "endless page", page: nil, reasons: []string{"body exceeds the body size limit"},
			scrapeConfig: map[bool]string{false: "        body_size_limit: 4MiB\n", true: ""}[*long]},
	}
	for i, tc := range cases {
		shortMiB := []int{8, 16, 16}[i]
		tc.prometheus, tc.budgetMiB = budget(shortMiB)
		t.Run(strings.NewReplacer(" ", "_", ",", "").Replace(tc.name), func(t *testing.T) {
			hostile := newBigTarget(t, tc.page)
			steady := NewTarget(t, 10)
			n := configure(t, Setup{Targets: []string{hostile.Addr(), steady.Addr()}, Prometheus: tc.prometheus, ScrapeConfig: tc.scrapeConfig,
				ScrapeInterval: interval})
			p := n.start(t)
			l := newLedger()
			exp := httpExporter(t, n.HTTP)
			batches := 0
			failures := size(3, 2)
			waitFor(t, fmt.Sprintf("%d scrapes of the big page up = 0 in the JSONL, the steady target up", failures), func() bool {
				if err := l.export(exp, fmt.Sprintf("during%d", batches), 10); err != nil {
					t.Errorf("export while a page is too big: %v", err)
				}
				batches++
				up, err := upByInstance(n.Otel, false)
				if err != nil {
					t.Fatal(err)
				}
				return all(up[hostile.Addr()], 0, failures) && all(up[steady.Addr()], 1, 1)
			})
			peak, err := p.PeakRSS()
			if err != nil {
				t.Fatal(err)
			}
			out := p.Out.String()
			var warn []string
			for _, line := range strings.Split(out, "\n") {
				if strings.Contains(line, "scrape failed") && strings.Contains(line, hostile.Addr()) {
					warn = append(warn, line)
				}
			}
			reason := ""
			for _, r := range tc.reasons {
				if len(warn) == 1 && strings.Contains(warn[0], r) {
					reason = r
				}
			}
			if reason == "" {
				t.Errorf("want one WARN for the big page's failed scrapes, giving one of %q; got:\n%.3000s", tc.reasons, strings.Join(warn, "\n"))
			}
			hostile.recover()
			waitFor(t, "the target up again, in the JSONL and the log", func() bool {
				up, err := upByInstance(n.Otel, false)
				if err != nil {
					t.Fatal(err)
				}
				v := up[hostile.Addr()]
				return len(v) > 0 && v[len(v)-1] == 1 && strings.Contains(p.Out.String(), "scrape target up again")
			})
			time.Sleep(settle) // a measurement a while after the spike, not a wait for a condition
			later, err := p.RSS()
			if err != nil {
				t.Fatal(err)
			}
			e := p.Stop(t)
			figure := checkExit(t, p, e)
			if err := l.export(exp, "after", 10); err == nil {
				t.Log("(the exporter still took a request after the stop)")
			}
			got := n.jsonl(t)
			up, err := upByInstance(n.Otel, true)
			if err != nil {
				t.Fatal(err)
			}
			if got.Points["hostile_series"] > len(up[hostile.Addr()]) {
				t.Errorf("%d points of the big page in the JSONL, want only the small page's", got.Points["hostile_series"])
			}
			if !all(up[steady.Addr()], 1, failures) {
				t.Errorf("the steady target's up: %v", up[steady.Addr()])
			}
			n.checkNoToken(t, p)
			pageSize := "endless"
			if tc.page != nil {
				pageSize = fmt.Sprintf("%d MiB", len(tc.page)>>20)
			}
			report(t, fmt.Sprintf("page %s: up = 0 at once at each scrape (%q, one WARN), steady target up = 1; peak RSS %d MiB with a scrape budget of %d MiB; RSS %d MiB %v after the target recovered; %s",
				pageSize, reason, peak>>20, tc.budgetMiB, later>>20, settle, figure), got.Missing(l.Answered()))
		})
	}
}
