package scraper

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// logLines is the lines of log holding msg.
func logLines(log *logBuf, msg string) []string {
	var out []string
	for _, l := range strings.Split(log.String(), "\n") {
		if strings.Contains(l, msg) {
			out = append(out, l)
		}
	}
	return out
}

// A target down for a while is one WARN with the reason, then a summary
// at most every DownLogEvery with the failed scrapes since the last line,
// then an INFO when it is back; the status follows every scrape.
func TestTargetDownLogging(t *testing.T) {
	var log logBuf
	lg := slog.New(slog.NewTextHandler(&log, nil))
	h := health{st: TargetStatus{Job: "j", URL: "http://127.0.0.1:9100/metrics"}}
	every := 5 * time.Minute
	t0 := time.Unix(1_800_000_000, 0)
	refused := errors.New("connect: connection refused")
	h.scraped(lg, every, t0, time.Second, nil, 7)
	if st := h.status(); !st.Up || st.Samples != 7 || st.LastError != "" {
		t.Fatalf("after a good scrape: %+v", st)
	}
	// 15 s interval, down for 12 minutes: 48 failed scrapes.
	for i := range 48 {
		h.scraped(lg, every, t0.Add(time.Duration(i+1)*15*time.Second), time.Millisecond, refused, 0)
	}
	st := h.status()
	if st.Up || st.ConsecutiveFailures != 48 || st.LastError != refused.Error() || !st.DownSince.Equal(t0.Add(15*time.Second)) {
		t.Errorf("while down: %+v", st)
	}
	if w := logLines(&log, "target down"); len(w) != 1 || !strings.Contains(w[0], "level=WARN") || !strings.Contains(w[0], "connection refused") {
		t.Errorf("the first failure's WARN: %q", w)
	}
	sums := logLines(&log, "still down")
	if len(sums) != 2 {
		t.Fatalf("%d summaries in 12 minutes at one every 5, want 2:\n%s", len(sums), log.String())
	}
	// The first summary is 5 minutes after the first failure: 20 scrapes on.
	if !strings.Contains(sums[0], "failed_scrapes_since_last_report=20 ") || !strings.Contains(sums[0], "last_error=") || !strings.Contains(sums[0], "down_for=5m0s") {
		t.Errorf("first summary: %s", sums[0])
	}
	h.scraped(lg, every, t0.Add(49*15*time.Second), time.Second, nil, 9)
	up := logLines(&log, "up again")
	if len(up) != 1 || !strings.Contains(up[0], "level=INFO") || !strings.Contains(up[0], "failed_scrapes=48") || !strings.Contains(up[0], "down_for=12m0s") {
		t.Errorf("recovery line: %q", up)
	}
	if st := h.status(); !st.Up || st.ConsecutiveFailures != 0 || !st.DownSince.IsZero() || st.Samples != 9 {
		t.Errorf("after the recovery: %+v", st)
	}
	// A healthy scrape logs nothing.
	n := len(log.String())
	h.scraped(lg, every, t0.Add(50*15*time.Second), time.Second, nil, 9)
	if len(log.String()) != n {
		t.Errorf("a healthy scrape logged: %s", log.String()[n:])
	}
}

// The same through a Manager's scrapes of a real target: down (503) for
// ten scrapes, then up: one WARN, one INFO, and Targets tells each state.
func TestTargetDownThenUp(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	page := serve([]byte("# TYPE g gauge\ng 1\ng2 2\n"), ctText)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "not yet", http.StatusServiceUnavailable)
			return
		}
		page.ServeHTTP(w, r)
	}))
	defer srv.Close()
	var log logBuf
	tg := loopbackTarget()
	tg.Address = strings.TrimPrefix(srv.URL, "http://")
	m, err := New(Options{Targets: []Target{tg}, Next: &collect{ch: make(chan struct{}, 1)}, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if st := m.Targets(); len(st) != 1 || st[0].Scraped || st[0].Job != tg.JobName || st[0].URL != srv.URL+"/metrics" || st[0].Instance != tg.Address {
		t.Fatalf("before any scrape: %+v", st)
	}
	for range 10 {
		m.ScrapeAll(context.Background())
	}
	st := m.Targets()[0]
	if st.Up || st.ConsecutiveFailures != 10 || !strings.Contains(st.LastError, "503") || st.LastScrape.IsZero() {
		t.Errorf("down: %+v", st)
	}
	down.Store(false)
	m.ScrapeAll(context.Background())
	m.Close()
	st = m.Targets()[0]
	if !st.Up || st.ConsecutiveFailures != 0 || st.LastError != "" || st.Samples != 2 {
		t.Errorf("up: %+v", st)
	}
	if w, s, i := logLines(&log, "level=WARN"), logLines(&log, "still down"), logLines(&log, "up again"); len(w) != 1 || len(s) != 0 || len(i) != 1 ||
		!strings.Contains(w[0], "503") || !strings.Contains(i[0], "failed_scrapes=10") {
		t.Errorf("log, want one WARN with the status and one INFO:\n%s", log.String())
	}
}
