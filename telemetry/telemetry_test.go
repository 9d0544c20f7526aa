package telemetry

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/otelstep/otelstep/config"
	"github.com/otelstep/otelstep/internal/fakebackend"
	"github.com/otelstep/otelstep/pipeline"
)

func newTelemetry(t *testing.T, cfg config.Telemetry) *Telemetry {
	t.Helper()
	tm, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tm.Shutdown(context.Background()) })
	return tm
}

// record does some of everything a running otelstep records.
func record(tm *Telemetry) {
	tm.Receiver("otlp").Record(pipeline.Traces, HTTP, 7, nil)
	tm.Receiver("otlp").Record(pipeline.Logs, GRPC, 2, errors.New("full"))
	tm.Pipeline("traces").Items(7)
	s := tm.Sink("otlphttp")
	s.Sent(pipeline.Traces, 7)
	s.Failed(pipeline.Metrics, 4)
	s.Dropped(1)
	s.Retried()
	s.Requested(30 * time.Millisecond)
	tm.Sink("file/traces").Wrote(1234)
	tm.Sink("file/traces").ObserveQueue(func() int { return 3 }, 1000)
	st := tm.Scrape("prometheus").Target("node", "localhost:9100")
	st.Scraped(true, 12*time.Millisecond, 500, 480, 20)
	st.Delivered(480, nil)
}

