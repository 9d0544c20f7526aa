package service

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"github.com/otelstep/otelstep/internal/fakebackend"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/otelstep/otelstep/config"
	"github.com/otelstep/otelstep/otlpwire"
)

// sdkMetricsConfig is a metrics pipeline from an OTLP receiver (gRPC and
// HTTP) to a JSONL file and an OTLP/HTTP backend.
func sdkMetricsConfig(t *testing.T, dir, backendURL string) *config.Config {
	t.Helper()
	yaml := `
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:0
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
  file/metrics:
    path: ` + filepath.Join(dir, "metrics.jsonl") + `
  otlphttp:
    endpoint: ` + backendURL + `
    headers:
      Authorization: Bearer ${env:TOKEN}
service:
  pipelines:
    metrics:
      receivers: [otlp]
      processors: [resource, batch]
      exporters: [file/metrics, otlphttp]
`
	return parseConfig(t, "test.yaml", yaml)
}

// recordSDKMetrics records a known set of instruments, every kind the SDK
// has, on a MeterProvider exporting with exp, and exports them once (at
// Shutdown: a PeriodicReader whose interval never comes).
func recordSDKMetrics(t *testing.T, service string, exp sdkmetric.Exporter) {
	t.Helper()
	ctx := context.Background()
	res := sdkresource.NewSchemaless(attribute.String("service.name", service))
	expView := sdkmetric.NewView(sdkmetric.Instrument{Name: "size"},
		sdkmetric.Stream{Aggregation: sdkmetric.AggregationBase2ExponentialHistogram{MaxSize: 160, MaxScale: 20}})
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithView(expView),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(time.Hour))))
	m := mp.Meter("sdk-test", metric.WithInstrumentationVersion("1.0"))
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	requests, err := m.Int64Counter("requests")
	must(err)
	requests.Add(ctx, 3, metric.WithAttributes(attribute.String("route", "/a")))
	requests.Add(ctx, 4, metric.WithAttributes(attribute.String("route", "/a")))
	requests.Add(ctx, 1, metric.WithAttributes(attribute.String("route", "/b")))
	bytesOut, err := m.Float64Counter("bytes")
	must(err)
	bytesOut.Add(ctx, 2.5)
	inflight, err := m.Int64UpDownCounter("inflight")
	must(err)
	inflight.Add(ctx, 5)
	inflight.Add(ctx, -2)
	temp, err := m.Int64Gauge("temperature")
	must(err)
	temp.Record(ctx, 21)
	temp.Record(ctx, 23)
	load, err := m.Float64Gauge("load")
	must(err)
	load.Record(ctx, 0.75)
	latency, err := m.Float64Histogram("latency", metric.WithExplicitBucketBoundaries(1, 5, 10))
	must(err)
	for _, v := range []float64{0.5, 3, 7, 20} {
		latency.Record(ctx, v)
	}
	size, err := m.Float64Histogram("size")
	must(err)
	for _, v := range []float64{1, 2, 4, 8} {
		size.Record(ctx, v)
	}
	_, err = m.Int64ObservableGauge("queue", metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
		o.Observe(42, metric.WithAttributes(attribute.String("q", "main")))
		return nil
	}))
	must(err)
	if err := mp.Shutdown(ctx); err != nil {
		t.Fatalf("%s: export: %v", service, err)
	}
}

// wantSDKPoints is what recordSDKMetrics sends, per service, as pointKey
// describes each point (times left out).
func wantSDKPoints(service string) []string {
	p := func(s string) string { return service + "|sdk-test@1.0|" + s }
	return []string{
		p("requests|route=/a|sum monotonic cumulative int=7"),
		p("requests|route=/b|sum monotonic cumulative int=1"),
		p("bytes||sum monotonic cumulative double=2.5"),
		p("inflight||sum cumulative int=3"),
		p("temperature||gauge int=23"),
		p("load||gauge double=0.75"),
		p("latency||histogram cumulative count=4 sum=30.5 min=0.5 max=20 bounds=[1 5 10] counts=[1 1 1 1]"),
		p("size||exphistogram cumulative count=4 sum=15 min=1 max=8 zero=0 positive=4"),
		p("queue|q=main|gauge int=42"),
	}
}

