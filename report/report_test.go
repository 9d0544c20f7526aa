package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/otelstep/otelstep/otlpwire"
)

// emulatedMean is the mean over the grid's steps (one per scrape here) of a
// gauge as PromQL's instant selector sees it: the latest sample at or
// before the step, within the 5 m lookback.
func emulatedMean(steps int, f func(i int) (float64, bool)) float64 {
	sum, n := 0.0, 0
	for k := 0; k < steps; k++ {
		for i := k; i >= 0 && k-i < 60; i-- {
			if v, ok := f(i); ok {
				sum += v
				n++
				break
			}
		}
	}
	return sum / float64(n)
}

func buildTestJobs(t *testing.T) (*Report, []string) {
	t.Helper()
	base := t.TempDir()
	a := writeOtelstepJob(t, filepath.Join(base, "jobA"))
	b := writeCollectorJob(t, filepath.Join(base, "jobB", "otel"))
	r, err := Build(context.Background(), Config{Dirs: []string{a, filepath.Join(base, "jobB")}, Page: true})
	if err != nil {
		t.Fatal(err)
	}
	return r, []string{a, b}
}

// TestTestJobs reads the test's two jobs once, one written by otelstep
// with v1's vLLM names, one in the collector's format with v0's, and checks
// what is made of them.
func TestTestJobs(t *testing.T) {
	r, _ := buildTestJobs(t)
	t.Run("summary matches the truth", func(t *testing.T) { summaryMatchesTruth(t, r) })
	t.Run("damaged lines counted and skipped", func(t *testing.T) { damagedLinesCountedAndSkipped(t, r) })
	t.Run("outputs hold no token", func(t *testing.T) { outputsHoldNoToken(t, r) })
}

// summaryMatchesTruth: both jobs summarise to the figures the test's
// functions of time give.
func summaryMatchesTruth(t *testing.T, r *Report) {
	for ji, js := range r.Jobs {
		name := []string{"otelstep's files", "the collector's files"}[ji]
		t.Run(name, func(t *testing.T) {
			checkJob(t, js)
		})
	}
}

