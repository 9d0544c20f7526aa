package report

import (
	"context"
	"testing"
)

// TestCollectorFilesAsWritten reads the collector's own file-exporter
// output (testdata/peer): its vLLM scrape with `vllm:` names, telemetrygen's
// spans and logs, and the token on every resource.
func TestCollectorFilesAsWritten(t *testing.T) {
	r, err := Build(context.Background(), Config{Dirs: []string{"testdata/peer"}, Page: true})
	if err != nil {
		t.Fatal(err)
	}
	js := r.Jobs[0]
	for _, f := range js.Files {
		if f.Skipped != 0 {
			t.Errorf("%+v", f)
		}
	}
	names := map[string]MetricInfo{}
	for _, m := range js.job.Metrics() {
		names[m.Name] = m
	}
	for name, typ := range map[string]string{
		"vllm_generation_tokens_total":     "counter",
		"vllm_e2e_request_latency_seconds": "histogram",
		"vllm_kv_cache_usage_perc":         "gauge",
		"up":                               "gauge",
	} {
		if names[name].Type != typ || names[name].Series == 0 {
			t.Errorf("metric %s: %+v, want a %s with series", name, names[name], typ)
		}
	}
	if p := js.Panels["kv_cache_usage"]; len(p.Series) != 1 || p.Series[0].Labels["job"] != "vllm" {
		t.Errorf("kv_cache_usage: %+v", p)
	}
	if len(js.Targets) != 1 || js.Targets[0].Job != "vllm" || js.Targets[0].Instance != "127.0.0.1:18200" || js.Targets[0].Scrapes != 2 || js.Targets[0].UpRatio != 1 {
		t.Errorf("targets %+v", js.Targets)
	}
	if len(js.Spans) != 3 {
		t.Fatalf("spans %+v", js.Spans)
	}
	for _, s := range js.Spans {
		if s.Service != "gym-vllm" || s.Count != 2 || s.Errors != 2 || !(s.P50 > 0) {
			t.Errorf("span %+v", s)
		}
	}
	if js.Logs.BySeverity["INFO"] != 5 {
		t.Errorf("logs %+v", js.Logs)
	}
	j, md, page := writeOutputs(t, r)
	for what, s := range map[string]string{"json": j, "markdown": md, "page": page} {
		mustNotContain(t, what, s, "example-ingest-token")
	}
}
