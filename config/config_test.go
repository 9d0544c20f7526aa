package config

import (
	"errors"
	"github.com/otelstep/otelstep/resource/ottl"
	"os"
	"strings"
	"testing"
	"time"
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

func TestV2RefusesConnector(t *testing.T) {
	_, err := Load("testdata/collector-v2.yaml", jobEnv)
	if err == nil || !strings.Contains(err.Error(), "span_metrics") || !strings.Contains(err.Error(), "collector-v2.yaml:5:") {
		t.Fatalf("want refusal naming span_metrics at line 5, got %v", err)
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
