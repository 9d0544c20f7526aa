package report

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/otelstep/otelstep/otlpwire"
	"github.com/otelstep/otelstep/pipeline"
)

// The test job: targets whose values are known functions of time, scraped
// every interval for scrapes times, and spans and logs of known durations
// and bodies. The truth below is computed from these functions, not by
// running PromQL.
const (
	testToken    = "tok-3c1f9e07d2b54a88"
	testInterval = 5 * time.Second
	testScrapes  = 121 // ten minutes
)

var testT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// Rates of the counters, per second.
const (
	genTokensPerS      = 100.0
	promptTokensPerS   = 40.0
	preemptPerS        = 0.5
	prefixHitsPerS     = 30.0
	prefixQueryPerS    = 120.0
	spanCallsPerS      = 20.0
	idleCPU0, idleCPU1 = 0.75, 0.25 // node_cpu_seconds_total{mode="idle"} rates per cpu
	memTotal, memAvail = 16e9, 4e9
)

// Per-second observations into each histogram's buckets (bounds below):
// their rates are constant, so histogram_quantile's interpolation over them
// is known exactly.
var (
	latBounds = []float64{0.1, 0.5, 1, 2, 5}
	e2eCounts = []uint64{1, 3, 4, 2, 0, 0} // cum 1 4 8 10 10 10: p50 0.625, p90 1.5, p99 1.95
	ttftBnd   = []float64{0.01, 0.05, 0.1, 0.5}
	ttftCnts  = []uint64{2, 6, 1, 1, 0} // cum 2 8 9 10 10: p50 0.01+0.04*3/6=0.03, p99 0.1+0.4*0.9=0.46
	tpotBnd   = []float64{0.01, 0.02, 0.05}
	tpotCnts  = []uint64{5, 4, 1, 0}           // cum 5 9 10 10: p50 0.01 (rank 5 = cum 5 of first bucket: 0+0.01*5/5), p99 0.02+0.03*0.9=0.047
	spanBnd   = []float64{2, 4, 6, 8, 10, 50}  // ms
	spanCnts  = []uint64{0, 10, 6, 4, 0, 0, 0} // cum 0 10 16 20: p50 rank 10 → 2+2*10/10 = 4 ms, p99 rank 19.8 → 6+2*3.8/4 = 7.9 ms
)

var wantQuantiles = map[string]float64{
	"e2e_latency_p50": 0.625, "e2e_latency_p90": 1.5, "e2e_latency_p99": 1.95,
	"ttft_p50": 0.03, "ttft_p99": 0.46,
	"tpot_p50": 0.01, "tpot_p99": 0.047,
	"span_latency_p50": 0.004, "span_latency_p99": 0.0079,
}

// Gauges, as functions of the scrape's index.
func runningAt(i int) float64 { return float64(2 + i%5) }
func waitingAt(i int) float64 { return float64(i / 30) }
func kvAt(i int) float64      { return 0.2 + 0.005*float64(i%20) }
func gpuUtilAt(gpu, i int) float64 {
	return float64(30*gpu+i%7) + 10
}
func gpuMemAt(gpu int) float64    { return 1000 * float64(gpu+1) }
func gpuPowAt(gpu, i int) float64 { return 250 + float64(gpu) + float64(i%3) }
func gpuTempAt(gpu int) float64   { return 60 + float64(gpu) }

// Scrape health: the DCGM target answers up=0 at dcgmDown and misses the
// scrapes dcgmMissing tells altogether.
const dcgmDown = 50

func dcgmMissing(i int) bool { return i >= 70 && i < 73 }

// rampFactor is the mean over the steps of a rate of a counter that starts
// at 0 at the first scrape, relative to its rate: a step's rate window
// spans 4 scrape intervals, and over the first three steps Prometheus's
// rate extrapolates no further back than the counter's zero (the first
// sample), giving 1/4, 2/4 and 3/4 of the rate; the first step has none.
const rampFactor = (0.25 + 0.5 + 0.75 + float64(testScrapes-4)) / float64(testScrapes-1)

// Spans: per trace a root "chat" of rootDur(k) with two children; every
// tenth trace's "tool" child fails. Logs: by severity, with error bodies.
const testTraces = 50

func rootDur(k int) time.Duration { return time.Duration(100+10*k) * time.Millisecond }

var testLogs = []struct {
	sev  logspb.SeverityNumber
	text string
	body string
	n    int
}{
	{logspb.SeverityNumber_SEVERITY_NUMBER_INFO, "INFO", "request done", 40},
	{logspb.SeverityNumber_SEVERITY_NUMBER_WARN, "WARN", "slow request", 7},
	{logspb.SeverityNumber_SEVERITY_NUMBER_ERROR, "ERROR", "CUDA out of memory", 5},
	{logspb.SeverityNumber_SEVERITY_NUMBER_ERROR, "ERROR", "upstream timeout", 3},
	{logspb.SeverityNumber_SEVERITY_NUMBER_FATAL, "", "engine died", 1},
}