// scrapeText gets h's page.
func scrapeText(t *testing.T, h http.Handler) string {
	t.Helper()
	if h == nil {
		t.Fatal("no handler")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != PromContentType {
		t.Fatalf("/metrics: %d %s %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
	}
	return rec.Body.String()
}

func contains(t *testing.T, page string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(page, w) {
			t.Errorf("the page lacks %q:\n%s", w, page)
		}
	}
}

func lacks(t *testing.T, page string, names ...string) {
	t.Helper()
	for _, n := range names {
		if strings.Contains(page, n) {
			t.Errorf("the page has %q", n)
		}
	}
}

// With no readers, the default level's instruments are on the handler
// the health endpoint serves, with what was recorded.
func TestHandlerNormal(t *testing.T) {
	tm := newTelemetry(t, config.Telemetry{})
	if tm.Level() != LevelNormal {
		t.Fatalf("level %v", tm.Level())
	}
	record(tm)
	page := scrapeText(t, tm.Handler())
	contains(t, page,
		`otelcol_receiver_accepted_spans_total{receiver="otlp",transport="http"} 7`,
		`otelcol_receiver_refused_log_records_total{receiver="otlp",transport="grpc"} 2`,
		`otelcol_receiver_accepted_metric_points_total{receiver="prometheus",transport="http"} 480`,
		`otelstep_pipeline_items_total{pipeline="traces"} 7`,
		`otelcol_exporter_sent_spans_total{exporter="otlphttp"} 7`,
		`otelcol_exporter_send_failed_metric_points_total{exporter="otlphttp"} 4`,
		`otelstep_exporter_dropped_batches_total{exporter="otlphttp"} 1`,
		`otelstep_exporter_retries_total{exporter="otlphttp"} 1`,
		`otelstep_exporter_request_duration_seconds_count{exporter="otlphttp"} 1`,
		`otelstep_exporter_jsonl_bytes_total{exporter="file/traces"} 1234`,
		`otelcol_exporter_queue_size{exporter="file/traces"} 3`,
		`otelcol_exporter_queue_capacity{exporter="file/traces"} 1000`,
		`otelstep_scrape_up{receiver="prometheus",scrape_job="node",target="localhost:9100"} 1`,
		`otelstep_scrape_samples_scraped{receiver="prometheus",scrape_job="node",target="localhost:9100"} 500`,
		`otelstep_scrape_duration_seconds_bucket{receiver="prometheus",scrape_job="node",target="localhost:9100",le="0.025"} 1`,
		// unlabelled, as bench reads them
		"\notelstep_go_mallocs_total ", "\notelcol_process_runtime_total_alloc_bytes_total ",
		"\notelcol_process_uptime_total ", "\notelstep_go_goroutines ", "\notelcol_process_runtime_heap_alloc_bytes ",
	)
	if runtime.GOOS == "linux" {
		contains(t, page, "\notelcol_process_memory_rss ", "\notelcol_process_cpu_seconds_total ")
	}
	lacks(t, page, "otelstep_scrape_series_added", "otelstep_go_gc_cycles")
}

func TestLevels(t *testing.T) {
	none := newTelemetry(t, config.Telemetry{Level: "none"})
	if none.Handler() != nil || none.Receiver("x") != nil || none.Sink("x") != nil || none.Scrape("x") != nil || none.Pipeline("x") != nil {
		t.Error("level none hands out instruments or a handler")
	}
	record(none) // nil sets record nothing, and do not panic
	if err := none.Start(context.Background()); err != nil {
		t.Fatal(err)
	}

	basic := newTelemetry(t, config.Telemetry{Level: "basic"})
	record(basic)
	page := scrapeText(t, basic.Handler())
	contains(t, page, "otelcol_receiver_accepted_spans_total", "otelcol_exporter_queue_size", "otelstep_exporter_dropped_batches_total", "otelcol_process_uptime_total")
	lacks(t, page, "otelstep_pipeline_items", "otelstep_scrape_up", "otelstep_exporter_retries", "otelstep_go_mallocs", "otelstep_exporter_jsonl_bytes")

	detailed := newTelemetry(t, config.Telemetry{Level: "detailed"})
	record(detailed)
	page = scrapeText(t, detailed.Handler())
	contains(t, page, `otelstep_scrape_series_added{receiver="prometheus",scrape_job="node",target="localhost:9100"} 20`,
		`otelstep_scrape_samples_post_metric_relabeling{receiver="prometheus",scrape_job="node",target="localhost:9100"} 480`,
		"\notelstep_go_gc_cycles_total ", "\notelstep_go_heap_goal_bytes ", "otelstep_pipeline_items_total")

	// a nil *Telemetry, as components built without one see it
	var nilT *Telemetry
	record(nilT)
	if nilT.Handler() != nil || nilT.Start(context.Background()) != nil || nilT.Shutdown(context.Background()) != nil {
		t.Error("a nil Telemetry does something")
	}
}

// A pull reader serves the metrics on its host:port, and only there.
func TestPullReader(t *testing.T) {
	tm := newTelemetry(t, config.Telemetry{Readers: []config.MetricReader{{Path: "r[0]", Pull: &config.PullReader{Host: "127.0.0.1", Port: 0, WithoutTypeSuffix: true}}}})
	if tm.Handler() != nil {
		t.Error("with a reader the health endpoint still gets a handler")
	}
	if err := tm.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	addrs := tm.PullAddrs()
	if len(addrs) != 1 {
		t.Fatalf("pull addresses %v", addrs)
	}
	record(tm)
	resp, err := http.Get("http://" + addrs[0].String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != PromContentType {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	// without_type_suffix: no _total
	contains(t, string(body), `otelcol_receiver_accepted_spans{receiver="otlp",transport="http"} 7`)
	if err := tm.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get("http://" + addrs[0].String() + "/metrics"); err == nil {
		t.Error("still served after Shutdown")
	}
	// a port taken is an error naming the reader
	taken := newTelemetry(t, config.Telemetry{Readers: []config.MetricReader{{Path: "service.telemetry.metrics.readers[3]", Pull: &config.PullReader{Host: "127.0.0.1", Port: 1}}}})
	ln := httptest.NewServer(http.NotFoundHandler())
	defer ln.Close()
	taken.pulls[0].hostPort = ln.Listener.Addr().String()
	if err := taken.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "readers[3]") {
		t.Errorf("a taken port: %v", err)
	}
}

// A periodic reader exports nothing before Start, and at Shutdown exports
// what was recorded since, with the configured headers (never the job's
// OTEL_EXPORTER_OTLP_HEADERS) and otelstep's resource.
func TestPeriodicFinalExport(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-leak=job-token")
	t.Setenv("OTEL_EXPORTER_OTLP_METRICS_HEADERS", "x-leak=job-token")
	b := fakebackend.New(t)
	auth := "Bearer tele-secret"
	tm := newTelemetry(t, config.Telemetry{
		Resource: map[string]*string{"Authorization": &auth, "service.instance.id": nil},
		Readers: []config.MetricReader{{Path: "r[0]", Periodic: &config.PeriodicReader{
			Interval: time.Hour, Timeout: 10 * time.Second,
			OTLP: config.OTLPMetricExporter{Endpoint: b.URL(), Headers: map[string]string{"Authorization": auth}, Compression: "gzip", Timeout: 10 * time.Second, Temporality: "cumulative"},
		}}},
	})
	record(tm)
	if err := tm.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := tm.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	reqs := b.Accepted()
	if n := b.Count(nil); n != 1 || len(reqs) != 1 {
		t.Fatalf("%d requests (%d accepted), want the final one", n, len(reqs))
	}
	if h := reqs[0].Header; reqs[0].Path != "/v1/metrics" || h.Get("Authorization") != auth || h.Get("x-leak") != "" || h.Get("Content-Encoding") != "gzip" {
		t.Errorf("request: %s %v", reqs[0].Path, h)
	}
	res := fakebackend.Attrs(reqs[0].Metrics.ResourceMetrics[0].Resource.Attributes)
	if res["service.name"] != "otelstep" || res["Authorization"] != auth || res["service.instance.id"] != "" {
		t.Errorf("resource %v", res)
	}
	got := fakebackend.LastValues(b.Metrics())
	if v := got["otelcol_receiver_accepted_spans"]["receiver=otlp,transport=http"]; v != 7 {
		t.Errorf("accepted spans %v (%v)", v, got["otelcol_receiver_accepted_spans"])
	}
	if v := got["otelstep_scrape_up"]["receiver=prometheus,scrape_job=node,target=localhost:9100"]; v != 1 {
		t.Errorf("scrape up %v", got["otelstep_scrape_up"])
	}
	if got["otelstep_go_mallocs"][""] <= 0 || got["otelcol_process_uptime"][""] <= 0 {
		t.Errorf("process metrics: mallocs %v uptime %v", got["otelstep_go_mallocs"], got["otelcol_process_uptime"])
	}
}

// A periodic reader that is never started sends nothing, even at Shutdown.
func TestPeriodicNotStarted(t *testing.T) {
	b := fakebackend.New(t)
	tm := newTelemetry(t, config.Telemetry{Readers: []config.MetricReader{{Path: "r[0]", Periodic: &config.PeriodicReader{
		Interval: time.Millisecond, Timeout: time.Second,
		OTLP: config.OTLPMetricExporter{Endpoint: b.URL() + "/custom/path", Compression: "none", Timeout: time.Second, Temporality: "delta"},
	}}}})
	record(tm)
	if err := tm.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := b.Count(nil); n != 0 {
		t.Errorf("%d requests from a reader never started", n)
	}
}

// A started periodic reader exports every interval, to the endpoint's own
// path when it has one.
func TestPeriodicExportsEveryInterval(t *testing.T) {
	b := fakebackend.New(t)
	b.Route("/custom/path", "metrics")
	tm := newTelemetry(t, config.Telemetry{Readers: []config.MetricReader{{Path: "r[0]", Periodic: &config.PeriodicReader{
		Interval: 5 * time.Millisecond, Timeout: 5 * time.Second,
		OTLP: config.OTLPMetricExporter{Endpoint: b.URL() + "/custom/path", Compression: "none", Timeout: 5 * time.Second, Temporality: "delta"},
	}}}})
	if err := tm.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	tm.Receiver("otlp").Record(pipeline.Metrics, GRPC, 11, nil)
	b.WaitRequests(t, 2) // two exports, without waiting on a clock
	if err := tm.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := b.Requests()[0]; r.Path != "/custom/path" || r.Status != 200 {
		t.Errorf("path %q, answered %d (%v)", r.Path, r.Status, r.DecodeErr)
	}
}