func checkJob(t *testing.T, js *JobSummary) {
	if js.grid.Step != testInterval || js.grid.steps() != testScrapes {
		t.Fatalf("grid: step %v, %d steps; want %v, %d", js.grid.Step, js.grid.steps(), testInterval, testScrapes)
	}
	if js.Start != testT0.Format(time.RFC3339Nano) {
		t.Errorf("start %s, want %s", js.Start, testT0.Format(time.RFC3339Nano))
	}
	one := func(id string) SeriesResult {
		t.Helper()
		p := js.Panels[id]
		if p.Error != "" {
			t.Fatalf("%s: %s", id, p.Error)
		}
		if len(p.Series) != 1 {
			t.Fatalf("%s: %d series, want 1: %+v", id, len(p.Series), p.Series)
		}
		return p.Series[0]
	}
	for id, want := range map[string]float64{
		"generation_tokens_per_s": genTokensPerS * rampFactor,
		"prompt_tokens_per_s":     promptTokensPerS * rampFactor,
		"preemptions":             preemptPerS * rampFactor,
		"prefix_cache_hit_rate":   prefixHitsPerS / prefixQueryPerS, // the ramp cancels out of a ratio of rates
		"span_calls_per_s":        spanCallsPerS * rampFactor,
		"node_cpu":                1 - (idleCPU0+idleCPU1)/2*rampFactor,
		"node_memory_used":        memTotal - memAvail,
		"requests_running":        emulatedMean(testScrapes, func(i int) (float64, bool) { return runningAt(i), true }),
		"requests_waiting":        emulatedMean(testScrapes, func(i int) (float64, bool) { return waitingAt(i), true }),
		"kv_cache_usage":          emulatedMean(testScrapes, func(i int) (float64, bool) { return kvAt(i), true }),
	} {
		s := one(id)
		if !near(s.Mean, want) {
			t.Errorf("%s: mean %v, want %v", id, s.Mean, want)
		}
	}
	// Past the ramp, each step's rate is the counter's.
	for id, want := range map[string]float64{"generation_tokens_per_s": genTokensPerS, "node_cpu": 1 - (idleCPU0+idleCPU1)/2} {
		s := one(id)
		for k := 4; k < len(s.Values); k++ {
			if !near(s.Values[k], want) {
				t.Fatalf("%s: step %d: %v, want %v", id, k, s.Values[k], want)
			}
		}
	}
	for id, want := range wantQuantiles {
		s := one(id)
		if !near(s.Mean, want) || !near(s.Min, want) || !near(s.Max, want) || !near(s.Last, want) {
			t.Errorf("%s: mean %v min %v max %v last %v, want %v throughout", id, s.Mean, s.Min, s.Max, s.Last, want)
		}
	}
	if l := one("generation_tokens_per_s").Labels; l["job"] != "gym-vllm/policy" || l["model_name"] != "m1" {
		t.Errorf("generation_tokens_per_s labels %v", l)
	}
	gpus := map[string]func(gpu, i int) float64{
		"gpu_util":        gpuUtilAt,
		"gpu_memory_used": func(gpu, _ int) float64 { return gpuMemAt(gpu) },
		"gpu_power":       gpuPowAt,
		"gpu_temperature": func(gpu, _ int) float64 { return gpuTempAt(gpu) },
	}
	for id, f := range gpus {
		p := js.Panels[id]
		if len(p.Series) != 2 {
			t.Fatalf("%s: %d series, want one per GPU", id, len(p.Series))
		}
		for gpu, s := range p.Series {
			if s.Labels["gpu"] != string(rune('0'+gpu)) || s.Labels["instance"] != "node1:9400" {
				t.Errorf("%s: series %d labels %v", id, gpu, s.Labels)
			}
			want := emulatedMean(testScrapes, func(i int) (float64, bool) { return f(gpu, i), i != dcgmDown && !dcgmMissing(i) })
			if !near(s.Mean, want) {
				t.Errorf("%s gpu %d: mean %v, want %v", id, gpu, s.Mean, want)
			}
		}
	}

	wantTargets := []Target{
		{Job: "dcgm", Instance: "node1:9400", UpRatio: float64(testScrapes-4) / (testScrapes - 3), Scrapes: testScrapes - 3, Down: 1, Gaps: 1},
		{Job: "gym-vllm/policy", Instance: "127.0.0.1:8000", UpRatio: 1, Scrapes: testScrapes},
		{Job: "node", Instance: "node1:9100", UpRatio: 1, Scrapes: testScrapes},
	}
	if len(js.Targets) != len(wantTargets) {
		t.Fatalf("targets %+v", js.Targets)
	}
	for i, w := range wantTargets {
		g := js.Targets[i]
		if g.Job != w.Job || g.Instance != w.Instance || !near(g.UpRatio, w.UpRatio) || g.Scrapes != w.Scrapes || g.Down != w.Down || g.Gaps != w.Gaps {
			t.Errorf("target %d: %+v, want %+v", i, g, w)
		}
	}

	ms := func(d time.Duration) float64 { return d.Seconds() }
	wantSpans := map[string]SpanStats{
		"chat": {Count: testTraces, P50: ms(rootDur(24)), P99: ms(rootDur(49))},
		"llm":  {Count: testTraces, P50: ms(rootDur(24) / 2), P99: ms(rootDur(49) / 2)},
		"tool": {Count: testTraces, Errors: testTraces / 10, P50: ms(rootDur(24) / 4), P99: ms(rootDur(49) / 4)},
	}
	if len(js.Spans) != len(wantSpans) {
		t.Fatalf("spans %+v", js.Spans)
	}
	for _, s := range js.Spans {
		w := wantSpans[s.Name]
		if s.Service != "policy-model" || s.Count != w.Count || s.Errors != w.Errors || !near(s.P50, w.P50) || !near(s.P99, w.P99) {
			t.Errorf("span %+v, want %+v of service policy-model", s, w)
		}
	}
	if len(js.traces) != 5 || js.traces[0].Root != "policy-model: chat" || !near(js.traces[0].DurS, ms(rootDur(49))) ||
		len(js.traces[0].Spans) != 3 || js.traces[0].Spans[0].Depth != 0 || js.traces[0].Spans[1].Depth != 1 {
		t.Errorf("slowest traces: %+v", js.traces[:min(1, len(js.traces))])
	}

	wantSev := map[string]int{"INFO": 40, "WARN": 7, "ERROR": 8, "FATAL": 1}
	if len(js.Logs.BySeverity) != len(wantSev) {
		t.Errorf("logs by severity %v, want %v", js.Logs.BySeverity, wantSev)
	}
	for k, v := range wantSev {
		if js.Logs.BySeverity[k] != v {
			t.Errorf("logs by severity %v, want %v", js.Logs.BySeverity, wantSev)
		}
	}
	if js.Logs.Errors != 9 {
		t.Errorf("error log records %d, want 9", js.Logs.Errors)
	}
	wantTop := []BodyCount{{"CUDA out of memory", 5}, {"upstream timeout", 3}, {"engine died", 1}}
	if len(js.Logs.TopErrors) != len(wantTop) {
		t.Fatalf("top errors %v, want %v", js.Logs.TopErrors, wantTop)
	}
	for i := range wantTop {
		if js.Logs.TopErrors[i] != wantTop[i] {
			t.Errorf("top errors %v, want %v", js.Logs.TopErrors, wantTop)
		}
	}
	for _, k := range identityKeys {
		if js.Resource[k] == "" {
			t.Errorf("resource has no %s: %v", k, js.Resource)
		}
	}
	if _, ok := js.Resource["Authorization"]; ok {
		t.Error("resource holds Authorization")
	}
}