// vllmNames are the metric names of one vLLM generation (v1, or v0 where
// the names differ), prefixed as the job's files hold them.
type vllmNames struct {
	prefix                              string // "vllm:" as scraped, "vllm_" after the job's rename
	kv, tpot, prefixHits, prefixQueries string
}

var (
	vllmV1 = vllmNames{"vllm_", "kv_cache_usage_perc", "inter_token_latency_seconds", "prefix_cache_hits_total", "prefix_cache_queries_total"}
	vllmV0 = vllmNames{"vllm:", "gpu_cache_usage_perc", "time_per_output_token_seconds", "gpu_prefix_cache_hits_total", "gpu_prefix_cache_queries_total"}
)

func str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

func resource(service, instance string, withToken bool) *resourcepb.Resource {
	r := &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
		str("service.name", service), str("service.instance.id", instance),
		str("benchmark", "scicode"), str("model", "llama-8b"), str("run_id", "run7"),
		str("slurm_job_id", "4242"), str("cluster", "cluster-a"), str("user", "someone"),
	}}
	if withToken {
		r.Attributes = append(r.Attributes, str("Authorization", testToken))
	}
	return r
}

func gauge(name string, t uint64, v float64, attrs ...*commonpb.KeyValue) *metricspb.Metric {
	return &metricspb.Metric{Name: name, Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: []*metricspb.NumberDataPoint{
		{Attributes: attrs, TimeUnixNano: t, Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: v}}}}}}
}

func counter(name string, t, start uint64, v float64, attrs ...*commonpb.KeyValue) *metricspb.Metric {
	return &metricspb.Metric{Name: name, Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{
		IsMonotonic: true, AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE,
		DataPoints: []*metricspb.NumberDataPoint{{Attributes: attrs, StartTimeUnixNano: start, TimeUnixNano: t, Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: v}}}}}}
}

func hist(name, unit string, t, start uint64, secs float64, bounds []float64, perS []uint64, attrs ...*commonpb.KeyValue) *metricspb.Metric {
	counts := make([]uint64, len(perS))
	var n uint64
	sum := 0.0
	for i, c := range perS {
		counts[i] = c * uint64(secs)
		n += counts[i]
		if i < len(bounds) {
			sum += float64(counts[i]) * bounds[i]
		}
	}
	return &metricspb.Metric{Name: name, Unit: unit, Data: &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{
		AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE,
		DataPoints: []*metricspb.HistogramDataPoint{{Attributes: attrs, StartTimeUnixNano: start, TimeUnixNano: t,
			Count: n, Sum: &sum, BucketCounts: counts, ExplicitBounds: bounds}}}}}
}

func scrapeResource(res *resourcepb.Resource, scope string, ms ...*metricspb.Metric) *metricspb.ResourceMetrics {
	return &metricspb.ResourceMetrics{Resource: res, ScopeMetrics: []*metricspb.ScopeMetrics{{Scope: &commonpb.InstrumentationScope{Name: scope}, Metrics: ms}}}
}

func nanos(t time.Time) uint64 { return uint64(t.UnixNano()) }

