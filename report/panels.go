package report

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

// Panel is a chart defined as one PromQL range query. `$__rate_interval`
// in the query is replaced as Grafana replaces it: the larger of four scrape
// intervals and a step plus a scrape interval.
type Panel struct {
	ID    string `yaml:"id" json:"-"`
	Title string `yaml:"title" json:"title"`
	Unit  string `yaml:"unit" json:"unit"`
	Query string `yaml:"query" json:"query"`
}

// The default panels: those of vLLM's and DCGM's published Grafana
// dashboards, node-exporter's CPU and memory, and the span metrics
// connector's calls and latency, and each scrape target's `up`. Each vLLM query holds both generations of
// names (v0's gpu_cache_usage_perc and gpu_prefix_cache_*, v1's
// kv_cache_usage_perc, prefix_cache_* and inter_token_latency_seconds) with
// `or`, taken after the aggregation so that a job with both never adds them.
// Quantiles are histogram_quantile over rates, as the dashboards compute
// them; vLLM's are summed by (le, job, model_name) so that each server of a
// job is a line of its own.
func DefaultPanels() []Panel {
	q := func(phi, metric string) string {
		return fmt.Sprintf(`histogram_quantile(%s, sum by (le, job, model_name) (rate(%s_bucket[$__rate_interval])))`, phi, metric)
	}
	tpot := func(phi string) string {
		return q(phi, "vllm_inter_token_latency_seconds") + " or " + q(phi, "vllm_time_per_output_token_seconds")
	}
	spanQ := func(phi string) string {
		return fmt.Sprintf(`histogram_quantile(%[1]s, sum by (le, service_name, span_name) (rate(traces_span_metrics_duration_seconds_bucket[$__rate_interval])))`+
			` or histogram_quantile(%[1]s, sum by (le, service_name, span_name) (rate(traces_span_metrics_duration_milliseconds_bucket[$__rate_interval]))) / 1000`, phi)
	}
	prefix := func(hits, queries string) string {
		return fmt.Sprintf(`sum by (job, model_name) (rate(%s[$__rate_interval])) / sum by (job, model_name) (rate(%s[$__rate_interval]))`, hits, queries)
	}
	return []Panel{
		{"generation_tokens_per_s", "vLLM generation tokens/s", "tokens/s", `sum by (job, model_name) (rate(vllm_generation_tokens_total[$__rate_interval]))`},
		{"prompt_tokens_per_s", "vLLM prompt tokens/s", "tokens/s", `sum by (job, model_name) (rate(vllm_prompt_tokens_total[$__rate_interval]))`},
		{"requests_running", "vLLM requests running", "requests", `sum by (job, model_name) (vllm_num_requests_running)`},
		{"requests_waiting", "vLLM requests waiting", "requests", `sum by (job, model_name) (vllm_num_requests_waiting)`},
		{"kv_cache_usage", "vLLM KV cache usage", "ratio", `avg by (job, model_name) (vllm_kv_cache_usage_perc) or avg by (job, model_name) (vllm_gpu_cache_usage_perc)`},
		{"e2e_latency_p50", "vLLM end-to-end latency p50", "s", q("0.5", "vllm_e2e_request_latency_seconds")},
		{"e2e_latency_p90", "vLLM end-to-end latency p90", "s", q("0.9", "vllm_e2e_request_latency_seconds")},
		{"e2e_latency_p99", "vLLM end-to-end latency p99", "s", q("0.99", "vllm_e2e_request_latency_seconds")},
		{"ttft_p50", "vLLM time to first token p50", "s", q("0.5", "vllm_time_to_first_token_seconds")},
		{"ttft_p99", "vLLM time to first token p99", "s", q("0.99", "vllm_time_to_first_token_seconds")},
		{"tpot_p50", "vLLM time per output token (inter-token latency) p50", "s", tpot("0.5")},
		{"tpot_p99", "vLLM time per output token (inter-token latency) p99", "s", tpot("0.99")},
		{"preemptions", "vLLM preemptions/s", "1/s", `sum by (job, model_name) (rate(vllm_num_preemptions_total[$__rate_interval]))`},
		{"prefix_cache_hit_rate", "vLLM prefix cache hit rate", "ratio",
			prefix("vllm_prefix_cache_hits_total", "vllm_prefix_cache_queries_total") + " or " +
				prefix("vllm_gpu_prefix_cache_hits_total", "vllm_gpu_prefix_cache_queries_total") + " or " +
				`avg by (job, model_name) (vllm_gpu_prefix_cache_hit_rate)`},
		{"gpu_util", "GPU utilisation", "%", `avg by (instance, gpu) (DCGM_FI_DEV_GPU_UTIL)`},
		{"gpu_memory_used", "GPU framebuffer memory used", "MiB", `avg by (instance, gpu) (DCGM_FI_DEV_FB_USED)`},
		{"gpu_power", "GPU power draw", "W", `avg by (instance, gpu) (DCGM_FI_DEV_POWER_USAGE)`},
		{"gpu_temperature", "GPU temperature", "°C", `avg by (instance, gpu) (DCGM_FI_DEV_GPU_TEMP)`},
		{"node_cpu", "Node CPU busy", "ratio", `1 - avg by (instance) (rate(node_cpu_seconds_total{mode="idle"}[$__rate_interval]))`},
		{"node_memory_used", "Node memory used", "bytes", `sum by (instance) (node_memory_MemTotal_bytes) - sum by (instance) (node_memory_MemAvailable_bytes)`},
		{"span_calls_per_s", "Span calls/s (span metrics)", "1/s", `sum by (service_name, span_name) (rate(traces_span_metrics_calls_total[$__rate_interval]))`},
		{"span_latency_p50", "Span latency p50 (span metrics)", "s", spanQ("0.5")},
		{"span_latency_p99", "Span latency p99 (span metrics)", "s", spanQ("0.99")},
		{"scrape_up", "Scrape targets up", "up", `up`},
	}
}

var panelIDRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

// LoadPanels reads a --panels file: a YAML list of panels (id, title, unit,
// query), or a mapping with a `panels:` list. A panel whose id is a default
// one replaces it; the others are added after the defaults, in file order.
func LoadPanels(path string, base []Panel) ([]Panel, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("report: panels: %w", err)
	}
	var node yaml.Node
	if err := yaml.Unmarshal(data, &node); err != nil {
		return nil, fmt.Errorf("report: panels %s: %w", path, err)
	}
	// A list of panels, or a mapping with a panels: list; unknown keys are
	// refused, not ignored.
	var doc struct {
		Panels []Panel `yaml:"panels"`
	}
	target := any(&doc)
	if len(node.Content) > 0 && node.Content[0].Kind == yaml.SequenceNode {
		target = &doc.Panels
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(target); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("report: panels %s: %w", path, err)
	}
	list := doc.Panels
	out := slices.Clone(base)
	seen := map[string]bool{}
	for i, p := range list {
		where := fmt.Sprintf("%s: panels[%d]", path, i)
		switch {
		case !panelIDRE.MatchString(p.ID):
			return nil, fmt.Errorf("report: %s: id %q: want a letter then letters, digits, _ or -", where, p.ID)
		case seen[p.ID]:
			return nil, fmt.Errorf("report: %s: id %q given twice", where, p.ID)
		case strings.TrimSpace(p.Query) == "":
			return nil, fmt.Errorf("report: %s (%s): no query", where, p.ID)
		}
		seen[p.ID] = true
		if _, err := parser.NewParser(parser.Options{}).ParseExpr(expandQuery(p.Query, time.Minute)); err != nil {
			return nil, fmt.Errorf("report: %s (%s): query: %w", where, p.ID, err)
		}
		if p.Title == "" {
			p.Title = p.ID
		}
		if k := slices.IndexFunc(out, func(b Panel) bool { return b.ID == p.ID }); k >= 0 {
			out[k] = p
		} else {
			out = append(out, p)
		}
	}
	return out, nil
}

func expandQuery(q string, rateInterval time.Duration) string {
	return strings.ReplaceAll(q, "$__rate_interval", fmt.Sprintf("%dms", rateInterval.Milliseconds()))
}

// Grid is the time steps a job's panels are evaluated at.
type Grid struct {
	Start, End   int64 // Unix ms
	Step         time.Duration
	Scrape       time.Duration // the scrape interval seen in the data
	RateInterval time.Duration
}

// MakeGrid picks about points steps over the job's time span, no finer than
// its scrape interval, from its first point to a step at or after its last.
func (j *Job) MakeGrid(points int, step time.Duration) Grid {
	g := Grid{Start: j.Start, End: j.End, Scrape: j.scrapeInterval()}
	if step <= 0 {
		span := time.Duration(j.End-j.Start) * time.Millisecond
		step = (span / time.Duration(max(points, 1))).Round(time.Second)
	}
	g.Step = max(step, g.Scrape, time.Second)
	g.RateInterval = max(4*g.Scrape, g.Step+g.Scrape)
	// The last step is at or after the job's last point, so that a job
	// shorter than a step still has one step with its samples.
	st := g.Step.Milliseconds()
	g.End = g.Start + (g.End-g.Start+st-1)/st*st
	return g
}

