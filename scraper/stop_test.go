package scraper

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
)

// slowTarget serves page; the request numbered hold (1-based) waits, after
// telling entered, until release is closed.
type slowTarget struct {
	srv     *httptest.Server
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func newSlowTarget(t *testing.T, page []byte, hold int) *slowTarget {
	s := &slowTarget{entered: make(chan struct{}, 1), release: make(chan struct{})}
	var mu sync.Mutex
	n := 0
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		held := n == hold
		mu.Unlock()
		if held {
			s.entered <- struct{}{}
			<-s.release
		}
		w.Header().Set("Content-Type", ctText)
		_, _ = w.Write(page)
	}))
	t.Cleanup(func() { s.let(); s.srv.Close() })
	return s
}

// let releases the held request.
func (s *slowTarget) let() { s.once.Do(func() { close(s.release) }) }

// noFailure fails t if b reports the target down or has a staleness marker.
func noFailure(t *testing.T, b []*metricspb.ResourceMetrics) {
	t.Helper()
	for _, rm := range b {
		for _, m := range rm.ScopeMetrics[0].Metrics {
			if m.Name == "up" {
				for _, p := range m.GetGauge().DataPoints {
					if p.GetAsDouble() != 1 {
						t.Errorf("up = %v", p.GetAsDouble())
					}
				}
			}
			for _, p := range numPoints(m) {
				if p.Flags != 0 {
					t.Errorf("%s: a staleness marker", m.Name)
				}
			}
		}
	}
}

// A stop lets the scrape in flight finish and delivers it: not cancelled,
// no up = 0, no staleness marker (issue 35, item 5). The handler is
// released only once Run's context is done.
func TestStopLetsTheScrapeInFlightFinish(t *testing.T) {
	slow := newSlowTarget(t, read(t, "edge.txt"), 1)
	col := &collect{ch: make(chan struct{}, 4)}
	// an hour's timeout: only the stop could end the scrape
	m, err := New(Options{Targets: []Target{{JobName: "slow", Address: strings.TrimPrefix(slow.srv.URL, "http://"), Scheme: "http",
		Interval: time.Hour, Timeout: time.Hour, HonorTimestamps: true}}, Next: col, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = m.Run(ctx); close(done) }()
	<-slow.entered
	cancel() // the stop, mid-scrape
	slow.let()
	<-done
	col.mu.Lock()
	defer col.mu.Unlock()
	if len(col.b) != 1 {
		t.Fatalf("%d batches, want the scrape in flight's", len(col.b))
	}
	noFailure(t, col.b[0].Metrics)
	if findPoints(col.b[0].Metrics[0], "edge_escapes") == nil {
		t.Error("the page's metrics are not in the delivered scrape")
	}
}

// Abort ends the scrapes in flight, and a ScrapeAll whose context ends
// mid-scrape, without a batch: nothing is recorded as a failure.
func TestAbortRecordsNothing(t *testing.T) {
	page := read(t, "edge.txt")
	slow := newSlowTarget(t, page, 1)
	col := &collect{ch: make(chan struct{}, 4)}
	tg := Target{JobName: "slow", Address: strings.TrimPrefix(slow.srv.URL, "http://"), Scheme: "http",
		Interval: time.Hour, Timeout: time.Hour, HonorTimestamps: true}
	m, err := New(Options{Targets: []Target{tg}, Next: col, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = m.Run(ctx); close(done) }()
	<-slow.entered
	cancel()
	m.Abort()
	<-done
	slow.let()

	slow2 := newSlowTarget(t, page, 1)
	tg.Address = strings.TrimPrefix(slow2.srv.URL, "http://")
	m2, err := New(Options{Targets: []Target{tg}, Next: col, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	sctx, scancel := context.WithCancel(context.Background())
	go func() { <-slow2.entered; scancel() }()
	m2.ScrapeAll(sctx)
	slow2.let()
	col.mu.Lock()
	defer col.mu.Unlock()
	if len(col.b) != 0 {
		t.Errorf("%d batches of scrapes cut short, want none", len(col.b))
	}
}

// Final at a stop with one target holding its scrape in flight: the other
// target's final scrape is taken and delivered at once, side by side; the
// held one is cut when Final's time ends, alone, recording nothing.
func TestFinalCutsAHungTargetAlone(t *testing.T) {
	page := read(t, "edge.txt")
	hung := newSlowTarget(t, page, 1)
	healthy := newSlowTarget(t, page, 0)
	col := &collect{ch: make(chan struct{}, 8)}
	tg := func(job string, s *slowTarget) Target {
		return Target{JobName: job, Address: strings.TrimPrefix(s.srv.URL, "http://"), Scheme: "http",
			Interval: time.Hour, Timeout: time.Hour, HonorTimestamps: true}
	}
	m, err := New(Options{Targets: []Target{tg("hung", hung), tg("healthy", healthy)}, Next: col, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stopRun := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = m.Run(runCtx); close(done) }()
	<-hung.entered
	waitBatches := func(n int) {
		for {
			col.mu.Lock()
			got := len(col.b)
			col.mu.Unlock()
			if got >= n {
				return
			}
			<-col.ch
		}
	}
	waitBatches(1) // the healthy target's first scrape
	stopRun()
	// Final's time ends only once the healthy target's final scrape is
	// delivered: it did not wait for the hung one.
	finalCtx, cut := context.WithCancel(context.Background())
	finished := make(chan struct{})
	go func() { m.Final(finalCtx); close(finished) }()
	waitBatches(2)
	cut()
	<-finished
	<-done
	col.mu.Lock()
	defer col.mu.Unlock()
	if len(col.b) != 2 {
		t.Fatalf("%d batches, want the healthy target's first and final scrapes", len(col.b))
	}
	for _, b := range col.b {
		noFailure(t, b.Metrics)
		if job := jobOf(b.Metrics[0]); job != "healthy" {
			t.Errorf("a batch of job %q", job)
		}
	}
	if st := m.Targets(); st[0].Scraped || !st[1].Up {
		t.Errorf("status after the stop: %+v", st)
	}
}

// jobOf is the service.name of a resource.
func jobOf(rm *metricspb.ResourceMetrics) string {
	for _, kv := range rm.Resource.GetAttributes() {
		if kv.Key == "service.name" {
			return kv.Value.GetStringValue()
		}
	}
	return ""
}