// testScrape is the job's scrape i: every target's resource.
func testScrape(names vllmNames, withToken bool, i int) []*metricspb.ResourceMetrics {
	start := nanos(testT0)
	model := str("model_name", "m1")
	{
		at := testT0.Add(time.Duration(i) * testInterval)
		t := nanos(at)
		secs := float64(i) * testInterval.Seconds()
		up := func(v float64) *metricspb.Metric { return gauge("up", t, v) }
		p := names.prefix
		vllm := scrapeResource(resource("gym-vllm/policy", "127.0.0.1:8000", withToken), "prometheusreceiver",
			up(1),
			counter(p+"generation_tokens_total", t, start, genTokensPerS*secs, model),
			counter(p+"prompt_tokens_total", t, start, promptTokensPerS*secs, model),
			counter(p+"num_preemptions_total", t, start, preemptPerS*secs, model),
			counter(p+names.prefixHits, t, start, prefixHitsPerS*secs, model),
			counter(p+names.prefixQueries, t, start, prefixQueryPerS*secs, model),
			gauge(p+"num_requests_running", t, runningAt(i), model),
			gauge(p+"num_requests_waiting", t, waitingAt(i), model),
			gauge(p+names.kv, t, kvAt(i), model),
			hist(p+"e2e_request_latency_seconds", "", t, start, secs, latBounds, e2eCounts, model),
			hist(p+"time_to_first_token_seconds", "", t, start, secs, ttftBnd, ttftCnts, model),
			hist(p+names.tpot, "", t, start, secs, tpotBnd, tpotCnts, model),
			// Metrics no panel charts, for the page's list of the others.
			counter(p+"request_success_total", t, start, 2*secs, model),
			gauge("process_resident_memory_bytes", t, 1e9+1e6*float64(i)),
		)
		var dcgm []*metricspb.Metric
		if dcgmMissing(i) {
			// no scrape at all
		} else if i == dcgmDown {
			dcgm = append(dcgm, up(0))
		} else {
			dcgm = append(dcgm, up(1))
			for gpu := 0; gpu < 2; gpu++ {
				g := []*commonpb.KeyValue{str("gpu", fmt.Sprint(gpu)), str("UUID", fmt.Sprintf("GPU-%d", gpu)), str("modelName", "H100"), str("Hostname", "node1")}
				dcgm = append(dcgm,
					gauge("DCGM_FI_DEV_GPU_UTIL", t, gpuUtilAt(gpu, i), g...),
					gauge("DCGM_FI_DEV_FB_USED", t, gpuMemAt(gpu), g...),
					gauge("DCGM_FI_DEV_POWER_USAGE", t, gpuPowAt(gpu, i), g...),
					gauge("DCGM_FI_DEV_GPU_TEMP", t, gpuTempAt(gpu), g...))
			}
		}
		rms := []*metricspb.ResourceMetrics{vllm}
		if len(dcgm) > 0 {
			rms = append(rms, scrapeResource(resource("dcgm", "node1:9400", withToken), "prometheusreceiver", dcgm...))
		}
		{
			rms = append(rms, scrapeResource(resource("node", "node1:9100", withToken), "prometheusreceiver", up(1),
				counter("node_cpu_seconds_total", t, start, idleCPU0*secs, str("cpu", "0"), str("mode", "idle")),
				counter("node_cpu_seconds_total", t, start, (1-idleCPU0)*secs, str("cpu", "0"), str("mode", "user")),
				counter("node_cpu_seconds_total", t, start, idleCPU1*secs, str("cpu", "1"), str("mode", "idle")),
				gauge("node_memory_MemTotal_bytes", t, memTotal),
				gauge("node_memory_MemAvailable_bytes", t, memAvail)))
		}
		// The span metrics connector's output, in its own resource.
		sm := []*commonpb.KeyValue{str("service.name", "policy-model"), str("span.name", "chat"), str("span.kind", "SPAN_KIND_SERVER")}
		rms = append(rms, scrapeResource(resource("policy-model", "", withToken), "spanmetricsconnector",
			&metricspb.Metric{Name: "traces.span.metrics.calls", Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{IsMonotonic: true,
				AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE,
				DataPoints: []*metricspb.NumberDataPoint{{Attributes: sm, StartTimeUnixNano: start, TimeUnixNano: t,
					Value: &metricspb.NumberDataPoint_AsInt{AsInt: int64(spanCallsPerS * secs)}}}}}},
			hist("traces.span.metrics.duration", "ms", t, start, secs, spanBnd, spanCnts, sm...)))
		return rms
	}
}

// testRequests returns the job's export requests, one per scrape and
// target, then the spans and logs.
func testRequests(names vllmNames, withToken bool) (ms []*colmetricspb.ExportMetricsServiceRequest, ts []*coltracepb.ExportTraceServiceRequest, ls []*collogspb.ExportLogsServiceRequest) {
	for i := 0; i < testScrapes; i++ {
		ms = append(ms, &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: testScrape(names, withToken, i)})
	}

	// Traces: each trace's root starts k seconds in.
	for k := 0; k < testTraces; k++ {
		rs := &tracepb.ResourceSpans{Resource: resource("my-registered-service", "pid-1", withToken)}
		rs.Resource.Attributes = append(rs.Resource.Attributes, str("service.name.override", "policy-model"))
		begin := testT0.Add(time.Duration(k) * time.Second)
		tid := make([]byte, 16)
		tid[0], tid[15] = 0xab, byte(k+1)
		span := func(id byte, parent byte, name string, off, dur time.Duration, errored bool) *tracepb.Span {
			s := &tracepb.Span{TraceId: tid, SpanId: []byte{1, 2, 3, 4, 5, 6, byte(k), id}, Name: name,
				StartTimeUnixNano: nanos(begin.Add(off)), EndTimeUnixNano: nanos(begin.Add(off + dur)), Kind: tracepb.Span_SPAN_KIND_SERVER}
			if parent != 0 {
				s.ParentSpanId = []byte{1, 2, 3, 4, 5, 6, byte(k), parent}
			}
			if errored {
				s.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "tool failed"}
			}
			return s
		}
		d := rootDur(k)
		// Children first, as exporters send them (they end first).
		spans := []*tracepb.Span{
			span(2, 1, "llm", 10*time.Millisecond, d/2, false),
			span(3, 1, "tool", d/2+20*time.Millisecond, d/4, k%10 == 0),
			span(1, 0, "chat", 0, d, false),
		}
		rs.ScopeSpans = []*tracepb.ScopeSpans{{Spans: spans}}
		ts = append(ts, &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{rs}})
	}

	rl := &logspb.ResourceLogs{Resource: resource("policy-model", "pid-1", withToken)}
	sl := &logspb.ScopeLogs{}
	n := 0
	for _, l := range testLogs {
		for c := 0; c < l.n; c++ {
			n++
			sl.LogRecords = append(sl.LogRecords, &logspb.LogRecord{TimeUnixNano: nanos(testT0.Add(time.Duration(n) * time.Second)),
				SeverityNumber: l.sev, SeverityText: l.text, Body: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: l.body}}})
		}
	}
	rl.ScopeLogs = []*logspb.ScopeLogs{sl}
	ls = append(ls, &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{rl}})
	return ms, ts, ls
}

