package service

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/otelstep/otelstep/config"
)

// lockedBuffer is a log sink safe for the service's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

const testToken = "svc-test-token-91c2"

func testConfig(t *testing.T, dir string) *config.Config {
	t.Helper()
	yaml := `
extensions:
  health_check:
    endpoint: 127.0.0.1:0
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:0
processors:
  batch: {}
  resource:
    attributes:
    - key: Authorization
      value: Bearer ${env:TOKEN}
      action: upsert
exporters:
  file/traces:
    path: ` + filepath.Join(dir, "traces.jsonl") + `
service:
  extensions: [health_check]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [resource, batch]
      exporters: [file/traces]
`
	cfg, err := config.Parse("test.yaml", []byte(yaml), func(k string) (string, bool) {
		if k == "TOKEN" {
			return testToken, true
		}
		return "", false
	})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// A Service built from a config serves health and its own metrics while
// running, stops on cancel with its files closed, and never logs the token.
func TestServiceRunAndStop(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	var logs lockedBuffer
	log := slog.New(NewRedactingHandler(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}), cfg.Secrets))
	s, err := New(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, ready) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("Run ended before ready: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("not ready after 10 s")
	}
	base := "http://" + s.HealthAddr().String()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/"); code != http.StatusOK || !strings.Contains(body, `"state":"running"`) {
		t.Fatalf("health while running: %d %s", code, body)
	}
	if code, body := get("/metrics"); code != http.StatusOK || !strings.Contains(body, "# TYPE ") {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after cancel: %v", err)
		}
	case <-time.After(StopTimeout + 5*time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if _, err := os.Stat(filepath.Join(dir, "traces.jsonl")); err != nil {
		t.Fatalf("file sink: %v", err)
	}
	if _, err := http.Get(base + "/"); err == nil {
		t.Fatal("health endpoint still answers after stop")
	}
	out := logs.String()
	if !strings.Contains(out, "otelstep running") || !strings.Contains(out, "otelstep stopping") {
		t.Fatalf("log lacks the run and stop lines:\n%s", out)
	}
	if strings.Contains(out, testToken) {
		t.Fatalf("token in the log:\n%s", out)
	}
}

// A listen address that is taken fails Run with the extension named, and
// what started is stopped again.
func TestServiceBindError(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	first, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- first.Run(ctx, ready) }()
	<-ready
	taken := first.HealthAddr().String()
	cfg2 := testConfig(t, t.TempDir())
	for id, h := range cfg2.HealthCheck {
		h.Endpoint = taken
		cfg2.HealthCheck[id] = h
	}
	second, err := New(cfg2, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	err = second.Run(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "health_check") || !strings.Contains(err.Error(), taken) {
		t.Fatalf("Run on a taken address: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
