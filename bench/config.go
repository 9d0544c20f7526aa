package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Scenario is what a collector under test is configured to do: the job's
// collector.yaml (prometheus and otlp receivers, the transform, resource and
// batch processors, the OTLP/HTTP and file exporters, health_check) pointed
// at the synthetic targets, a discard backend and a temporary folder.
type Scenario struct {
	Interval time.Duration
	// Jobs maps a scrape job name to its targets; none means no prometheus
	// receiver (the OTLP benchmark).
	Jobs       map[string][]string
	Health     string // host:port
	GRPC, HTTP string // host:port of the OTLP receivers
	Backend    string // base URL
	Dir        string // JSONL files go here
	// Peer adds what a collector needs and otelstep refuses: no internal
	// telemetry server (it would take :8888).
	Peer bool
	// V2 is the orchestrator's v2 config: the span_metrics connector from
	// the traces pipeline to the metrics pipeline (flushed every 15 s), and
	// transform/identity first in every pipeline.
	V2 bool
}

// Token is the ingest token the scenario's config reads from OTEL_TOKEN.
const Token = "bench-ingest-token"

// WriteConfig writes the scenario's YAML to path.
func (s Scenario) WriteConfig(path string) error {
	return os.WriteFile(path, []byte(s.YAML()), 0o644)
}

// YAML renders the scenario as a collector config.
func (s Scenario) YAML() string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	w("extensions:\n  health_check:\n    endpoint: %s", s.Health)
	w("receivers:")
	jobs := make([]string, 0, len(s.Jobs))
	for j := range s.Jobs {
		jobs = append(jobs, j)
	}
	sort.Strings(jobs)
	if len(jobs) > 0 {
		w("  prometheus:\n    config:\n      scrape_configs:")
		for _, j := range jobs {
			w("      - job_name: %s\n        scrape_interval: %s\n        scrape_timeout: %s\n        static_configs:\n        - targets:", j, s.Interval, s.Interval)
			for _, t := range s.Jobs[j] {
				w("          - %s", t)
			}
			w("          labels:\n            gym_service: bench")
		}
	}
	w("  otlp:\n    protocols:\n      grpc:\n        endpoint: %s\n      http:\n        endpoint: %s", s.GRPC, s.HTTP)
	w(`processors:
  batch: {}
  resource:
    attributes:
    - key: service.name
      value: my-registered-service
      action: upsert
    - key: Authorization
      value: ${env:OTEL_TOKEN}
      action: upsert
    - key: user
      value: someone
      action: upsert
    - key: run_id
      value: bench-run
      action: upsert
    - key: slurm_job_id
      value: "12345"
      action: upsert
    - key: benchmark
      value: bench
      action: upsert
    - key: cluster
      value: local
      action: upsert
    - key: model
      value: /checkpoint
      action: upsert
    - key: slurm_job_id
      action: convert
      converted_type: string
  transform/metric_names:
    metric_statements:
    - context: metric
      statements:
      - replace_pattern(metric.name, "^([^:]+):(.+)$", "$${1}_$${2}")`)
	identity, spanMetrics := "", ""
	if s.V2 {
		w("  transform/identity:")
		for _, sig := range []string{"metric", "trace", "log"} {
			w(`    %s_statements:
    - context: resource
      statements:
      - set(resource.attributes["service.name.override"], resource.attributes["service.name"]) where resource.attributes["service.name.override"] == nil and resource.attributes["service.name"] != nil`, sig)
		}
		w(`connectors:
  span_metrics:
    histogram:
      explicit:
        buckets: [250ms, 1s, 2s, 5s, 10s, 30s, 60s, 120s, 300s, 600s, 1800s]
    dimensions:
    - name: service.name.override
    - name: nemo.gym.sandbox.provider
    metrics_flush_interval: 15s`)
		identity, spanMetrics = "transform/identity, ", ", span_metrics"
	}
	w("exporters:\n  otlp_http/managed:\n    endpoint: %s\n    headers:\n      Authorization: Bearer ${env:OTEL_TOKEN}", s.Backend)
	for _, sig := range []string{"metrics", "traces", "logs"} {
		w("  file/%s:\n    path: %s", sig, filepath.Join(s.Dir, sig+".jsonl"))
	}
	w("service:\n  extensions: [health_check]\n  telemetry:\n    logs:\n      level: info")
	if s.Peer {
		w("    metrics:\n      level: none")
	}
	w("  pipelines:")
	metricsRecv := "[otlp]"
	if len(jobs) > 0 {
		metricsRecv = "[prometheus, otlp]"
	}
	metricsRecv = strings.TrimSuffix(metricsRecv, "]") + spanMetrics + "]"
	w("    metrics:\n      receivers: %s\n      processors: [transform/metric_names, %sresource, batch]\n      exporters: [otlp_http/managed, file/metrics]", metricsRecv, identity)
	w("    traces:\n      receivers: [otlp]\n      processors: [%sresource, batch]\n      exporters: [otlp_http/managed, file/traces%s]", identity, spanMetrics)
	w("    logs:\n      receivers: [otlp]\n      processors: [%sresource, batch]\n      exporters: [otlp_http/managed, file/logs]", identity)
	return b.String()
}

// filesSize is the total size of the JSONL files in dir.
func filesSize(dir string) int64 {
	var n int64
	ms, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	for _, m := range ms {
		if fi, err := os.Stat(m); err == nil {
			n += fi.Size()
		}
	}
	return n
}