// writeOtelstepJob writes the job as otelstep's sinks do: otlpwire's
// encoders, no Authorization attribute, the vLLM names renamed.
func writeOtelstepJob(t testing.TB, dir string) string {
	t.Helper()
	otel := filepath.Join(dir, "otel")
	if err := os.MkdirAll(otel, 0o755); err != nil {
		t.Fatal(err)
	}
	ms, ts, ls := testRequests(vllmV1, false)
	var mb, tb, lb []byte
	for _, m := range ms {
		mb = append(otlpwire.AppendMetrics(mb, m.ResourceMetrics), '\n')
	}
	for _, r := range ts {
		tb = append(otlpwire.AppendTraces(tb, pipeline.TracesFromProto(r.ResourceSpans)), '\n')
	}
	for _, r := range ls {
		lb = append(otlpwire.AppendLogs(lb, pipeline.LogsFromProto(r.ResourceLogs)), '\n')
	}
	writeFile(t, filepath.Join(otel, "metrics.jsonl"), mb)
	writeFile(t, filepath.Join(otel, "traces.jsonl"), tb)
	writeFile(t, filepath.Join(otel, "logs.jsonl"), lb)
	return dir
}

// writeCollectorJob writes the job as the collector's file exporter does
// (see testdata/README.md): OTLP/JSON with enums as numbers and ids in hex,
// the Authorization attribute on every resource, v0's vLLM names as
// scraped (vllm:...), and a damaged line and a cut last line in the
// metrics file.
func writeCollectorJob(t testing.TB, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ms, ts, ls := testRequests(vllmV0, true)
	var mb, tb, lb []byte
	for i, m := range ms {
		mb = append(append(mb, collectorJSON(t, m)...), '\n')
		if i == 10 {
			mb = append(mb, `{"resourceMetrics":[{"resource":{"attributes":[{"key":"service.name","value":{"stringV`+"\n"...)
		}
	}
	mb = append(mb, `{"resourceMetrics":[{"resource":`...) // the job was killed mid-line
	for _, r := range ts {
		tb = append(append(tb, collectorJSON(t, r)...), '\n')
	}
	for _, r := range ls {
		lb = append(append(lb, collectorJSON(t, r)...), '\n')
	}
	writeFile(t, filepath.Join(dir, "metrics.jsonl"), mb)
	writeFile(t, filepath.Join(dir, "traces.jsonl"), tb)
	writeFile(t, filepath.Join(dir, "logs.jsonl"), lb)
	return dir
}

func writeFile(t testing.TB, p string, b []byte) {
	t.Helper()
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// collectorJSON is protojson's OTLP/JSON with the collector's two
// differences: enums as numbers, trace and span ids as hex.
func collectorJSON(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := protojson.MarshalOptions{UseEnumNumbers: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	hexIDs(doc)
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func hexIDs(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && (k == "traceId" || k == "spanId" || k == "parentSpanId") {
				raw, _ := base64.StdEncoding.DecodeString(s)
				x[k] = hex.EncodeToString(raw)
				continue
			}
			hexIDs(e)
		}
	case []any:
		for _, e := range x {
			hexIDs(e)
		}
	}
}

// near reports whether got is within a relative 1e-6 of want.
func near(got, want float64) bool {
	if want == 0 {
		return math.Abs(got) < 1e-9
	}
	return math.Abs(got-want) <= 1e-6*math.Abs(want)
}

func mustNotContain(t *testing.T, what, s, secret string) {
	t.Helper()
	if strings.Contains(s, secret) {
		t.Errorf("%s holds the token", what)
	}
}
