package service

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/otelstep/otelstep/config"
	"github.com/otelstep/otelstep/internal/fakebackend"
	"github.com/otelstep/otelstep/internal/testlog"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

const testToken = "svc-test-token-91c2"

// parseConfig parses yaml as the config file name, ${env:TOKEN} being
// testToken.
func parseConfig(t *testing.T, name, yaml string) *config.Config {
	t.Helper()
	cfg, err := config.Parse(name, []byte(yaml), func(k string) (string, bool) {
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

// healthAndOTLP begins the test configs: the health endpoint and an
// OTLP/HTTP receiver, on ports the system picks.
const healthAndOTLP = `
extensions:
  health_check:
    endpoint: 127.0.0.1:0
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:0
`

func testConfig(t *testing.T, dir string) *config.Config { return testConfigTo(t, dir, "") }

// testConfigTo is testConfig with an otlphttp exporter to backendURL as
// well, when it is not empty.
func testConfigTo(t *testing.T, dir, backendURL string) *config.Config {
	t.Helper()
	exporters, backend := "[file/traces]", ""
	if backendURL != "" {
		exporters = "[file/traces, otlphttp]"
		backend = `
  otlphttp:
    endpoint: ` + backendURL + `
    headers:
      Authorization: Bearer ${env:TOKEN}`
	}
	yaml := healthAndOTLP + `processors:
  batch: {}
  resource:
    attributes:
    - key: Authorization
      value: Bearer ${env:TOKEN}
      action: upsert
exporters:
  file/traces:
    path: ` + filepath.Join(dir, "traces.jsonl") + backend + `
service:
  extensions: [health_check]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [resource, batch]
      exporters: ` + exporters + `
`
	return parseConfig(t, "test.yaml", yaml)
}

// runReady runs s until ctx is done, returning once it is healthy; done
// gets Run's result.
// patience bounds every wait on a condition: long enough for a busy CI
// machine, never a measuring window.
const patience = time.Minute

func runReady(t *testing.T, ctx context.Context, s *Service) (done <-chan error) {
	t.Helper()
	ready := make(chan struct{})
	ch := make(chan error, 1)
	go func() { ch <- s.Run(ctx, ready) }()
	select {
	case <-ready:
	case err := <-ch:
		t.Fatalf("Run ended before ready: %v", err)
	case <-time.After(patience):
		t.Fatal("not ready after a minute")
	}
	return ch
}

// A Service built from a config serves health and its own metrics while
// running, stops on cancel with its files closed, and never logs the token.
func TestServiceRunAndStop(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	var logs testlog.Buffer
	log := slog.New(NewRedactingHandler(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}), cfg.Secrets))
	s, err := New(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := runReady(t, ctx, s)
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
	if code, body := get("/metrics"); code != http.StatusOK || !strings.Contains(body, "# TYPE ") {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	if code, body := get("/"); code != http.StatusOK || !strings.Contains(body, `"state":"running"`) {
		t.Fatalf("health while running: %d %s", code, body)
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
	done := runReady(t, ctx, first)
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

// A backend that never answers holds a stop no longer than the backend's
// share of it: Run returns nil (the stop did its work: what was accepted is
// in the JSONL file, flushed first), counts what the backend did not get
// (Stopped) and the log says so; the health endpoint is closed, and the
// token stays out of the log.
func TestServiceStopDeadline(t *testing.T) {
	dir := t.TempDir()
	backend := fakebackend.New(t)
	backend.AnswerAll(fakebackend.Reply{Hang: true}) // until the client gives up or the test ends
	cfg := testConfigTo(t, dir, backend.URL())
	var logs testlog.Buffer
	log := slog.New(NewRedactingHandler(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}), cfg.Secrets))
	s, err := New(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	// A stop of a minute, of which the backend's share is 200 ms: Run
	// returning well before the minute shows the share bounds it.
	s.plan = stopPlan{total: time.Minute, receivers: time.Second, scrapes: time.Second, flush: time.Second, backend: 200 * time.Millisecond, telemetry: time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := runReady(t, ctx, s)

	body, _ := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{Name: "kept-through-the-deadline", TraceId: make([]byte, 16), SpanId: make([]byte, 8)}}}}}}})
	resp, err := http.Post("http://"+s.receivers[0].HTTPAddr().String()+"/v1/traces", "application/x-protobuf", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("export: %d", resp.StatusCode)
	}
	healthURL := "http://" + s.HealthAddr().String() + "/"

	// The request is at the backend, hanging, when the stop begins.
	backend.WaitRequests(t, 1)
	cancel()
	select {
	case err = <-done:
	case <-time.After(s.plan.total):
		t.Fatal("Run did not return before the stop's whole time: the backend's share did not bound it")
	}
	if err != nil {
		t.Fatalf("Run with a hung backend: %v, want nil", err)
	}
	if _, batches, items := s.Stopped(); batches != 1 || items != 1 {
		t.Errorf("Stopped: %d batches, %d items unsent, want 1 and 1", batches, items)
	}
	jsonl, rerr := os.ReadFile(filepath.Join(dir, "traces.jsonl"))
	if rerr != nil || !bytes.Contains(jsonl, []byte("kept-through-the-deadline")) {
		t.Fatalf("JSONL after the forced stop: %v\n%s", rerr, jsonl)
	}
	if _, err := http.Get(healthURL); err == nil {
		t.Fatal("health endpoint still answers after stop")
	}
	out := logs.String()
	if strings.Contains(out, testToken) {
		t.Fatalf("token in the log:\n%s", out)
	}
	if !strings.Contains(out, "unsent_batches=1") || !strings.Contains(out, "unsent_items=1") {
		t.Fatalf("the log does not say what the backend did not get:\n%s", out)
	}
}

// A scrape round reaches the sinks as soon as it is over, through every
// stage of the pipeline (the item counter, transform, resource), not at
// the batch processor's timeout: an hour here.
func TestScrapeRoundFlushedBeforeBatchTimeout(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = io.WriteString(w, "# TYPE round_test gauge\nround_test 1\n")
	}))
	defer target.Close()
	dir := t.TempDir()
	addr := strings.TrimPrefix(target.URL, "http://")
	yaml := `
receivers:
  prometheus:
    config:
      scrape_configs:
      - job_name: round
        scrape_interval: 1h
        static_configs:
        - targets: [` + addr + `, ` + addr + `]
processors:
  batch:
    timeout: 1h
  resource:
    attributes:
    - key: run_id
      value: r1
      action: upsert
  transform:
    metric_statements:
    - context: metric
      statements:
      - replace_pattern(metric.name, "^([^:]+):(.+)$", "$${1}_$${2}")
exporters:
  file/metrics:
    path: ` + filepath.Join(dir, "metrics.jsonl") + `
service:
  pipelines:
    metrics:
      receivers: [prometheus]
      processors: [transform, resource, batch]
      exporters: [file/metrics]
`
	cfg, err := config.Parse("round.yaml", []byte(yaml), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := runReady(t, ctx, s)
	deadline := time.Now().Add(patience)
	var lines int
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
		if lines = bytes.Count(b, []byte("round_test")); lines >= 2 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if lines < 2 {
		t.Fatalf("the round's two scrapes are not in the JSONL after a minute (%d): held to the batch timeout", lines)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