func sdkAttrsKey(kvs []*commonpb.KeyValue) string {
	var out []string
	for _, kv := range kvs {
		out = append(out, kv.Key+"="+kv.Value.GetStringValue())
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// sdkPointKeys describes every data point of rms, one string each: service,
// scope, metric, attributes, kind and values; with times, the start and
// point times too.
func sdkPointKeys(rms []*metricspb.ResourceMetrics, times bool) []string {
	var out []string
	for _, rm := range rms {
		svc := ""
		for _, kv := range rm.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				svc = kv.Value.GetStringValue()
			}
		}
		for _, sm := range rm.ScopeMetrics {
			scope := sm.GetScope().GetName() + "@" + sm.GetScope().GetVersion()
			for _, m := range sm.Metrics {
				add := func(attrs []*commonpb.KeyValue, start, at uint64, s string) {
					k := svc + "|" + scope + "|" + m.Name + "|" + sdkAttrsKey(attrs) + "|" + s
					if times {
						k += fmt.Sprintf(" start=%d time=%d", start, at)
					}
					out = append(out, k)
				}
				num := func(p *metricspb.NumberDataPoint) string {
					if v, ok := p.Value.(*metricspb.NumberDataPoint_AsInt); ok {
						return fmt.Sprintf("int=%d", v.AsInt)
					}
					return fmt.Sprintf("double=%g", p.GetAsDouble())
				}
				temporality := func(t metricspb.AggregationTemporality) string {
					if t == metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE {
						return "cumulative"
					}
					return "delta"
				}
				switch d := m.Data.(type) {
				case *metricspb.Metric_Sum:
					kind := "sum "
					if d.Sum.IsMonotonic {
						kind += "monotonic "
					}
					kind += temporality(d.Sum.AggregationTemporality)
					for _, p := range d.Sum.DataPoints {
						add(p.Attributes, p.StartTimeUnixNano, p.TimeUnixNano, kind+" "+num(p))
					}
				case *metricspb.Metric_Gauge:
					for _, p := range d.Gauge.DataPoints {
						add(p.Attributes, p.StartTimeUnixNano, p.TimeUnixNano, "gauge "+num(p))
					}
				case *metricspb.Metric_Histogram:
					for _, p := range d.Histogram.DataPoints {
						add(p.Attributes, p.StartTimeUnixNano, p.TimeUnixNano, fmt.Sprintf("histogram %s count=%d sum=%g min=%g max=%g bounds=%v counts=%v",
							temporality(d.Histogram.AggregationTemporality), p.Count, p.GetSum(), p.GetMin(), p.GetMax(), p.ExplicitBounds, p.BucketCounts))
					}
				case *metricspb.Metric_ExponentialHistogram:
					for _, p := range d.ExponentialHistogram.DataPoints {
						var pos uint64
						for _, c := range p.GetPositive().GetBucketCounts() {
							pos += c
						}
						s := fmt.Sprintf("exphistogram %s count=%d sum=%g min=%g max=%g zero=%d positive=%d",
							temporality(d.ExponentialHistogram.AggregationTemporality), p.Count, p.GetSum(), p.GetMin(), p.GetMax(), p.ZeroCount, pos)
						if times {
							s += fmt.Sprintf(" scale=%d offset=%d buckets=%v", p.Scale, p.GetPositive().GetOffset(), p.GetPositive().GetBucketCounts())
						}
						add(p.Attributes, p.StartTimeUnixNano, p.TimeUnixNano, s)
					}
				default:
					add(nil, 0, 0, fmt.Sprintf("unexpected %T", d))
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// sdkJSONLMetrics reads every line of a metrics JSONL file; it fails on a line
// with a resource or scope of no points.
func sdkJSONLMetrics(t *testing.T, path string) (rms []*metricspb.ResourceMetrics, lines int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		lines++
		req, err := otlpwire.DecodeMetrics(sc.Bytes())
		if err != nil {
			t.Fatalf("%s:%d: %v", path, lines, err)
		}
		sdkCheckNoEmpty(t, fmt.Sprintf("%s:%d", path, lines), req.ResourceMetrics)
		rms = append(rms, req.ResourceMetrics...)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rms, lines
}

func sdkCheckNoEmpty(t *testing.T, where string, rms []*metricspb.ResourceMetrics) {
	t.Helper()
	if len(rms) == 0 {
		t.Errorf("%s: no resources", where)
	}
	for i, rm := range rms {
		if len(rm.ScopeMetrics) == 0 {
			t.Errorf("%s: resource %d has no scopes", where, i)
		}
		for j, sm := range rm.ScopeMetrics {
			n := 0
			for _, m := range sm.Metrics {
				n += len(m.GetGauge().GetDataPoints()) + len(m.GetSum().GetDataPoints()) + len(m.GetHistogram().GetDataPoints()) +
					len(m.GetExponentialHistogram().GetDataPoints()) + len(m.GetSummary().GetDataPoints())
			}
			if n == 0 {
				t.Errorf("%s: resource %d scope %d has no points", where, i, j)
			}
		}
	}
}

// OTLP metrics from the real Go SDK, over OTLP/HTTP (gzip) and OTLP/gRPC,
// arrive in the JSONL file and at the backend, every point with its values:
// counters, up-down counters, gauges, explicit and exponential histograms,
// observable gauges. Requests the collector refuses (an exemplar's trace
// id of 15 bytes) are refused on both transports and leave nothing in
// either sink, and a request of only empty resources is accepted and
// leaves nothing either.
func TestSDKMetricsReachFileAndBackend(t *testing.T) {
	dir := t.TempDir()
	be := fakebackend.New(t)
	s, err := New(sdkMetricsConfig(t, dir, be.URL()), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := runReady(t, ctx, s)
	if len(s.receivers) != 1 {
		t.Fatalf("%d receivers", len(s.receivers))
	}
	grpcAddr, httpAddr := s.receivers[0].GRPCAddr().String(), s.receivers[0].HTTPAddr().String()

	// Refused and empty requests first: nothing of them may show.
	bad := &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{{ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{
		{Name: "bad", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: []*metricspb.NumberDataPoint{
			{Value: &metricspb.NumberDataPoint_AsInt{AsInt: 1}},
			{Value: &metricspb.NumberDataPoint_AsInt{AsInt: 2}, Exemplars: []*metricspb.Exemplar{{TraceId: make([]byte, 15)}}}}}}}}}}}}}
	empty := &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{{}, {ScopeMetrics: []*metricspb.ScopeMetrics{{}}}}}
	postMetrics := func(ct string, body []byte) int {
		t.Helper()
		resp, err := http.Post("http://"+httpAddr+"/v1/metrics", ct, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	badPB, _ := proto.Marshal(bad)
	if code := postMetrics("application/x-protobuf", badPB); code != http.StatusBadRequest {
		t.Errorf("bad id, HTTP protobuf: %d", code)
	}
	if code := postMetrics("application/json", otlpwire.AppendMetrics(nil, bad.ResourceMetrics)); code != http.StatusBadRequest {
		t.Errorf("bad id, HTTP JSON: %d", code)
	}
	emptyPB, _ := proto.Marshal(empty)
	if code := postMetrics("application/x-protobuf", emptyPB); code != http.StatusOK {
		t.Errorf("empty resources, HTTP: %d", code)
	}
	cc, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	if _, err := colmetricspb.NewMetricsServiceClient(cc).Export(ctx, bad); status.Code(err) != codes.InvalidArgument {
		t.Errorf("bad id, gRPC: %v", err)
	}
	if _, err := colmetricspb.NewMetricsServiceClient(cc).Export(ctx, empty); err != nil {
		t.Errorf("empty resources, gRPC: %v", err)
	}

	httpExp, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpoint(httpAddr), otlpmetrichttp.WithInsecure(),
		otlpmetrichttp.WithCompression(otlpmetrichttp.GzipCompression))
	if err != nil {
		t.Fatal(err)
	}
	recordSDKMetrics(t, "sdk-http", httpExp)
	grpcExp, err := otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpoint(grpcAddr), otlpmetricgrpc.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	recordSDKMetrics(t, "sdk-grpc", grpcExp)

	// Stopping flushes the file, then the backend.
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}

	want := append(wantSDKPoints("sdk-grpc"), wantSDKPoints("sdk-http")...)
	sort.Strings(want)
	fileRMs, lines := sdkJSONLMetrics(t, filepath.Join(dir, "metrics.jsonl"))
	if lines == 0 {
		t.Fatal("no JSONL line")
	}
	if got := sdkPointKeys(fileRMs, false); !slices.Equal(got, want) {
		t.Errorf("JSONL points:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var beRMs []*metricspb.ResourceMetrics
	for i, req := range be.Requests() {
		if req.Path != "/v1/metrics" || req.Status != 200 {
			t.Errorf("backend: %s answered %d (%v)", req.Path, req.Status, req.DecodeErr)
			continue
		}
		sdkCheckNoEmpty(t, fmt.Sprintf("backend request %d", i), req.Metrics.ResourceMetrics)
		beRMs = append(beRMs, req.Metrics.ResourceMetrics...)
	}
	if got := sdkPointKeys(beRMs, false); !slices.Equal(got, want) {
		t.Errorf("backend points:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Both copies the same to the last field that varies (times, buckets).
	if f, b := sdkPointKeys(fileRMs, true), sdkPointKeys(beRMs, true); !slices.Equal(f, b) {
		t.Errorf("the file and the backend differ:\n%s\n---\n%s", strings.Join(f, "\n"), strings.Join(b, "\n"))
	}
	// The backend's resources are stamped (the file's have the token left
	// out).
	for _, rm := range beRMs {
		found := false
		for _, kv := range rm.GetResource().GetAttributes() {
			found = found || kv.Key == "Authorization" && kv.Value.GetStringValue() == "Bearer "+testToken
		}
		if !found {
			t.Errorf("a resource without Authorization at the backend: %v", rm.GetResource())
		}
	}
}
