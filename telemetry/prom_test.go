package telemetry

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// render records with fn on a fresh MeterProvider and renders what a
// manual reader collects.
func render(t *testing.T, typeSuffix bool, fn func(m metric.Meter)) string {
	t.Helper()
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer mp.Shutdown(context.Background())
	fn(mp.Meter("test"))
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WritePrometheus(&b, &rm, typeSuffix); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestPromCounterAndGauge(t *testing.T) {
	got := render(t, true, func(m metric.Meter) {
		c, _ := m.Int64Counter("otelcol_receiver_accepted_spans", metric.WithDescription("Spans accepted."))
		c.Add(context.Background(), 3, metric.WithAttributes(attribute.String("receiver", "otlp"), attribute.String("transport", "http")))
		c.Add(context.Background(), 5, metric.WithAttributes(attribute.String("receiver", "otlp"), attribute.String("transport", "grpc")))
		// already suffixed: not twice
		done, _ := m.Int64Counter("jobs_total")
		done.Add(context.Background(), 1)
		ud, _ := m.Int64UpDownCounter("queue.depth", metric.WithDescription("Queue depth."))
		ud.Add(context.Background(), -2)
		g, _ := m.Float64Gauge("temperature.celsius")
		g.Record(context.Background(), 21.5)
		fc, _ := m.Float64Counter("cpu.seconds")
		fc.Add(context.Background(), 0.25)
	})
	want := `# TYPE cpu_seconds_total counter
cpu_seconds_total 0.25
# TYPE jobs_total counter
jobs_total 1
# HELP otelcol_receiver_accepted_spans_total Spans accepted.
# TYPE otelcol_receiver_accepted_spans_total counter
otelcol_receiver_accepted_spans_total{receiver="otlp",transport="grpc"} 5
otelcol_receiver_accepted_spans_total{receiver="otlp",transport="http"} 3
# HELP queue_depth Queue depth.
# TYPE queue_depth gauge
queue_depth -2
# TYPE temperature_celsius gauge
temperature_celsius 21.5
`
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	// without_type_suffix
	got = render(t, false, func(m metric.Meter) {
		c, _ := m.Int64Counter("a.b")
		c.Add(context.Background(), 7)
	})
	if !strings.Contains(got, "# TYPE a_b counter\na_b 7\n") {
		t.Errorf("without the suffix:\n%s", got)
	}
}

func TestPromHistogram(t *testing.T) {
	got := render(t, true, func(m metric.Meter) {
		h, _ := m.Float64Histogram("request.duration", metric.WithUnit("s"), metric.WithDescription("Request duration."),
			metric.WithExplicitBucketBoundaries(0.1, 1, 10))
		for _, v := range []float64{0.05, 0.5, 0.7, 5, 50} {
			h.Record(context.Background(), v, metric.WithAttributes(attribute.String("exporter", "otlphttp")))
		}
	})
	want := `# HELP request_duration Request duration.
# TYPE request_duration histogram
request_duration_bucket{exporter="otlphttp",le="0.1"} 1
request_duration_bucket{exporter="otlphttp",le="1"} 3
request_duration_bucket{exporter="otlphttp",le="10"} 4
request_duration_bucket{exporter="otlphttp",le="+Inf"} 5
request_duration_sum{exporter="otlphttp"} 56.25
request_duration_count{exporter="otlphttp"} 5
`
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	// an int histogram without attributes
	got = render(t, true, func(m metric.Meter) {
		h, _ := m.Int64Histogram("sizes", metric.WithExplicitBucketBoundaries(10))
		h.Record(context.Background(), 3)
		h.Record(context.Background(), 30)
	})
	if !strings.Contains(got, "sizes_bucket{le=\"10\"} 1\nsizes_bucket{le=\"+Inf\"} 2\nsizes_sum 33\nsizes_count 2\n") {
		t.Errorf("int histogram:\n%s", got)
	}
}

func TestPromEscaping(t *testing.T) {
	got := render(t, true, func(m metric.Meter) {
		g, _ := m.Int64Gauge("1st.metric-name/x", metric.WithDescription("Help with a \\ and a\nnewline."))
		g.Record(context.Background(), 1, metric.WithAttributes(
			attribute.String("path", `C:\dir "quoted"`+"\nnext"),
			attribute.String("service.name", "a"),
			attribute.String("service_name", "b"),
			attribute.Int("2xx", 3),
		))
	})
	want := `# HELP _1st_metric_name_x Help with a \\ and a\nnewline.
# TYPE _1st_metric_name_x gauge
_1st_metric_name_x{_2xx="3",path="C:\\dir \"quoted\"\nnext",service_name="a;b"} 1
`
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestSanitize(t *testing.T) {
	for in, want := range map[string]string{
		"otelcol_process_uptime": "otelcol_process_uptime",
		"http.server.duration":   "http_server_duration",
		"vllm:requests":          "vllm:requests",
		"9lives":                 "_9lives",
		"":                       "_",
		"ünïcode":                "_n_code",
	} {
		if got := sanitizeName(in); got != want {
			t.Errorf("sanitizeName(%q) = %q, want %q", in, got, want)
		}
	}
	if got := sanitizeLabel("vllm:x"); got != "vllm_x" {
		t.Errorf("a label name keeps no colon: %q", got)
	}
}