// scrapeInterval is the median spacing of the `up` series' samples, else of
// every series', else 15 s.
func (j *Job) scrapeInterval() time.Duration {
	var gaps []int64
	collect := func(onlyUp bool) {
		for _, s := range j.store.sorted {
			if onlyUp && s.lset.Get(labels.MetricName) != "up" {
				continue
			}
			if len(gaps) >= 100000 {
				return
			}
			ss := s.samples()
			for i := 1; i < len(ss); i++ {
				gaps = append(gaps, ss[i].t-ss[i-1].t)
			}
		}
	}
	collect(true)
	if len(gaps) == 0 {
		collect(false)
	}
	if len(gaps) == 0 {
		return 15 * time.Second
	}
	slices.Sort(gaps)
	return max(time.Duration(gaps[len(gaps)/2])*time.Millisecond, time.Millisecond)
}

// SeriesResult is one series of an evaluated panel.
type SeriesResult struct {
	Labels map[string]string `json:"labels"`
	Mean   float64           `json:"mean"`
	Min    float64           `json:"min"`
	Max    float64           `json:"max"`
	Last   float64           `json:"last"`
	// Values are at the grid's steps, NaN where the query has none.
	Values []float64 `json:"-"`
}

// PanelResult is an evaluated panel.
type PanelResult struct {
	Panel
	Series []SeriesResult `json:"series"`
	Error  string         `json:"error,omitempty"`
}

// evaluator runs range queries over one job.
type evaluator struct {
	eng *promql.Engine
	job *Job
	g   Grid
}

func newEngine() *promql.Engine {
	return promql.NewEngine(promql.EngineOpts{
		MaxSamples:           50_000_000,
		Timeout:              5 * time.Minute,
		LookbackDelta:        5 * time.Minute,
		EnableAtModifier:     true,
		EnableNegativeOffset: true,
	})
}

// steps is the number of steps of the grid.
func (g Grid) steps() int {
	if g.End < g.Start {
		return 0
	}
	return int((g.End-g.Start)/g.Step.Milliseconds()) + 1
}

// Eval evaluates a panel over the job's grid.
func (e *evaluator) Eval(ctx context.Context, p Panel) PanelResult {
	r := PanelResult{Panel: p, Series: []SeriesResult{}}
	if e.job.Start == 0 && e.job.End == 0 {
		return r
	}
	q, err := e.eng.NewRangeQuery(ctx, e.job.store, nil, expandQuery(p.Query, e.g.RateInterval),
		time.UnixMilli(e.g.Start), time.UnixMilli(e.g.End), e.g.Step)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	defer q.Close()
	res := q.Exec(ctx)
	if res.Err != nil {
		r.Error = res.Err.Error()
		return r
	}
	m, err := res.Matrix()
	if err != nil {
		r.Error = err.Error()
		return r
	}
	n := e.g.steps()
	stepMs := e.g.Step.Milliseconds()
	for _, s := range m {
		if len(s.Floats) == 0 {
			continue
		}
		sr := SeriesResult{Labels: s.Metric.Map(), Values: make([]float64, n), Min: math.Inf(1), Max: math.Inf(-1)}
		for i := range sr.Values {
			sr.Values[i] = math.NaN()
		}
		sum, cnt := 0.0, 0
		for _, pt := range s.Floats {
			i := int((pt.T - e.g.Start) / stepMs)
			if i < 0 || i >= n {
				continue
			}
			sr.Values[i] = pt.F
			if math.IsNaN(pt.F) || math.IsInf(pt.F, 0) {
				continue
			}
			sum += pt.F
			cnt++
			sr.Min, sr.Max, sr.Last = min(sr.Min, pt.F), max(sr.Max, pt.F), pt.F
		}
		if cnt == 0 {
			continue
		}
		sr.Mean = sum / float64(cnt)
		r.Series = append(r.Series, sr)
	}
	slices.SortFunc(r.Series, func(a, b SeriesResult) int { return strings.Compare(labelString(a.Labels), labelString(b.Labels)) })
	return r
}

func labelString(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%q", k, m[k])
	}
	return b.String()
}
