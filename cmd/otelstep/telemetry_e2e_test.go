package main

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// ownMetrics is the second fake backend: it takes otelstep's own metrics
// over OTLP/HTTP and keeps the last value of every sum and gauge point.
type ownMetrics struct {
	mu       sync.Mutex
	requests int
	auth     []string
	resource map[string]string
	last     map[string]map[string]float64 // name -> "k=v,k=v" -> value
	got      chan struct{}                 // a send per request, never blocking
}

func newOwnMetrics(t *testing.T) (*ownMetrics, *httptest.Server) {
	o := &ownMetrics{last: map[string]map[string]float64{}, resource: map[string]string{}, got: make(chan struct{}, 1)}
	srv := httptest.NewServer(o)
	t.Cleanup(srv.Close)
	return o, srv
}

func (o *ownMetrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		body = zr
	}
	data, _ := io.ReadAll(body)
	req := &colmetricspb.ExportMetricsServiceRequest{}
	if err := proto.Unmarshal(data, req); err != nil || r.URL.Path != "/v1/metrics" {
		http.Error(w, fmt.Sprintf("%s: %v", r.URL.Path, err), 400)
		return
	}
	o.mu.Lock()
	o.requests++
	o.auth = append(o.auth, r.Header.Get("Authorization"))
	for _, rm := range req.ResourceMetrics {
		for _, a := range rm.GetResource().GetAttributes() {
			o.resource[a.Key] = a.Value.GetStringValue()
		}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				pts := m.GetSum().GetDataPoints()
				if g := m.GetGauge(); g != nil {
					pts = g.DataPoints
				}
				if o.last[m.Name] == nil {
					o.last[m.Name] = map[string]float64{}
				}
				for _, p := range pts {
					var kv []string
					for _, a := range p.Attributes {
						kv = append(kv, a.Key+"="+a.Value.GetStringValue())
					}
					var v float64
					switch x := p.Value.(type) {
					case *metricspb.NumberDataPoint_AsInt:
						v = float64(x.AsInt)
					case *metricspb.NumberDataPoint_AsDouble:
						v = x.AsDouble
					}
					o.last[m.Name][strings.Join(kv, ",")] = v
				}
				if h := m.GetHistogram(); h != nil {
					for _, p := range h.DataPoints {
						var kv []string
						for _, a := range p.Attributes {
							kv = append(kv, a.Key+"="+a.Value.GetStringValue())
						}
						o.last[m.Name][strings.Join(kv, ",")] = float64(p.Count)
					}
				}
			}
		}
	}
	o.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&colmetricspb.ExportMetricsServiceResponse{})
	_, _ = w.Write(out)
	select {
	case o.got <- struct{}{}:
	default:
	}
}

// value is the last value of name's point with attributes attrs
// ("k=v,k=v" in the order otelstep sends them).
func (o *ownMetrics) value(name, attrs string) (float64, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	v, ok := o.last[name][attrs]
	return v, ok
}

func (o *ownMetrics) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.requests
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
	data := &backend{spans: map[string]bool{}, logs: map[string]bool{}}
	dataSrv := httptest.NewServer(data)
	defer dataSrv.Close()
	own, ownSrv := newOwnMetrics(t)
	httpAddr, health := freePort(t), freePort(t)
	cfgPath := ownMetricsConfig(t, dir, httpAddr, health, dataSrv.URL, "", `  telemetry:
    metrics:
      readers:
      - periodic:
          interval: 100
          exporter:
            otlp:
              protocol: http/protobuf
              endpoint: `+ownSrv.URL+`
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
	deadline := time.After(patience)
	for {
		if v, _ := own.value("otelcol_receiver_accepted_spans", accepted); v == 3 {
			break
		}
		select {
		case <-own.got:
		case <-deadline:
			t.Fatalf("no export with 3 accepted spans in %v (%d requests)\n%s", patience, own.count(), o.Out.String())
		}
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
		if v, ok := own.value(c.name, c.attrs); !ok || v != c.want {
			t.Errorf("%s{%s} = %v (%v), want %v", c.name, c.attrs, v, ok, c.want)
		}
	}
	for _, name := range []string{"otelcol_process_uptime", "otelcol_process_memory_rss", "otelcol_process_cpu_seconds", "otelstep_go_mallocs", "otelcol_process_runtime_total_alloc_bytes", "otelstep_go_goroutines"} {
		if v, ok := own.value(name, ""); !ok || v <= 0 {
			t.Errorf("%s = %v (%v)", name, v, ok)
		}
	}
	own.mu.Lock()
	for _, a := range own.auth {
		if a != "Bearer "+testToken {
			t.Errorf("Authorization header %q", a)
		}
	}
	if own.resource["service.name"] != "otelstep" || own.resource["Authorization"] != testToken {
		t.Errorf("resource %v", own.resource)
	}
	own.mu.Unlock()
	// the data backend got the spans and none of otelstep's own metrics
	data.mu.Lock()
	defer data.mu.Unlock()
	if !data.spans["own-0"] || !data.spans["own-2"] || len(data.metrics) != 0 {
		t.Errorf("data backend: spans %v, %d metric resources", data.spans, len(data.metrics))
	}
}

// With no readers nothing is sent to a metrics backend, not even one the
// job's environment names for its own processes, and /metrics on the
// health endpoint serves otelstep's own metrics in the Prometheus text
// format.
func TestOwnMetricsWithoutReaders(t *testing.T) {
	dir := t.TempDir()
	data := &backend{spans: map[string]bool{}, logs: map[string]bool{}}
	dataSrv := httptest.NewServer(data)
	defer dataSrv.Close()
	own, ownSrv := newOwnMetrics(t)
	httpAddr, health := freePort(t), freePort(t)
	cfgPath := ownMetricsConfig(t, dir, httpAddr, health, dataSrv.URL, "", "")
	o := startOtelstep(t, buildBinary(t), cfgPath, health, "OTEL_TOKEN="+testToken,
		"OTEL_EXPORTER_OTLP_ENDPOINT="+ownSrv.URL, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT="+ownSrv.URL+"/v1/metrics")
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
	if n := own.count(); n != 0 {
		t.Errorf("%d requests reached a metrics backend no reader names", n)
	}
}