// damagedLinesCountedAndSkipped: the collector job's metrics file has a
// damaged line and a cut last one.
func damagedLinesCountedAndSkipped(t *testing.T, r *Report) {
	var m FileStats
	for _, f := range r.Jobs[1].Files {
		if filepath.Base(f.Path) == "metrics.jsonl" {
			m = f
		}
	}
	if m.Lines != testScrapes+2 || m.Skipped != 2 || !strings.Contains(m.FirstProblem, "metrics.jsonl:12:") {
		t.Errorf("metrics file: %+v; want %d lines, 2 skipped, first at line 12", m, testScrapes+2)
	}
	for _, f := range r.Jobs[0].Files {
		if f.Skipped != 0 {
			t.Errorf("%+v: skipped lines in otelstep's files", f)
		}
	}
}

// outputsHoldNoToken: the collector's files carry the token on every
// resource; no output does.
func outputsHoldNoToken(t *testing.T, r *Report) {
	j, md, page := writeOutputs(t, r)
	for what, s := range map[string]string{"json": j, "markdown": md, "page": page} {
		mustNotContain(t, what, s, testToken)
		if strings.Contains(strings.ToLower(s), "authorization") {
			t.Errorf("%s names the Authorization attribute", what)
		}
	}
	// The summary's shape, as the issue gives it.
	var doc struct {
		Jobs []struct {
			Dir      string            `json:"dir"`
			Resource map[string]string `json:"resource"`
			Start    string            `json:"start"`
			End      string            `json:"end"`
			Panels   map[string]struct {
				Title, Unit, Query string
				Series             []struct {
					Labels               map[string]string
					Mean, Min, Max, Last *float64
				}
			} `json:"panels"`
			Spans []struct {
				Service, Name string
				Count, Errors int
				P50           float64 `json:"p50_s"`
				P99           float64 `json:"p99_s"`
			} `json:"spans"`
			Logs struct {
				BySeverity map[string]int `json:"by_severity"`
				TopErrors  []struct {
					Body  string
					Count int
				} `json:"top_errors"`
			} `json:"logs"`
			Targets []struct {
				Job, Instance string
				UpRatio       float64 `json:"up_ratio"`
				Scrapes       int
			} `json:"targets"`
		} `json:"jobs"`
	}
	dec := json.NewDecoder(strings.NewReader(j))
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Jobs) != 2 || doc.Jobs[1].Panels["e2e_latency_p99"].Series[0].Mean == nil ||
		math.Abs(*doc.Jobs[1].Panels["e2e_latency_p99"].Series[0].Mean-1.95) > 1e-9 ||
		doc.Jobs[0].Spans[0].Count != testTraces || doc.Jobs[0].Logs.BySeverity["ERROR"] != 8 || doc.Jobs[0].Targets[1].Scrapes != testScrapes {
		t.Errorf("summary JSON does not carry the figures:\n%s", j)
	}
	if !strings.Contains(md, "| e2e_latency_p99 | s | job=gym-vllm/policy model_name=m1 | 1.95 |") {
		t.Errorf("markdown lacks the e2e p99 row:\n%s", md)
	}
}

