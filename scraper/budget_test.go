package scraper

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/otelstep/otelstep/pipeline"
)

// seriesPage is a gauge page of n series, from series from on.
func seriesPage(from, n int) []byte {
	var b bytes.Buffer
	b.WriteString("# TYPE big gauge\n")
	for i := from; i < from+n; i++ {
		fmt.Fprintf(&b, "big{i=\"%d\"} %d\n", i, i)
	}
	return b.Bytes()
}

// budgetManager is a Manager of one target served by sp under a memory
// limit, and the collector of its batches.
func budgetManager(t *testing.T, sp *switchPage, limit int64) (*Manager, *collect, *logBuf) {
	t.Helper()
	srv := httptest.NewServer(sp)
	t.Cleanup(srv.Close)
	tg := loopbackTarget()
	tg.Address = strings.TrimPrefix(srv.URL, "http://")
	col := &collect{ch: make(chan struct{}, 1)}
	var log logBuf
	m, err := New(Options{Targets: []Target{tg}, Next: col, Logger: slog.New(slog.NewTextHandler(&log, nil)), MemoryLimit: limit})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m, col, &log
}

// last is the last batch col took.
func (c *collect) last() *pipeline.Batch {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.b[len(c.b)-1]
}

// The series a target's converter keeps are charged to the budget as
// they are read, and given back as they go: a page of more series than
// fit fails the scrape at once (up = 0, the budget's error), holding
// nothing after; a page that fits holds its series' charge, and a page
// that drops some gives theirs back.
func TestBudgetBoundsSeries(t *testing.T) {
	sp := &switchPage{}
	const fit = 100
	perSeries := seriesCharge(len(`big{i="100"}`))
	m, col, log := budgetManager(t, sp, fit*perSeries+64<<10) // the page buffers' room too

	sp.set(seriesPage(100, 10*fit), ctText)
	m.ScrapeAll(context.Background())
	if c := countsOf(col.last().Metrics[0]); c.up != 0 || c.scraped > fit+64 {
		t.Errorf("a page of 10 times the series that fit: %+v, want up 0, read no further than the budget", c)
	}
	if st := m.Targets()[0]; !strings.Contains(st.LastError, "scrape memory budget exhausted") {
		t.Errorf("the status's error: %q", st.LastError)
	}
	if !strings.Contains(log.String(), "scrape memory budget exhausted") || !strings.Contains(log.String(), "memory_limit_mib") {
		t.Errorf("the log does not give the reason:\n%s", log.String())
	}
	if used := m.budget.used.Load(); used != 0 {
		t.Errorf("%d bytes held after the failed scrape, want 0", used)
	}

	sp.set(seriesPage(100, fit/2), ctText)
	m.ScrapeAll(context.Background())
	if c := countsOf(col.last().Metrics[0]); c.up != 1 {
		t.Fatalf("a page of half the series that fit: %+v", c)
	}
	if used, want := m.budget.used.Load(), int64(fit/2)*perSeries; used != want {
		t.Errorf("%d bytes held by %d series, want %d", used, fit/2, want)
	}
	sp.set(seriesPage(100, fit/4), ctText)
	m.ScrapeAll(context.Background())
	if used, want := m.budget.used.Load(), int64(fit/4)*perSeries; used != want {
		t.Errorf("%d bytes held once the page lost a half of its series, want %d", used, want)
	}
}

// A page bigger than the budget stops being read where it no longer
// fits, gzipped or not: up = 0 with the budget's error, nothing held.
func TestBudgetBoundsThePage(t *testing.T) {
	page := seriesPage(0, 100_000) // about 2 MB
	for _, gz := range []bool{false, true} {
		t.Run(fmt.Sprintf("gzip=%v", gz), func(t *testing.T) {
			var body []byte
			if gz {
				var b bytes.Buffer
				w, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed)
				w.Write(page)
				w.Close()
				body = b.Bytes()
			} else {
				body = page
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", ctText)
				if gz {
					w.Header().Set("Content-Encoding", "gzip")
				}
				w.(http.Flusher).Flush() // no Content-Length: the size is learnt by reading
				w.Write(body)
			}))
			defer srv.Close()
			tg := loopbackTarget()
			tg.Address = strings.TrimPrefix(srv.URL, "http://")
			col := &collect{ch: make(chan struct{}, 1)}
			var log logBuf
			m, err := New(Options{Targets: []Target{tg}, Next: col, Logger: slog.New(slog.NewTextHandler(&log, nil)), MemoryLimit: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			m.ScrapeAll(context.Background())
			m.Close()
			if c := countsOf(col.last().Metrics[0]); c.up != 0 {
				t.Errorf("up %v", c.up)
			}
			if !strings.Contains(log.String(), "scrape memory budget exhausted") || !strings.Contains(log.String(), "for the page would make this target's page and series") {
				t.Errorf("the log does not give the reason:\n%s", log.String())
			}
			if used := m.budget.used.Load(); used != 0 {
				t.Errorf("%d bytes held after the failed scrape", used)
			}
		})
	}
}

// A conversion past the scrape's deadline gives up while reading new
// series, failing the page with the scrape timeout's error; one whose
// context ends (a stop) gives up the same way, with the context's cause.
func TestConvertStopsAtTheDeadline(t *testing.T) {
	c := NewConverter(Target{JobName: "j", Address: "127.0.0.1:1", Interval: time.Minute, Timeout: 10 * time.Second})
	_, _, err := c.convertBy(context.Background(), seriesPage(0, 10*deadlineEvery), ctText, time.Now(), 0, time.Now().Add(-time.Second))
	var pe *pageError
	if !errors.As(err, &pe) || !pe.cut || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "scrape timeout of 10s reached while converting the page") {
		t.Fatalf("err = %v", err)
	}
	if pe.n.samples != deadlineEvery {
		t.Errorf("%d samples read, want %d: the clock is read every %d new series", pe.n.samples, deadlineEvery, deadlineEvery)
	}
	stopped, stop := context.WithCancelCause(context.Background())
	stop(errors.New("stopping"))
	_, _, err = NewConverter(c.t).convertBy(stopped, seriesPage(0, 10*deadlineEvery), ctText, time.Now(), 0, time.Time{})
	if !errors.As(err, &pe) || !pe.cut || !strings.Contains(err.Error(), "stopping while converting the page") || pe.n.samples != deadlineEvery {
		t.Fatalf("a conversion whose context ended: err = %v, %d samples read", err, pe.n.samples)
	}
	// In time, the same page converts.
	if _, _, err := c.convertBy(context.Background(), seriesPage(0, 10*deadlineEvery), ctText, time.Now(), 0, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
}

// A target may hold no more than three quarters of the budget: while one
// whose page does not fit holds what it can, the others' new series and
// pages still fit.
func TestBudgetLeavesOthersRoom(t *testing.T) {
	b := newBudget(4 << 20)
	if b.take(3<<20+1, 0) {
		t.Fatal("one target took more than three quarters")
	}
	if !b.take(3<<20, 0) {
		t.Fatal("one target could not take three quarters")
	}
	if b.take(1, 3<<20) {
		t.Error("the same target took a byte more")
	}
	if !b.take(1<<20, 0) {
		t.Error("another target could not take the last quarter")
	}
	if b.take(1, 0) {
		t.Error("a third took a byte of a spent budget")
	}
	if err := b.exhausted("a new series", 1024, 0); !errors.Is(err, errBudget) || !strings.Contains(err.Error(), "does not fit in the 4.0 MiB the scrapes may hold (4.0 MiB held") {
		t.Errorf("error: %v", err)
	}
}
