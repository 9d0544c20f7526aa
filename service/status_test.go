package service

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/otelstep/otelstep/internal/fakebackend"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/otelstep/otelstep/config"
)

// statusOf fetches the status document.
func statusOf(t *testing.T, s *Service) (int, statusDoc, string) {
	t.Helper()
	resp, err := http.Get("http://" + s.HealthAddr().String() + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var doc statusDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("status document: %v\n%s", err, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("status Content-Type %q", ct)
	}
	return resp.StatusCode, doc, string(b)
}

// statusConfig is a config of two pipelines: traces from OTLP to a JSONL
// file (at tracesPath) and a backend (its endpoint with userinfo and a
// query), metrics from a scrape target to a JSONL file.
func statusConfig(t *testing.T, dir, tracesPath, backend, target string) *config.Config {
	t.Helper()
	yaml := healthAndOTLP + `  prometheus:
    config:
      scrape_configs:
      - job_name: node
        scrape_interval: 1h
        static_configs:
        - targets: [` + target + `]
processors:
  batch: {}
exporters:
  file/traces:
    path: ` + tracesPath + `
  file/metrics:
    path: ` + filepath.Join(dir, "metrics.jsonl") + `
  otlphttp:
    endpoint: ` + strings.Replace(backend, "http://", "http://user:${env:TOKEN}@", 1) + `/?key=${env:TOKEN}
    headers:
      Authorization: Bearer ${env:TOKEN}
service:
  extensions: [health_check]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [file/traces, otlphttp]
    metrics:
      receivers: [prometheus]
      exporters: [file/metrics]
`
	return parseConfig(t, "status.yaml", yaml)
}

// The status document: per pipeline and component, healthy and status,
// the receiver's listener and counts (a refused request's reason), each
// sink's state, the scrape target; the endpoint without its userinfo or
// query, and the token nowhere.
func TestStatusDocument(t *testing.T) {
	backend := fakebackend.New(t)
	backend.Route("/", "traces") // the endpoint's path, its query after it
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "# TYPE up_test gauge\nup_test 1\n")
	}))
	defer target.Close()
	dir := t.TempDir()
	cfg := statusConfig(t, dir, filepath.Join(dir, "traces.jsonl"), backend.URL(), strings.TrimPrefix(target.URL, "http://"))
	s, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if doc := s.status(time.Now()); doc.Healthy || doc.Status != statusStarting {
		t.Errorf("before Run: healthy %v status %s, want unhealthy, %s", doc.Healthy, doc.Status, statusStarting)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := runReady(t, ctx, s)

	otlp := "http://" + s.receivers[0].HTTPAddr().String()
	for _, ct := range []string{"text/plain", "application/x-protobuf"} {
		resp, err := http.Post(otlp+"/v1/traces", ct, bytes.NewReader(traceBody(t)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}

	// The span delivered, the target scraped.
	var exp struct {
		Endpoint, State string
		Fates           map[string]struct{ Items int }
		LastError       string                       `json:"last_error"`
		LastErrorSignal string                       `json:"last_error_signal"`
		ToBackfill      struct{ Batches, Items int } `json:"to_backfill"`
		LeftForReplay   struct{ Batches, Items int } `json:"left_for_replay"`
	}
	var targets []struct {
		Job, Instance, URL string
		Up                 *bool
		LastScrape         *time.Time `json:"last_scrape"`
	}
	code, doc, raw := waitStatus(t, s, func(doc statusDoc) bool {
		remarshal(t, doc.Components["pipeline:traces"].Components["exporter:otlphttp"].Details, &exp)
		remarshal(t, doc.Components["pipeline:metrics"].Components["receiver:prometheus"].Details, &targets)
		return exp.Fates["delivered"].Items == 1 && len(targets) == 1 && targets[0].Up != nil
	})
	if code != http.StatusOK || !doc.Healthy || doc.Status != statusOK || doc.StartTime.IsZero() {
		t.Fatalf("running: %d healthy %v status %s\n%s", code, doc.Healthy, doc.Status, raw)
	}
	if strings.Contains(raw, testToken) || strings.Contains(raw, "user") || strings.Contains(raw, "Authorization") {
		t.Fatalf("a secret, the userinfo or a header in the status document:\n%s", raw)
	}
	traces := doc.Components["pipeline:traces"]
	if traces == nil || doc.Components["pipeline:metrics"] == nil {
		t.Fatalf("pipelines: %s", raw)
	}
	for _, key := range []string{"receiver:otlp", "processor:batch", "exporter:file/traces", "exporter:otlphttp"} {
		if c := traces.Components[key]; c == nil || !c.Healthy || c.Status != statusOK {
			t.Errorf("traces %s: %+v", key, c)
		}
	}
	var rcv struct {
		HTTPEndpoint string `json:"http_endpoint"`
		Accepted     []struct {
			Signal, Transport string
			Requests, Items   uint64
		}
		Refused []struct {
			Reason string
			Count  uint64
		}
		LastRefusal struct {
			Reason string
			Answer string `json:"last_answer"`
			Remote string `json:"last_remote"`
		} `json:"last_refusal"`
	}
	remarshal(t, traces.Components["receiver:otlp"].Details, &rcv)
	if rcv.HTTPEndpoint != s.receivers[0].HTTPAddr().String() {
		t.Errorf("receiver endpoint %q", rcv.HTTPEndpoint)
	}
	if len(rcv.Refused) != 1 || rcv.Refused[0].Reason != "content_type" || rcv.Refused[0].Count != 1 || rcv.LastRefusal.Answer != "HTTP 415" || rcv.LastRefusal.Remote == "" {
		t.Errorf("receiver refusals: %+v", rcv)
	}
	accepted := uint64(0)
	for _, a := range rcv.Accepted {
		if a.Signal == "traces" && a.Transport == "http" {
			accepted = a.Items
		}
	}
	if accepted != 1 {
		t.Errorf("receiver accepted %d spans over HTTP, want 1: %+v", accepted, rcv.Accepted)
	}
	var file struct{ Path, State string }
	remarshal(t, traces.Components["exporter:file/traces"].Details, &file)
	if file.State != "ok" || file.Path != filepath.Join(dir, "traces.jsonl") {
		t.Errorf("file sink: %+v", file)
	}
	if exp.Endpoint != backend.URL()+"/" || exp.State != "ok" {
		t.Errorf("exporter endpoint %q state %q, want %q ok", exp.Endpoint, exp.State, backend.URL()+"/")
	}
	if tg := targets[0]; tg.Job != "node" || tg.Instance != strings.TrimPrefix(target.URL, "http://") || !strings.HasPrefix(tg.URL, target.URL) ||
		!*tg.Up || tg.LastScrape == nil {
		t.Errorf("targets: %+v", targets)
	}

	// The backend refuses (401): the exporter refused, a permanent error
	// (it answers the same until the token is put right), the service
	// unhealthy in the document; GET / as the collector answers, 200.
	backend.AnswerAll(fakebackend.Reply{Status: http.StatusUnauthorized, ContentType: "application/x-protobuf"})
	resp, err := http.Post(otlp+"/v1/traces", "application/x-protobuf", bytes.NewReader(traceBody(t)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	code, doc, raw = waitStatus(t, s, func(doc statusDoc) bool {
		remarshal(t, doc.Components["pipeline:traces"].Components["exporter:otlphttp"].Details, &exp)
		return exp.State == "refused" && exp.LeftForReplay.Batches == 1
	})
	// One exporter serves every pipeline listing it: its error says which
	// signal's request it is of.
	if exp.LastErrorSignal != "traces" {
		t.Errorf("last_error_signal %q, want traces\n%s", exp.LastErrorSignal, raw)
	}
	// The refused batch is left for replay, not counted as to backfill.
	if exp.ToBackfill.Batches != 0 || exp.LeftForReplay.Items != 1 {
		t.Errorf("backlog once refused: to_backfill %+v left_for_replay %+v, want none and 1 batch of 1 span\n%s", exp.ToBackfill, exp.LeftForReplay, raw)
	}
	traces = doc.Components["pipeline:traces"]
	if e := traces.Components["exporter:otlphttp"]; code != http.StatusServiceUnavailable || doc.Healthy || doc.Status != statusPermanent ||
		traces.Status != statusPermanent || e.Healthy || e.Error == "" || !strings.Contains(exp.LastError, "401") {
		t.Errorf("backend refusing: %d healthy %v status %s; pipeline %s; exporter %+v %+v\n%s", code, doc.Healthy, doc.Status, traces.Status, e, exp, raw)
	}
	if !strings.HasPrefix(doc.Error, "exporter:otlphttp: ") || !strings.Contains(doc.Error, "401") {
		t.Errorf("the service's error does not say why it is unhealthy: %q", doc.Error)
	}
	if strings.Contains(raw, testToken) {
		t.Fatalf("the token in the status document:\n%s", raw)
	}
	if !doc.Components["pipeline:metrics"].Healthy {
		t.Errorf("the metrics pipeline unhealthy: %s", raw)
	}
	if code, body := get(t, "http://"+s.HealthAddr().String()+"/"); code != http.StatusOK || !strings.Contains(body, `"status":"Server available"`) {
		t.Errorf("GET / changed: %d %s", code, body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A JSONL file that cannot be written: the service unhealthy (503, as GET
// / says), the file's pipeline and the file sink failing with the reason.
func TestStatusDocumentFailingFile(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("needs /dev/full")
	}
	backend := fakebackend.New(t)
	backend.Route("/", "traces") // the endpoint's path, its query after it
	dir := t.TempDir()
	cfg := statusConfig(t, dir, "/dev/full", backend.URL(), "127.0.0.1:1")
	s, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	// The stop cannot write the file either: short stages, not the job's.
	s.plan = stopPlan{total: 3 * time.Second, receivers: 200 * time.Millisecond, flush: 500 * time.Millisecond, backend: 200 * time.Millisecond, telemetry: 200 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := runReady(t, ctx, s)
	otlp := "http://" + s.receivers[0].HTTPAddr().String()
	deadline := time.Now().Add(patience)
	for s.failing() == nil && time.Now().Before(deadline) {
		resp, err := http.Post(otlp+"/v1/traces", "application/x-protobuf", bytes.NewReader(traceBody(t)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	var targets []struct {
		Up        *bool
		LastError string `json:"last_error"`
	}
	code, doc, raw := waitStatus(t, s, func(doc statusDoc) bool {
		remarshal(t, doc.Components["pipeline:metrics"].Components["receiver:prometheus"].Details, &targets)
		return len(targets) == 1 && targets[0].Up != nil
	})
	traces := doc.Components["pipeline:traces"]
	if code != http.StatusServiceUnavailable || doc.Healthy || !strings.Contains(doc.Error, "no space left") {
		t.Fatalf("file failing: %d healthy %v error %q\n%s", code, doc.Healthy, doc.Error, raw)
	}
	f := traces.Components["exporter:file/traces"]
	var file struct{ State string }
	remarshal(t, f.Details, &file)
	if f.Healthy || f.Status != statusRecoverable || file.State != "failing" || traces.Status != statusRecoverable {
		t.Errorf("failing file sink: %+v %+v, pipeline %s", f, file, traces.Status)
	}
	// A target down is a recoverable error: the pipeline stays healthy.
	if m := doc.Components["pipeline:metrics"]; m == nil || !m.Healthy || m.Status != statusRecoverable || *targets[0].Up || targets[0].LastError == "" ||
		!strings.Contains(m.Components["receiver:prometheus"].Error, "127.0.0.1:1") {
		t.Errorf("the metrics pipeline, its target down: %+v %+v", m, targets)
	}
	cancel()
	<-done
}

// waitStatus fetches the status document until cond holds of it.
func waitStatus(t *testing.T, s *Service, cond func(statusDoc) bool) (int, statusDoc, string) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for {
		code, doc, raw := statusOf(t, s)
		if cond(doc) {
			return code, doc, raw
		}
		if time.Now().After(deadline) {
			t.Fatalf("status document not as awaited after %v:\n%s", patience, raw)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func remarshal(t *testing.T, from, to any) {
	t.Helper()
	b, err := json.Marshal(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, to); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// traceBody is an export request of one span, in protobuf.
func traceBody(t *testing.T) []byte {
	t.Helper()
	b, err := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{
		Spans: []*tracepb.Span{{TraceId: bytes.Repeat([]byte{1}, 16), SpanId: bytes.Repeat([]byte{2}, 8), Name: "s"}}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
