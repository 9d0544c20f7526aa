package faults

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Target is a Prometheus scrape target on loopback whose page and
// behaviour the test sets. Its page is Series gauge series of one family,
// fault_target_value.
type Target struct {
	ts *httptest.Server

	mu      sync.Mutex
	series  int
	hung    bool
	release chan struct{}
	scrapes int // scrapes answered
	started int // scrapes begun
}

// NewTarget starts a target of series series; it is closed at the test's
// end.
func NewTarget(t testing.TB, series int) *Target {
	tg := &Target{series: series, release: make(chan struct{})}
	tg.ts = httptest.NewServer(tg)
	t.Cleanup(func() { tg.SetHung(false); tg.ts.Close() })
	return tg
}

// Addr is the target's host:port.
func (tg *Target) Addr() string { return strings.TrimPrefix(tg.ts.URL, "http://") }

// SetHung makes the target hold every scrape (true) until set back.
func (tg *Target) SetHung(h bool) {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	if tg.hung && !h {
		close(tg.release)
		tg.release = make(chan struct{})
	}
	tg.hung = h
}

// Scrapes is the number of scrapes answered and begun.
func (tg *Target) Scrapes() (answered, begun int) {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return tg.scrapes, tg.started
}

func (tg *Target) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tg.mu.Lock()
	tg.started++
	hung, release, series := tg.hung, tg.release, tg.series
	tg.mu.Unlock()
	if hung {
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
	}
	var b strings.Builder
	b.WriteString("# HELP fault_target_value A value.\n# TYPE fault_target_value gauge\n")
	for i := range series {
		fmt.Fprintf(&b, "fault_target_value{series=\"%d\"} %d\n", i, i)
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	_, _ = w.Write([]byte(b.String()))
	tg.mu.Lock()
	tg.scrapes++
	tg.mu.Unlock()
}
