package service

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/otelstep/otelstep/config"
	"github.com/otelstep/otelstep/internal/fakebackend"
	"github.com/otelstep/otelstep/internal/testlog"
)

// telemetryConfig is a traces pipeline from an OTLP/HTTP receiver to a
// file, with the health endpoint and the given service.telemetry section
// (indented under service:).
func telemetryConfig(t *testing.T, dir, telemetry string) *config.Config {
	t.Helper()
	yaml := healthAndOTLP + `exporters:
  file/traces:
    path: ` + filepath.Join(dir, "traces.jsonl") + `
service:
  extensions: [health_check]
` + telemetry + `
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [file/traces]
`
	return parseConfig(t, "telemetry.yaml", yaml)
}

// postSpans sends n spans to the service's OTLP/HTTP receiver as JSON.
func postSpans(t *testing.T, s *Service, n int) {
	t.Helper()
	var spans []string
	for i := range n {
		spans = append(spans, `{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"010203040506070`+string(rune('1'+i))+`","name":"s"}`)
	}
	body := `{"resourceSpans":[{"scopeSpans":[{"spans":[` + strings.Join(spans, ",") + `]}]}]}`
	resp, err := http.Post("http://"+s.receivers[0].HTTPAddr().String()+"/v1/traces", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("OTLP/HTTP: %d", resp.StatusCode)
	}
}

func getHealth(t *testing.T, s *Service, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + s.HealthAddr().String() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// With no readers, otelstep's own metrics are on the health endpoint's
// /metrics, with what it did.
func TestTelemetryOnHealthEndpoint(t *testing.T) {
	s, err := New(telemetryConfig(t, t.TempDir(), ""), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := runReady(t, ctx, s)
	postSpans(t, s, 3)
	code, page := getHealth(t, s, "/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d %s", code, page)
	}
	for _, w := range []string{
		`otelcol_receiver_accepted_spans_total{receiver="otlp",transport="http"} 3`,
		`otelstep_pipeline_items_total{pipeline="traces"} 3`,
		`otelcol_exporter_queue_capacity{exporter="file/traces"} 1000`,
		"\notelstep_go_mallocs_total ",
		"\notelcol_process_uptime_total ",
	} {
		if !strings.Contains(page, w) {
			t.Errorf("/metrics lacks %q:\n%s", w, page)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// sum is the last value of metric name's sum point with the attribute
// key=value at b, and whether there is one.
func sum(b *fakebackend.Backend, name, key, value string) (int64, bool) {
	var v int64
	found := false
	for _, rm := range b.Metrics() {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if m.Name != name || m.GetSum() == nil {
					continue
				}
				for _, p := range m.GetSum().DataPoints {
					for _, a := range p.Attributes {
						if a.Key == key && a.Value.GetStringValue() == value {
							v, found = p.GetAsInt(), true
						}
					}
				}
			}
		}
	}
	return v, found
}

// With a periodic reader, otelstep's own metrics go to its backend (the
// last export at stop has everything), with its headers, and /metrics on
// the health endpoint says where they are.
func TestTelemetryPeriodicReader(t *testing.T) {
	be := fakebackend.New(t)
	cfg := telemetryConfig(t, t.TempDir(), `  telemetry:
    metrics:
      readers:
      - periodic:
          interval: 3600000
          exporter:
            otlp:
              protocol: http/protobuf
              endpoint: `+be.URL()+`
              headers:
              - name: Authorization
                value: Bearer ${env:TOKEN}`)
	var logs testlog.Buffer
	s, err := New(cfg, slog.New(NewRedactingHandler(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}), cfg.Secrets)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := runReady(t, ctx, s)
	postSpans(t, s, 2)
	if code, body := getHealth(t, s, "/metrics"); code != http.StatusNotFound || !strings.Contains(body, "readers") {
		t.Errorf("/metrics with a reader: %d %s", code, body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n, _ := sum(be, "otelcol_receiver_accepted_spans", "transport", "http"); n != 2 {
		t.Errorf("accepted spans at the backend: %d", n)
	}
	if n, _ := sum(be, "otelcol_exporter_sent_spans", "exporter", "file/traces"); n != 2 {
		t.Errorf("spans written to the file, at the backend: %d", n)
	}
	for _, r := range be.Requests() {
		if a := r.Header.Get("Authorization"); a != "Bearer "+testToken || r.Path != "/v1/metrics" || r.Status != 200 {
			t.Errorf("%s: Authorization %q, answered %d (%v)", r.Path, a, r.Status, r.DecodeErr)
		}
	}
	if strings.Contains(logs.String(), testToken) {
		t.Errorf("token logged:\n%s", logs.String())
	}
}

// A pull reader serves on its host:port; level none serves nothing.
func TestTelemetryPullAndNone(t *testing.T) {
	cfg := telemetryConfig(t, t.TempDir(), `  telemetry:
    metrics:
      level: basic
      readers:
      - pull:
          exporter:
            prometheus:
              host: 127.0.0.1
              port: 0`)
	s, err := New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := runReady(t, ctx, s)
	postSpans(t, s, 1)
	addrs := s.telemetry.PullAddrs()
	if len(addrs) != 1 {
		t.Fatalf("pull readers bound: %v", addrs)
	}
	resp, err := http.Get("http://" + addrs[0].String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), `otelcol_receiver_accepted_spans_total{receiver="otlp",transport="http"} 1`) || strings.Contains(string(page), "otelstep_pipeline_items") {
		t.Errorf("the pull reader's page at level basic:\n%s", page)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	s, err = New(telemetryConfig(t, t.TempDir(), "  telemetry:\n    metrics:\n      level: none"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	done = runReady(t, ctx, s)
	if code, body := getHealth(t, s, "/metrics"); code != http.StatusNotFound || !strings.Contains(body, "none") {
		t.Errorf("/metrics at level none: %d %s", code, body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
