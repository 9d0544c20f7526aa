package config

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/otelstep/otelstep/resource/ottl"
)

func env(m map[string]string) Lookup {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

var jobEnv = env(map[string]string{"OTEL_TOKEN": "tok-secret-123", "SLURM_JOB_ID": "4242"})

func TestLoadV1(t *testing.T) {
	c, err := Load("testdata/collector-v1.yaml", jobEnv)
	if err != nil {
		t.Fatal(err)
	}
	p := c.Prometheus["prometheus"]
	if p == nil || len(p.ScrapeConfigs) != 3 {
		t.Fatalf("scrape configs: %+v", p)
	}
	sc := p.ScrapeConfigs[0]
	if sc.JobName != "vllm-policy" || sc.Interval != 15*time.Second || sc.Timeout != 10*time.Second || sc.MetricsPath != "/metrics" || !sc.HonorTimestamps {
		t.Errorf("scrape config 0: %+v", sc)
	}
	if sc.StaticConfigs[0].Labels["gym_service"] != "policy" || sc.StaticConfigs[0].Targets[0] != "localhost:8000" {
		t.Errorf("static config: %+v", sc.StaticConfigs)
	}
	if o := c.OTLP["otlp"]; o.GRPCEndpoint != "0.0.0.0:4317" || o.HTTPEndpoint != "0.0.0.0:4318" {
		t.Errorf("otlp: %+v", o)
	}
	acts := c.Resource["resource"]
	var job, auth *ResourceAction
	for i := range acts {
		switch acts[i].Key {
		case "slurm_job_id":
			if acts[i].Action == "upsert" {
				job = &acts[i]
			}
		case "Authorization":
			auth = &acts[i]
		}
	}
	// A whole ${env:...} reference is typed as YAML types it, as the
	// collector does: the job id arrives as an int, hence the convert action.
	if job == nil || job.Value != int64(4242) {
		t.Errorf("slurm_job_id value = %#v, want int64 4242", job)
	}
	if auth == nil || auth.Value != "tok-secret-123" {
		t.Errorf("Authorization action: %+v", auth)
	}
	tr := c.Transform["transform/metric_names"]
	if tr == nil || len(tr.Statements) != 1 {
		t.Fatalf("transform: %+v", tr)
	}
	st := tr.Statements[0]
	if got := st.Pattern.ReplaceAllString("vllm:num_requests", st.Replacement); got != "vllm_num_requests" {
		t.Errorf("rename gives %q", got)
	}
	e := c.OTLPHTTP["otlp_http/managed"]
	if e.Endpoint != "https://otlp.example.com" || e.Headers["Authorization"] != "Bearer tok-secret-123" || e.Compression != "gzip" {
		t.Errorf("exporter: %+v", e)
	}
	if c.Files["file/traces"].Path == "" || len(c.Service.Pipelines) != 3 {
		t.Errorf("files or pipelines wrong: %+v %+v", c.Files, c.Service.Pipelines)
	}
	if c.Service.LogLevel.String() != "DEBUG" {
		t.Errorf("log level %v", c.Service.LogLevel)
	}
	found := false
	for _, s := range c.Secrets {
		if s == "tok-secret-123" {
			found = true
		}
	}
	if !found {
		t.Errorf("token not among secrets: %d secrets", len(c.Secrets))
	}
}

func TestLoadV2(t *testing.T) {
	c, err := Load("testdata/collector-v2.yaml", jobEnv)
	if err != nil {
		t.Fatal(err)
	}
	cn := c.Connectors["span_metrics"]
	if cn == nil || cn.From != "traces" || cn.To != "metrics" || cn.Line != 5 {
		t.Fatalf("connector: %+v", cn)
	}
	sm := cn.SpanMetrics
	if sm.FlushInterval != 15*time.Second || len(sm.Buckets) != 11 || sm.Buckets[0] != 250*time.Millisecond || sm.Buckets[10] != 30*time.Minute ||
		sm.Unit != "ms" || sm.Namespace != "traces.span.metrics" || sm.Delta || sm.CacheSize != 1000 {
		t.Errorf("span metrics: %+v", sm)
	}
	if len(sm.Dimensions) != 2 || sm.Dimensions[0].Name != "service.name.override" || sm.Dimensions[1].Name != "nemo.gym.sandbox.provider" || sm.Dimensions[0].Default != nil {
		t.Errorf("dimensions: %+v", sm.Dimensions)
	}
	// The traces pipeline feeds the metrics pipeline, so it drains first.
	pos := map[string]int{}
	for i, p := range c.Order() {
		pos[p.ID] = i
	}
	if len(pos) != 3 || pos["traces"] > pos["metrics"] {
		t.Errorf("drain order %v: traces must come before metrics", pos)
	}
	var out bytes.Buffer
	c.Describe(&out)
	for _, want := range []string{
		"connect  span_metrics: traces -> span_metrics -> metrics",
		"every 15s",
		"pipeline metrics: prometheus,otlp,span_metrics -> transform/metric_names,transform/identity,resource,batch -> otlp_http/managed,file/metrics",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("validate output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "tok-secret-123") {
		t.Error("validate output shows the token")
	}
}

// v2 is the orchestrator's current config: these variations of it are
// refused, each naming the connector or key and its line.
func TestConnectorRefused(t *testing.T) {
	v2, err := os.ReadFile("testdata/collector-v2.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := string(v2)
	replace := func(old, new string) string {
		if !strings.Contains(src, old) {
			t.Fatalf("collector-v2.yaml has no %q", old)
		}
		return strings.Replace(src, old, new, 1)
	}
	cases := []struct {
		name, src string
		want      []string
	}{
		{"exporter only", replace("      - otlp\n      - span_metrics\n", "      - otlp\n"),
			[]string{"t.yaml:146:", `connector "span_metrics" (line 5)`, "receiver of no metrics pipeline"}},
		{"receiver only", replace("      - file/traces\n      - span_metrics\n", "      - file/traces\n"),
			[]string{"t.yaml:128:", `connector "span_metrics" (line 5)`, "exporter of no traces pipeline"}},
		{"receiver of traces", replace("    traces:\n      receivers:\n      - otlp\n", "    traces:\n      receivers:\n      - otlp\n      - span_metrics\n"),
			[]string{"t.yaml:140:", `connector "span_metrics" (line 5) gives metrics`, `traces pipeline "traces"`}},
		{"exporter of logs", replace("      - file/logs\n", "      - file/logs\n      - span_metrics\n"),
			[]string{"t.yaml:158:", "takes traces", `logs pipeline "logs"`}},
		{"unknown key", replace("    metrics_flush_interval: 15s\n", "    metrics_flush_interval: 15s\n    exemplars:\n      enabled: true\n"),
			[]string{"t.yaml:24:", `unknown key "exemplars"`, "connectors.span_metrics"}},
		{"unknown histogram", replace("      explicit:\n", "      exponential:\n        max_size: 10\n      explicit:\n"),
			[]string{"t.yaml:7:", `unknown key "exponential"`}},
		{"bad temporality", replace("    metrics_flush_interval: 15s\n", "    metrics_flush_interval: 15s\n    aggregation_temporality: SOMETIMES\n"),
			[]string{"t.yaml:24:", "SOMETIMES"}},
		{"buckets out of order", replace("        - 1s\n", "        - 100ms\n"),
			[]string{"t.yaml:10:", "bounds must increase"}},
		{"unknown connector", replace("  span_metrics:\n    histogram:", "  count:\n    histogram:"),
			[]string{"t.yaml:5:", `"count"`}},
		{"built-in dimension", replace("    - name: nemo.gym.sandbox.provider\n", "    - name: span.kind\n"),
			[]string{"t.yaml:22:", "always added"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(tc.src), jobEnv)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// Only span_metrics is implemented, and it goes from traces to metrics, so
// no config of today can make a cycle; a connector kind that stays in one
// signal could. The check is on the graph, whatever the kinds.
func TestConnectorCycleRefused(t *testing.T) {
	connectorSignals["test_loop"] = [2]string{"metrics", "metrics"}
	defer delete(connectorSignals, "test_loop")
	src := `receivers:
  otlp:
    protocols:
      http:
connectors:
  test_loop/a:
  test_loop/b:
exporters:
  file:
    path: /tmp/x.jsonl
service:
  pipelines:
    metrics/in:
      receivers: [otlp]
      exporters: [test_loop/a]
    metrics/one:
      receivers: [test_loop/a, test_loop/b]
      exporters: [file, test_loop/b]
`
	_, err := Parse("t.yaml", []byte(src), jobEnv)
	if err == nil || !strings.Contains(err.Error(), "cycle") || !strings.Contains(err.Error(), "metrics/one -> metrics/one") || !strings.Contains(err.Error(), "t.yaml:16:") {
		t.Fatalf("want a cycle through metrics/one at line 16, got %v", err)
	}
}

func TestTransformIdentityParses(t *testing.T) {
	src := `
processors:
  transform/identity:
    trace_statements:
    - context: resource
      statements:
      - set(resource.attributes["service.name.override"], resource.attributes["service.name"]) where resource.attributes["service.name.override"] == nil and resource.attributes["service.name"] != nil
receivers:
  otlp:
    protocols:
      grpc:
exporters:
  file:
    path: /tmp/x.jsonl
service:
  pipelines:
    traces:
      receivers: [otlp]
      processors: [transform/identity]
      exporters: [file]
`
	c, err := Parse("t.yaml", []byte(src), jobEnv)
	if err != nil {
		t.Fatal(err)
	}
	st := c.Transform["transform/identity"].Statements[0]
	and, ok := st.Where.(ottl.And)
	if st.Func != ottl.FuncSet || st.Target.Key != "service.name.override" || st.Value.Path.Key != "service.name" || !ok || st.Line != 7 {
		t.Fatalf("parsed %+v", st)
	}
	l, lok := and.L.(ottl.Compare)
	r, rok := and.R.(ottl.Compare)
	if !lok || !rok || l.Negate || l.R.Path != nil || l.R.Lit != nil || !r.Negate || r.L.Path.Key != "service.name" {
		t.Fatalf("where parsed as %#v", st.Where)
	}
}

const base = `receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:0
exporters:
  file/traces:
    path: /tmp/t.jsonl
service:
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [file/traces]
`

func TestRefused(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string // all must appear in the message
	}{
		{"unknown key", strings.Replace(base, "    path: /tmp/t.jsonl", "    path: /tmp/t.jsonl\n    rotation: {}", 1), []string{"t.yaml:9:", "unknown key \"rotation\"", "exporters.file/traces"}},
		{"unknown component", strings.Replace(base, "exporters:\n", "exporters:\n  kafka:\n    brokers: [x]\n", 1), []string{"t.yaml:7:", "\"kafka\""}},
		{"unknown processor", base + "      processors: [memory_limiter]\n", []string{"memory_limiter", "service.pipelines.traces"}},
		{"unset variable", strings.Replace(base, "/tmp/t.jsonl", "${env:JOB_DIR}/t.jsonl", 1), []string{"t.yaml:8:", "JOB_DIR", "not set"}},
		{"unset bare variable", strings.Replace(base, "/tmp/t.jsonl", "${JOB_DIR}/t.jsonl", 1), []string{"JOB_DIR", "not set"}},
		{"unknown statement", base + "processors:\n  transform:\n    metric_statements:\n    - context: metric\n      statements:\n      - truncate_all(attributes, 10)\n", []string{"t.yaml:19:", "truncate_all", "not implemented"}},
		{"unknown action", base + "processors:\n  resource:\n    attributes:\n    - key: a\n      value: b\n      action: hash\n", []string{"t.yaml:19:", "hash"}},
		{"bad duration", base + "processors:\n  batch:\n    timeout: soon\n", []string{"t.yaml:16:", "soon"}},
		{"undefined exporter", strings.Replace(base, "exporters: [file/traces]", "exporters: [file/traces, otlp_http]", 1), []string{"otlp_http", "not defined"}},
		{"empty token", base + "processors:\n  resource:\n    attributes:\n    - key: Authorization\n      value: ${env:EMPTY}\n      action: upsert\n", []string{"Authorization", "empty"}},
	}
	lookup := env(map[string]string{"EMPTY": ""})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(tc.src), lookup)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestExpand(t *testing.T) {
	e := env(map[string]string{"A": "x", "B": ""})
	for in, want := range map[string]string{
		"${env:A}":          "x",
		"${A}-${env:B}":     "x-",
		"$${1}_$${2}":       "${1}_${2}",
		"${env:C:-dflt}":    "dflt",
		"${C:-}":            "",
		"cost $5":           "cost $5",
		"${env:A:-ignored}": "x",
	} {
		got, _, err := expand(in, e)
		if err != nil || got != want {
			t.Errorf("expand(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, _, err := expand("${env:NOPE}", e); err == nil || !strings.Contains(err.Error(), "NOPE") {
		t.Errorf("unset: %v", err)
	}
	if _, _, err := expand("${file:/etc/x}", e); err == nil {
		t.Error("file provider accepted")
	}
}

func TestErrorType(t *testing.T) {
	_, err := Parse("t.yaml", []byte("receivers: [1]\n"), jobEnv)
	var ce *Error
	if !errors.As(err, &ce) || ce.Line != 1 {
		t.Fatalf("want *Error at line 1, got %v", err)
	}
	if _, err := Load("testdata/does-not-exist.yaml", jobEnv); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

// proxy_from_environment is read as Prometheus reads it, false unless set.
func TestProxyFromEnvironment(t *testing.T) {
	for _, tc := range []struct {
		extra string
		want  bool
	}{
		{"", false},
		{"          proxy_from_environment: true\n", true},
		{"          proxy_from_environment: false\n", false},
	} {
		c, err := Parse("t.yaml", []byte(promConfig(tc.extra)), env(nil))
		if err != nil {
			t.Fatalf("%q: %v", tc.extra, err)
		}
		if got := c.Prometheus["prometheus"].ScrapeConfigs[0].ProxyFromEnvironment; got != tc.want {
			t.Errorf("%q: ProxyFromEnvironment %v, want %v", tc.extra, got, tc.want)
		}
	}
	if _, err := Parse("t.yaml", []byte(promConfig("          proxy_from_environment: maybe\n")), env(nil)); err == nil || !strings.Contains(err.Error(), "proxy_from_environment") {
		t.Errorf("a value not a boolean: %v", err)
	}
}
