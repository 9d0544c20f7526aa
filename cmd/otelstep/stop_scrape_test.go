package main

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/otelstep/otelstep/otlpwire"
)

// logLines runs cmd with its output read line by line: it keeps every
// line, and closes the channel of each of the texts it waits for once a
// line holds it.
type logLines struct {
	mu    sync.Mutex
	all   strings.Builder
	waits map[string]chan struct{}
}

func (l *logLines) on(text string) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.waits == nil {
		l.waits = map[string]chan struct{}{}
	}
	if l.waits[text] == nil {
		l.waits[text] = make(chan struct{})
	}
	return l.waits[text]
}

func (l *logLines) line(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all.WriteString(s + "\n")
	for text, ch := range l.waits {
		if strings.Contains(s, text) {
			close(ch)
			delete(l.waits, text)
		}
	}
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.all.String()
}

// A SIGTERM while a scrape is in flight (a target slow to answer): the
// scrape finishes and is kept, then the final scrape; no up = 0 and no
// staleness marker anywhere (issue 35, item 5). The target holds the
// first scrape until otelstep says it is letting it finish, which it says
// once SIGTERM has stopped the scrape loops.
func TestSIGTERMMidScrape(t *testing.T) {
	bin := buildBinary(t)
	page := []byte("# HELP slow_requests_total Requests.\n# TYPE slow_requests_total counter\nslow_requests_total{code=\"200\"} 7\n# TYPE slow_queue gauge\nslow_queue 3\n")
	entered, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		requests++
		first := requests == 1
		mu.Unlock()
		if first {
			close(entered)
			<-release
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write(page)
	}))
	var releaseOnce sync.Once
	let := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(func() { let(); srv.Close() })

	dir := t.TempDir()
	jsonl := filepath.Join(dir, "metrics.jsonl")
	cfg := `receivers:
  prometheus:
    config:
      scrape_configs:
        - job_name: slow
          scrape_interval: 1h
          scrape_timeout: 1h
          static_configs:
            - targets: [` + strings.TrimPrefix(srv.URL, "http://") + `]
exporters:
  file: {path: ` + jsonl + `}
service:
  telemetry: {logs: {level: info}}
  pipelines:
    metrics: {receivers: [prometheus], exporters: [file]}
`
	cfgPath := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", cfgPath)
	out, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = cmd.Stderr
	var log logLines
	finishing := log.on("the scrapes in flight finish first")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			log.line(sc.Text())
		}
	}()
	done := make(chan error, 1)
	go func() { <-read; done <- cmd.Wait() }()

	select {
	case <-entered: // the first scrape is in flight, held
	case err := <-done:
		t.Fatalf("exited: %v\n%s", err, log.String())
	case <-time.After(patience):
		t.Fatalf("no scrape in %v:\n%s", patience, log.String())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-finishing: // SIGTERM stopped the loops; the scrape is still in flight
	case err := <-done:
		t.Fatalf("exited with the scrape held: %v\n%s", err, log.String())
	case <-time.After(patience):
		t.Fatalf("SIGTERM not acted on in %v:\n%s", patience, log.String())
	}
	let()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit: %v\n%s", err, log.String())
		}
	case <-time.After(patience):
		t.Fatalf("no exit in %v after the scrape was let go:\n%s", patience, log.String())
	}

	ups, pages := 0, 0
	forLines(t, jsonl, func(line []byte) {
		req, err := otlpwire.DecodeMetrics(line)
		if err != nil {
			t.Fatalf("metrics.jsonl: %v", err)
		}
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					for _, p := range append(m.GetGauge().GetDataPoints(), m.GetSum().GetDataPoints()...) {
						if p.Flags != 0 {
							t.Errorf("%s: a staleness marker", m.Name)
						}
						if m.Name == "up" {
							ups++
							if p.GetAsDouble() != 1 {
								t.Errorf("up = %v", p.GetAsDouble())
							}
						}
						if m.Name == "slow_queue" {
							pages++
						}
					}
				}
			}
		}
	})
	// the scrape that was in flight, then the final one
	if ups != 2 || pages != 2 {
		t.Errorf("%d up points and %d of the page's, want 2 each (the held scrape and the final one)\n%s", ups, pages, log.String())
	}
	if strings.Contains(log.String(), "scrape failed") {
		t.Errorf("a scrape failed:\n%s", log.String())
	}
}
