package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/otelstep/otelstep/otlpwire"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	otellog "go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/metric"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// spanSeries is one span metrics series' last point, in a form to compare
// with the collector's: what the backend and the dashboards read.
type spanSeries struct {
	unit, temporality string
	monotonic         bool
	calls             int64
	count             uint64
	sum               float64
	bounds            []float64
	buckets           []uint64
}

// spanMetricsKey names a span metrics point: its metric, its resource's
// attributes and its own, in order, without the values that differ from
// run to run (the token, the process's collector.instance.id) and with the
// golden's run_id.
func spanMetricsKey(rm *metricspb.ResourceMetrics, metric string, attrs []string) string {
	var res []string
	for _, kv := range rm.Resource.GetAttributes() {
		v := kv.Value.GetStringValue()
		switch kv.Key {
		case "Authorization":
			continue
		case "run_id":
			v = "run1" // the golden was made with run_id run1
		}
		res = append(res, kv.Key+"="+v)
	}
	return metric + "|" + strings.Join(res, ",") + "|" + strings.Join(attrs, ",")
}

// spanMetricsOf adds the span metrics points of rm to into (a later point
// of a series replaces an earlier one) and returns what is wrong with
// them: a point without collector.instance.id, a series whose calls and
// histogram count disagree.
func spanMetricsOf(rm *metricspb.ResourceMetrics, into map[string]*spanSeries) (faults []string) {
	calls := map[string]int64{}
	counts := map[string]uint64{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.GetName() != "spanmetricsconnector" {
			continue
		}
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case *metricspb.Metric_Sum:
				for _, p := range d.Sum.DataPoints {
					attrs, id := pointAttrs(p.Attributes)
					if id == "" {
						faults = append(faults, m.Name+" point without collector.instance.id")
					}
					k := spanMetricsKey(rm, "", attrs)
					calls[k] = p.GetAsInt()
					into[spanMetricsKey(rm, m.Name, attrs)] = &spanSeries{unit: m.Unit, temporality: d.Sum.AggregationTemporality.String(), monotonic: d.Sum.IsMonotonic, calls: p.GetAsInt()}
				}
			case *metricspb.Metric_Histogram:
				for _, p := range d.Histogram.DataPoints {
					attrs, _ := pointAttrs(p.Attributes)
					counts[spanMetricsKey(rm, "", attrs)] = p.Count
					into[spanMetricsKey(rm, m.Name, attrs)] = &spanSeries{unit: m.Unit, temporality: d.Histogram.AggregationTemporality.String(),
						count: p.Count, sum: p.GetSum(), bounds: p.ExplicitBounds, buckets: p.BucketCounts}
				}
			}
		}
	}
	for k, c := range calls {
		if n, ok := counts[k]; !ok || uint64(c) != n {
			faults = append(faults, fmt.Sprintf("series %s: calls %d, histogram count %d", k, c, n))
		}
	}
	return faults
}

// pointAttrs lists a point's attributes as k=v in order, without
// collector.instance.id, which it returns.
func pointAttrs(kvs []*commonpb.KeyValue) (attrs []string, instanceID string) {
	for _, kv := range kvs {
		if kv.Key == "collector.instance.id" {
			instanceID = kv.Value.GetStringValue()
			continue
		}
		attrs = append(attrs, kv.Key+"="+kv.Value.GetStringValue())
	}
	return attrs, instanceID
}

