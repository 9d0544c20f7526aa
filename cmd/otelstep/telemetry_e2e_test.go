package main

import (
	"context"
	"fmt"
	"github.com/otelstep/otelstep/internal/fakebackend"
	"io"
	"maps"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// lastValue is the last value at b of name's sum or gauge point with
// attributes attrs ("k=v,k=v" in the order otelstep sends them).
func lastValue(b *fakebackend.Backend, name, attrs string) (float64, bool) {
	v, ok := fakebackend.LastValues(b.Metrics())[name][attrs]
	return v, ok
}

// ownMetricsConfig is a config that receives OTLP/HTTP, writes traces to a
// file and to the (first) data backend, with telemetry indented under
// service.
// ownMetricsConfig writes a traces-only config (OTLP/HTTP in, the JSONL file
// and backendURL out, the token stamped) with exporterExtra added to the
// OTLP/HTTP exporter's keys and telemetry as the service's telemetry
// section, and returns its path.
func ownMetricsConfig(t *testing.T, dir, httpAddr, healthAddr, backendURL, exporterExtra, telemetry string) string {
	t.Helper()
	cfg := `extensions:
  health_check:
    endpoint: ` + healthAddr + `
receivers:
  otlp:
    protocols:
      http:
        endpoint: ` + httpAddr + `
` + tokenResource + `exporters:
  file/traces:
    path: ` + filepath.Join(dir, "traces.jsonl") + `
  otlp_http/managed:
    endpoint: ` + backendURL + `
    headers:
      Authorization: Bearer ${env:OTEL_TOKEN}
` + exporterExtra + `service:
  extensions: [health_check]
` + telemetry + `
  pipelines:
    traces:
      receivers: [otlp]
      processors: [resource]
      exporters: [file/traces, otlp_http/managed]
`
	return writeConfig(t, dir, cfg)
}

// sendSpans posts n spans as OTLP/HTTP JSON.
func sendSpans(t *testing.T, httpAddr string, n int) {
	t.Helper()
	var spans []string
	for i := range n {
		spans = append(spans, fmt.Sprintf(`{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"01020304050607%02x","name":"own-%d"}`, i+1, i))
	}
	resp, err := http.Post("http://"+httpAddr+"/v1/traces", "application/json",
		strings.NewReader(`{"resourceSpans":[{"scopeSpans":[{"spans":[`+strings.Join(spans, ",")+`]}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("OTLP/HTTP: %d", resp.StatusCode)
	}
}

// otelstep's own metrics arrive at a second backend through otlpmetrichttp
// when service.telemetry.metrics names it, with values that reflect the
// work done, while the data goes to the first.
func TestOwnMetricsToSecondBackend(t *testing.T) {
	dir := t.TempDir()
	data := newBackend(t)
	own := fakebackend.New(t)
	httpAddr, health := freePort(t), freePort(t)
	cfgPath := ownMetricsConfig(t, dir, httpAddr, health, data.URL(), "", `  telemetry:
    metrics:
      readers:
      - periodic:
          interval: 100
          exporter:
            otlp:
              protocol: http/protobuf
              endpoint: `+own.URL()+`
              headers:
              - name: Authorization
                value: Bearer ${env:OTEL_TOKEN}
    resource:
      Authorization: ${env:OTEL_TOKEN}`)
	o := startOtelstep(t, buildBinary(t), cfgPath, health, "OTEL_TOKEN="+testToken)
	sendSpans(t, httpAddr, 3)

	// The periodic reader exports every 100 ms: wait for an export that
	// has the spans counted.
	accepted := "receiver=otlp,transport=http"
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := own.WaitContext(ctx, func([]*fakebackend.Request) bool {
		v, _ := lastValue(own, "otelcol_receiver_accepted_spans", accepted)
		return v == 3
	}); err != nil {
		t.Fatalf("no export with 3 accepted spans in %v (%d requests)\n%s", patience, own.Count(nil), o.Out.String())
	}
	// and /metrics on the health endpoint says they go elsewhere
	resp, err := http.Get("http://" + health + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("/metrics with a reader: %d", resp.StatusCode)
	}
	o.Stop(t)
	assertNoToken(t, filepath.Dir(cfgPath), cfgPath, o.Out.String())

	// The final export at stop has the sinks' counts too.
	for _, c := range []struct {
		name, attrs string
		want        float64
	}{
		{"otelcol_receiver_accepted_spans", accepted, 3},
		{"otelstep_pipeline_items", "pipeline=traces", 3},
		{"otelcol_exporter_sent_spans", "exporter=file/traces", 3},
		{"otelcol_exporter_sent_spans", "exporter=otlp_http/managed", 3},
		{"otelcol_exporter_queue_capacity", "exporter=otlp_http/managed", 1000},
	} {
		if v, ok := lastValue(own, c.name, c.attrs); !ok || v != c.want {
			t.Errorf("%s{%s} = %v (%v), want %v", c.name, c.attrs, v, ok, c.want)
		}
	}
	for _, name := range []string{"otelcol_process_uptime", "otelcol_process_memory_rss", "otelcol_process_cpu_seconds", "otelstep_go_mallocs", "otelcol_process_runtime_total_alloc_bytes", "otelstep_go_goroutines"} {
		if v, ok := lastValue(own, name, ""); !ok || v <= 0 {
			t.Errorf("%s = %v (%v)", name, v, ok)
		}
	}
	for _, r := range own.Requests() {
		if a := r.Header.Get("Authorization"); a != "Bearer "+testToken || r.Path != "/v1/metrics" || r.Status != 200 {
			t.Errorf("%s: Authorization header %q, answered %d (%v)", r.Path, a, r.Status, r.DecodeErr)
		}
	}
	resource := map[string]string{}
	for _, rm := range own.Metrics() {
		maps.Copy(resource, fakebackend.Attrs(rm.GetResource().GetAttributes()))
	}
	if resource["service.name"] != "otelstep" || resource["Authorization"] != testToken {
		t.Errorf("resource %v", resource)
	}
	// the data backend got the spans and none of otelstep's own metrics
	got := data.seen()
	if !got.spans["own-0"] || !got.spans["own-2"] || len(got.metrics) != 0 {
		t.Errorf("data backend: spans %v, %d metric resources", got.spans, len(got.metrics))
	}
}

// With no readers nothing is sent to a metrics backend, not even one the
// job's environment names for its own processes, and /metrics on the
// health endpoint serves otelstep's own metrics in the Prometheus text
// format.
func TestOwnMetricsWithoutReaders(t *testing.T) {
	dir := t.TempDir()
	data := newBackend(t)
	own := fakebackend.New(t)
	httpAddr, health := freePort(t), freePort(t)
	cfgPath := ownMetricsConfig(t, dir, httpAddr, health, data.URL(), "", "")
	o := startOtelstep(t, buildBinary(t), cfgPath, health, "OTEL_TOKEN="+testToken,
		"OTEL_EXPORTER_OTLP_ENDPOINT="+own.URL(), "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT="+own.URL()+"/v1/metrics")
	sendSpans(t, httpAddr, 2)
	resp, err := http.Get("http://" + health + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("/metrics: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for _, w := range []string{
		"# TYPE otelcol_receiver_accepted_spans_total counter\n",
		`otelcol_receiver_accepted_spans_total{receiver="otlp",transport="http"} 2` + "\n",
		`otelstep_pipeline_items_total{pipeline="traces"} 2` + "\n",
		"\notelstep_go_mallocs_total ", "\notelcol_process_runtime_total_alloc_bytes_total ", "\notelcol_process_memory_rss ",
	} {
		if !strings.Contains(string(page), w) {
			t.Errorf("/metrics lacks %q:\n%s", w, page)
		}
	}
	o.Stop(t)
	assertNoToken(t, filepath.Dir(cfgPath), cfgPath, o.Out.String())
	if n := own.Count(nil); n != 0 {
		t.Errorf("%d requests reached a metrics backend no reader names", n)
	}
}