// writeOutputs writes r's three outputs: the JSON summary, the Markdown
// and the page.
func writeOutputs(t *testing.T, r *Report) (j, md, page string) {
	t.Helper()
	var jb, mb, pb bytes.Buffer
	if err := r.WriteJSON(&jb); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteMarkdown(&mb); err != nil {
		t.Fatal(err)
	}
	if err := r.WritePage(&pb); err != nil {
		t.Fatal(err)
	}
	return jb.String(), mb.String(), pb.String()
}

func TestSecretKey(t *testing.T) {
	for k, want := range map[string]bool{
		"Authorization": true, "authorization": true, "OTEL_TOKEN": true, "x-api-key": true, "X-Api-Key": true,
		"client_secret": true, "db.password": true, "Cookie": true, "aws_access_key_id": true, "apikey": true,
		"max_tokens": false, "gen_ai.usage.input_tokens": false, "service.name": false, "model_name": false,
		"key": false, "tokenizer": false,
	} {
		if got := secretKey(k); got != want {
			t.Errorf("secretKey(%q) = %v, want %v", k, got, want)
		}
	}
}

// TestDeltaSeriesAccumulated: span metrics sent with delta temporality
// (each point the increase since the last) chart as the cumulative ones.
func TestDeltaSeriesAccumulated(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "otel")
	var lines []byte
	sm := []*commonpb.KeyValue{str("service.name", "policy-model"), str("span.name", "chat")}
	step := uint64(spanCallsPerS * testInterval.Seconds())
	for i := 0; i < testScrapes; i++ {
		at := testT0.Add(time.Duration(i) * testInterval)
		inc := step
		if i == 0 {
			inc = 0
		}
		counts := make([]uint64, len(spanCnts))
		var n uint64
		for k, c := range spanCnts {
			counts[k] = c * uint64(testInterval.Seconds())
			if i == 0 {
				counts[k] = 0
			}
			n += counts[k]
		}
		rm := scrapeResource(resource("policy-model", "", false), "spanmetricsconnector",
			&metricspb.Metric{Name: "traces.span.metrics.calls", Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{IsMonotonic: true,
				AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA,
				DataPoints:             []*metricspb.NumberDataPoint{{Attributes: sm, TimeUnixNano: nanos(at), Value: &metricspb.NumberDataPoint_AsInt{AsInt: int64(inc)}}}}}},
			&metricspb.Metric{Name: "traces.span.metrics.duration", Unit: "ms", Data: &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{
				AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA,
				DataPoints:             []*metricspb.HistogramDataPoint{{Attributes: sm, TimeUnixNano: nanos(at), Count: n, BucketCounts: counts, ExplicitBounds: spanBnd}}}}})
		lines = append(otlpwire.AppendMetrics(lines, []*metricspb.ResourceMetrics{rm}), '\n')
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "metrics.jsonl"), lines)
	r, err := Build(context.Background(), Config{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	js := r.Jobs[0]
	if s := js.Panels["span_calls_per_s"].Series; len(s) != 1 || !near(s[0].Mean, spanCallsPerS*rampFactor) {
		t.Errorf("span_calls_per_s: %+v, want mean %v", s, spanCallsPerS*rampFactor)
	}
	if s := js.Panels["span_latency_p99"].Series; len(s) != 1 || !near(s[0].Last, wantQuantiles["span_latency_p99"]) {
		t.Errorf("span_latency_p99: %+v", s)
	}
}

// TestReadStopsWithContext: a cancelled context stops the reading (Ctrl-C
// on a large job) with an error naming where.
func TestReadStopsWithContext(t *testing.T) {
	job := writeOtelstepJob(t, filepath.Join(t.TempDir(), "job"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Build(ctx, Config{Dirs: []string{job}})
	if err == nil || !strings.Contains(err.Error(), "metrics.jsonl:1") || !errors.Is(err, context.Canceled) {
		t.Errorf("Build on a cancelled context: %v", err)
	}
}

// TestLongLinesSkipped: a line over MaxLineBytes is counted and skipped
// without being held; the rest of the file is read.
func TestLongLinesSkipped(t *testing.T) {
	job := writeOtelstepJob(t, filepath.Join(t.TempDir(), "job"))
	p := filepath.Join(job, "otel", "logs.jsonl")
	logs, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	long := append([]byte(`{"resourceLogs":[],"pad":"`), bytes.Repeat([]byte("x"), 3*len(logs))...)
	writeFile(t, p, append(append(long, "\"}\n"...), logs...))
	j, err := Read(context.Background(), job, Options{MaxLineBytes: len(logs) + 1})
	if err != nil {
		t.Fatal(err)
	}
	var st FileStats
	for _, f := range j.Files {
		if filepath.Base(f.Path) == "logs.jsonl" {
			st = f
		}
	}
	if st.Lines != 2 || st.Skipped != 1 || !strings.Contains(st.FirstProblem, "logs.jsonl:1: line longer than") {
		t.Errorf("logs.jsonl: %+v", st)
	}
	if got := j.Logs(10).BySeverity["INFO"]; got != 40 {
		t.Errorf("INFO records after the long line: %d, want 40", got)
	}
}

// TestNoRecordedValueIsStale: a point flagged no-recorded-value (what the
// collector's receiver writes for a series that disappeared) ends the
// series there, as Prometheus's staleness marker does: the lookback does
// not carry its last value on.
func TestNoRecordedValueIsStale(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "otel")
	var lines []byte
	for i := 0; i < 20; i++ {
		at := nanos(testT0.Add(time.Duration(i) * testInterval))
		var rm *metricspb.ResourceMetrics
		switch {
		case i < 10:
			rm = scrapeResource(resource("t", "i", false), "s", gauge("g", at, 7), gauge("other", at, 1))
		case i == 10:
			m := gauge("g", at, 0)
			m.GetGauge().DataPoints[0].Flags = uint32(metricspb.DataPointFlags_DATA_POINT_FLAGS_NO_RECORDED_VALUE_MASK)
			rm = scrapeResource(resource("t", "i", false), "s", m, gauge("other", at, 1))
		default:
			rm = scrapeResource(resource("t", "i", false), "s", gauge("other", at, 1))
		}
		lines = append(otlpwire.AppendMetrics(lines, []*metricspb.ResourceMetrics{rm}), '\n')
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "metrics.jsonl"), lines)
	r, err := Build(context.Background(), Config{Dirs: []string{dir}, Panels: []Panel{{ID: "g", Query: "g"}}})
	if err != nil {
		t.Fatal(err)
	}
	s := r.Jobs[0].Panels["g"].Series
	if len(s) != 1 || len(s[0].Values) != 20 {
		t.Fatalf("g: %+v", s)
	}
	for k, v := range s[0].Values {
		if k < 10 && v != 7 || k >= 10 && !math.IsNaN(v) {
			t.Errorf("g at step %d: %v, want 7 before the marker and nothing from it on", k, v)
		}
	}
}