// goldenSpanMetrics reads the collector's last flush for spans.json.
func goldenSpanMetrics(t *testing.T) map[string]*spanSeries {
	t.Helper()
	data, err := os.ReadFile("testdata/spanmetrics.peer.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	var req colmetricspb.ExportMetricsServiceRequest
	if err := protojson.Unmarshal(lines[len(lines)-1], &req); err != nil {
		t.Fatal(err)
	}
	golden := map[string]*spanSeries{}
	for _, rm := range req.ResourceMetrics {
		if faults := spanMetricsOf(rm, golden); len(faults) > 0 {
			t.Fatalf("the golden's last flush: %v", faults)
		}
	}
	return golden
}

func TestEndToEndV2(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	vllm := pageServer(t, "testdata/vllm.txt")
	node := pageServer(t, "testdata/node.txt")
	be := newBackend(t)

	grpcAddr, httpAddr, healthAddr, deadAddr := freePort(t), freePort(t), freePort(t), freePort(t)
	cfg, err := os.ReadFile("testdata/collector-v2.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := strings.NewReplacer(
		"localhost:8000", strings.TrimPrefix(vllm.URL, "http://"),
		"localhost:9100", strings.TrimPrefix(node.URL, "http://"),
		"localhost:9400", deadAddr,
		"0.0.0.0:4317", grpcAddr, "0.0.0.0:4318", httpAddr, "0.0.0.0:13133", healthAddr,
		"https://otlp.example.com", be.URL(),
		"/remote/jobs/gym-job-20260921T100000Z-abc123/scicode/otel", filepath.Join(dir, "job", "otel"),
	)
	cfgPath := filepath.Join(dir, "collector.yaml")
	if err := os.WriteFile(cfgPath, []byte(r.Replace(string(cfg))), 0o644); err != nil {
		t.Fatal(err)
	}

	o := startOtelstep(t, bin, cfgPath, healthAddr, "OTEL_TOKEN="+testToken, "SLURM_JOB_ID=4242")

	// The golden's spans, posted twice as the collector's were.
	spans, err := os.ReadFile("testdata/spans.json")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		resp, err := http.Post("http://"+httpAddr+"/v1/traces", "application/json", bytes.NewReader(spans))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("POST spans.json: %s", resp.Status)
		}
	}

	// Every other signal from the real SDK exporters, each producer with
	// its own service.name.
	ctx := context.Background()
	producer := func(name string) *sdkresource.Resource {
		return sdkresource.NewSchemaless(attribute.String("service.name", name))
	}
	texp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(grpcAddr), otlptracegrpc.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(texp), sdktrace.WithResource(producer("sdk-tracer")))
	const nSpans = 25
	for i := range nSpans {
		_, sp := tp.Tracer("e2e").Start(ctx, fmt.Sprintf("sdk-span-%d", i%5))
		sp.End()
	}
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatalf("trace export: %v", err)
	}
	const nCounterAdds = 7
	for _, c := range []struct {
		name string
		exp  func() (sdkmetric.Exporter, error)
	}{
		{"sdk-meter-http", func() (sdkmetric.Exporter, error) {
			return otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpoint(httpAddr), otlpmetrichttp.WithInsecure())
		}},
		{"sdk-meter-grpc", func() (sdkmetric.Exporter, error) {
			return otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpoint(grpcAddr), otlpmetricgrpc.WithInsecure())
		}},
	} {
		exp, err := c.exp()
		if err != nil {
			t.Fatal(err)
		}
		reader := sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(time.Hour))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(producer(c.name)))
		m := mp.Meter("e2e")
		ctr, _ := m.Int64Counter("e2e.requests")
		hist, _ := m.Float64Histogram("e2e.latency", metric.WithUnit("ms"))
		for i := range nCounterAdds {
			ctr.Add(ctx, 1)
			hist.Record(ctx, float64(i))
		}
		if err := mp.Shutdown(ctx); err != nil { // exports once more, then stops
			t.Fatalf("%s: metric export: %v", c.name, err)
		}
	}
	lexp, err := otlploghttp.New(ctx, otlploghttp.WithEndpoint(httpAddr), otlploghttp.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(sdklog.NewBatchProcessor(lexp)), sdklog.WithResource(producer("sdk-logger")))
	const nLogs = 12
	for i := range nLogs {
		var rec otellog.Record
		rec.SetBody(attribute.StringValue(fmt.Sprintf("v2-log-%d", i)))
		lp.Logger("e2e").Emit(ctx, rec)
	}
	if err := lp.Shutdown(ctx); err != nil {
		t.Fatalf("log export: %v", err)
	}

	// Everything is accepted: stop well before the 15 s flush interval, so
	// every span metric comes from the flush at SIGTERM.
	o.Stop(t)

	golden := goldenSpanMetrics(t)
	if len(golden) != 222 {
		t.Fatalf("golden has %d span metrics points in its last flush, want 222 (111 series' calls and duration)", len(golden))
	}
	otel := filepath.Join(dir, "job", "otel")
	jsonl := map[string]*spanSeries{}
	jsonlOverrides := map[string]bool{}
	sdkPoints := map[string]int{} // producer -> points in metrics.jsonl
	forLines(t, filepath.Join(otel, "metrics.jsonl"), func(line []byte) {
		req, err := otlpwire.DecodeMetrics(line)
		if err != nil {
			t.Fatalf("metrics.jsonl: %v", err)
		}
		for _, rm := range req.ResourceMetrics {
			for _, f := range spanMetricsOf(rm, jsonl) {
				t.Errorf("metrics.jsonl: %s", f)
			}
			jsonlOverrides[attr(rm.Resource, "service.name.override")] = true
			if o := attr(rm.Resource, "service.name.override"); strings.HasPrefix(o, "sdk-meter") {
				sdkPoints[o] += points(rm)
			}
		}
	})

	atBackend := map[string]*spanSeries{}
	backendPoints := map[string]int{}
	got := be.seen()
	for _, rm := range got.metrics {
		for _, f := range spanMetricsOf(rm, atBackend) {
			t.Errorf("backend: %s", f)
		}
		if o := attr(rm.Resource, "service.name.override"); strings.HasPrefix(o, "sdk-meter") {
			backendPoints[o] += points(rm)
		}
	}
	for where, got := range map[string]map[string]*spanSeries{"metrics.jsonl": jsonl, "backend": atBackend} {
		matched := 0
		for k, want := range golden {
			g, ok := got[k]
			switch {
			case !ok:
				t.Errorf("%s: series missing: %s", where, k)
			case g.unit != want.unit || g.temporality != want.temporality || g.monotonic != want.monotonic ||
				g.count != want.count || g.sum != want.sum || !slices.Equal(g.bounds, want.bounds) || !slices.Equal(g.buckets, want.buckets):
				t.Errorf("%s: series %s\n got %+v\nwant %+v", where, k, *g, *want)
			case strings.HasPrefix(k, "traces.span.metrics.calls|") && g.calls != want.calls:
				t.Errorf("%s: series %s: calls %d, want %d", where, k, g.calls, want.calls)
			default:
				matched++
			}
		}
		t.Logf("%s: %d of %d golden span metrics series equal the collector's last flush", where, matched, len(golden))
	}
	// The SDK's spans have their own series, under their producer's name.
	sdkCalls := int64(0)
	for k, s := range jsonl {
		if strings.HasPrefix(k, "traces.span.metrics.calls|") && strings.Contains(k, "service.name.override=sdk-tracer") {
			sdkCalls += s.calls
		}
	}
	if sdkCalls != nSpans {
		t.Errorf("span metrics count %d calls of the SDK's spans, want %d", sdkCalls, nSpans)
	}

	// OTLP metrics from both SDK exporters: every point in both sinks (a
	// counter and a histogram, exported at shutdown).
	for _, p := range []string{"sdk-meter-http", "sdk-meter-grpc"} {
		if sdkPoints[p] != 2 || backendPoints[p] != 2 {
			t.Errorf("%s: %d points in metrics.jsonl, %d at the backend; want 2 in each", p, sdkPoints[p], backendPoints[p])
		}
	}
	// Every producer's own name survives as service.name.override, and
	// every resource at the backend carries it and the token.
	for _, name := range []string{"gym-vllm/policy", "node", "dcgm", "sdk-meter-http", "sdk-meter-grpc", "policy-model", "agent", "sandbox-manager"} {
		if !jsonlOverrides[name] {
			t.Errorf("no metrics resource with service.name.override=%s in metrics.jsonl (have %v)", name, jsonlOverrides)
		}
	}
	// The one exception: spans.json's resource without a service.name, in
	// the traces pipeline, where the identity rule runs before the
	// resource processor stamps one (its span metrics have the override:
	// the metrics pipeline's identity rule runs after the stamp).
	overrides := map[string]bool{}
	nameless := 0
	for i, res := range got.resources {
		o := attr(res, "service.name.override")
		overrides[o] = true
		if attr(res, "service.name") != "my-registered-service" {
			t.Errorf("a resource at the backend without the registered service.name: %v", res.Attributes)
		}
		if o == "" {
			nameless++
			if got.resourceSignals[i] != "traces" || len(res.Attributes) != 8 {
				t.Errorf("a %s resource at the backend without service.name.override: %v", got.resourceSignals[i], res.Attributes)
			}
		}
	}
	if nameless > 2 {
		t.Errorf("%d resources without service.name.override at the backend; spans.json's nameless resource, posted twice, makes at most 2", nameless)
	}
	for _, name := range []string{"sdk-tracer", "sdk-logger", "sdk-meter-http", "gym-vllm/policy"} {
		if !overrides[name] {
			t.Errorf("no resource at the backend with service.name.override=%s", name)
		}
	}
	for i := range nLogs {
		if n := fmt.Sprintf("v2-log-%d", i); !got.logs[n] {
			t.Errorf("log record %s did not reach the backend", n)
		}
	}
	if got.dropped != 0 || got.badHeader != 0 {
		t.Errorf("backend dropped %d resources without Authorization; %d requests with a bad header", got.dropped, got.badHeader)
	}
	assertNoToken(t, dir, cfgPath, o.Out.String())
}
