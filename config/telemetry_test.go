package config

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// withTelemetry is base with a service.telemetry section; metrics is
// indented to sit under service.telemetry (line 15 is "metrics:").
func withTelemetry(metrics string) string {
	return base + "  telemetry:\n    metrics:\n" + metrics
}

func TestTelemetryMetricsParse(t *testing.T) {
	src := withTelemetry(`      level: Detailed
      readers:
      - periodic:
          interval: 100
          timeout: 50
          exporter:
            otlp:
              protocol: http/protobuf
              endpoint: http://127.0.0.1:4318
              headers:
              - name: Authorization
                value: Bearer ${env:TOKEN}
              headers_list: "X-Scope-OrgID=gym,Authorization=ignored"
              compression: gzip
              timeout: 2000
              insecure: true
              temporality_preference: delta
      - pull:
          exporter:
            prometheus:
              host: "[::1]"
              port: 8888
              without_units: true
              without_type_suffix: true
    resource:
      Authorization: Bearer ${env:TOKEN}
      service.instance.id:
`)
	c, err := Parse("t.yaml", []byte(src), env(map[string]string{"TOKEN": "tele-token-77"}))
	if err != nil {
		t.Fatal(err)
	}
	tm := c.Service.Telemetry
	if tm.MetricsLevel() != "detailed" || len(tm.Readers) != 2 {
		t.Fatalf("telemetry: %+v", tm)
	}
	p := tm.Readers[0].Periodic
	if p == nil || p.Interval != 100*time.Millisecond || p.Timeout != 50*time.Millisecond {
		t.Fatalf("periodic: %+v", p)
	}
	e := p.OTLP
	if e.Endpoint != "http://127.0.0.1:4318" || e.Compression != "gzip" || e.Timeout != 2*time.Second || e.Temporality != "delta" {
		t.Errorf("otlp: %+v", e)
	}
	// headers win over headers_list, as in the collector
	if e.Headers["Authorization"] != "Bearer tele-token-77" || e.Headers["X-Scope-OrgID"] != "gym" {
		t.Errorf("headers: %v", e.Headers)
	}
	pl := tm.Readers[1].Pull
	if pl == nil || pl.Host != "::1" || pl.Port != 8888 || !pl.WithoutTypeSuffix {
		t.Errorf("pull: %+v", pl)
	}
	if v, ok := tm.Resource["service.instance.id"]; !ok || v != nil {
		t.Errorf("a null resource attribute is not kept as a removal: %v", tm.Resource)
	}
	secret := false
	for _, s := range c.Secrets {
		secret = secret || s == "tele-token-77"
	}
	if !secret {
		t.Errorf("the telemetry exporter's token is not among the secrets")
	}
	var out bytes.Buffer
	c.Describe(&out)
	if strings.Contains(out.String(), "tele-token-77") || !strings.Contains(out.String(), "telemetry metrics level=detailed periodic every 100ms") {
		t.Errorf("describe:\n%s", out.String())
	}
}

func TestTelemetryDefaults(t *testing.T) {
	c, err := Parse("t.yaml", []byte(base), jobEnv)
	if err != nil {
		t.Fatal(err)
	}
	if tm := c.Service.Telemetry; tm.MetricsLevel() != "normal" || len(tm.Readers) != 0 {
		t.Errorf("defaults: %+v", tm)
	}
	c, err = Parse("t.yaml", []byte(withTelemetry(`      readers:
      - periodic:
          exporter:
            otlp: {protocol: http/protobuf, endpoint: "https://h:4318/custom"}
`)), jobEnv)
	if err != nil {
		t.Fatal(err)
	}
	p := c.Service.Telemetry.Readers[0].Periodic
	if p.Interval != 60*time.Second || p.Timeout != 30*time.Second || p.OTLP.Timeout != 10*time.Second || p.OTLP.Compression != "none" || p.OTLP.Temporality != "cumulative" {
		t.Errorf("periodic defaults: %+v", p)
	}
	// the headers map of the exporters' own form is taken too
	c, err = Parse("t.yaml", []byte(withTelemetry(`      readers:
      - periodic:
          exporter:
            otlp:
              protocol: http/protobuf
              endpoint: http://h:4318
              headers: {Authorization: Bearer x1234}
`)), jobEnv)
	if err != nil {
		t.Fatal(err)
	}
	if h := c.Service.Telemetry.Readers[0].Periodic.OTLP.Headers; h["Authorization"] != "Bearer x1234" {
		t.Errorf("headers mapping: %v", h)
	}
}

// Every refusal names the key or value and its line.
func TestTelemetryRefused(t *testing.T) {
	periodic := func(otlp string) string {
		return withTelemetry("      readers:\n      - periodic:\n          exporter:\n            otlp:\n" + otlp)
	}
	// line numbers: 15 "metrics:", 16 first key under it; under periodic():
	// 16 readers, 17 "- periodic:", 18 exporter, 19 otlp, 20 its first key.
	cases := []struct {
		name, src string
		want      []string
	}{
		{"level", withTelemetry("      level: verbose\n"), []string{"t.yaml:16:", "service.telemetry.metrics.level", `"verbose"`}},
		{"unknown key", withTelemetry("      exemplars: {}\n"), []string{"t.yaml:16:", `unknown key "exemplars"`}},
		{"address", withTelemetry("      address: 0.0.0.0:8888\n"), []string{"t.yaml:16:", "service.telemetry.metrics.address", "readers"}},
		{"views", withTelemetry("      views: []\n"), []string{"t.yaml:16:", "views"}},
		{"reader both", withTelemetry("      readers:\n      - periodic: {exporter: {otlp: {protocol: http/protobuf, endpoint: http://h}}}\n        pull: {exporter: {prometheus: {host: h, port: 1}}}\n"), []string{"t.yaml:17:", "readers[0]", "not both"}},
		{"reader empty", withTelemetry("      readers:\n      - {}\n"), []string{"t.yaml:17:", "readers[0]", "periodic or pull"}},
		{"reader unknown", withTelemetry("      readers:\n      - push: {}\n"), []string{"t.yaml:17:", `unknown key "push"`}},
		{"grpc", periodic("              protocol: grpc\n              endpoint: http://h:4317\n"), []string{"t.yaml:20:", "readers[0].periodic.exporter.otlp.protocol", `"grpc"`, "not implemented"}},
		{"no protocol", periodic("              endpoint: http://h:4318\n"), []string{"t.yaml:20:", "protocol is required"}},
		{"no endpoint", periodic("              protocol: http/protobuf\n"), []string{"t.yaml:20:", "endpoint is required"}},
		{"bad endpoint", periodic("              protocol: http/protobuf\n              endpoint: h:4318\n"), []string{"t.yaml:20:", "endpoint", "http:// or https://"}},
		{"compression", periodic("              protocol: http/protobuf\n              endpoint: http://h\n              compression: zstd\n"), []string{"t.yaml:22:", `"zstd"`}},
		{"certificate", periodic("              protocol: http/protobuf\n              endpoint: https://h\n              certificate: /ca.pem\n"), []string{"t.yaml:22:", "certificate is not implemented"}},
		{"insecure https", periodic("              protocol: http/protobuf\n              endpoint: https://h\n              insecure: true\n"), []string{"t.yaml:22:", "insecure", "https"}},
		{"timeout unit", periodic("              protocol: http/protobuf\n              endpoint: http://h\n              timeout: 5s\n"), []string{"t.yaml:22:", "milliseconds", `"5s"`}},
		{"temporality", periodic("              protocol: http/protobuf\n              endpoint: http://h\n              temporality_preference: sometimes\n"), []string{"t.yaml:22:", "sometimes"}},
		{"header without value", periodic("              protocol: http/protobuf\n              endpoint: http://h\n              headers:\n              - name: X\n"), []string{"t.yaml:23:", "headers[0]", "name and a value"}},
		{"header unknown key", periodic("              protocol: http/protobuf\n              endpoint: http://h\n              headers:\n              - {name: X, value: y, sensitive: true}\n"), []string{"t.yaml:23:", `unknown key "sensitive"`}},
		{"bad headers_list", periodic("              protocol: http/protobuf\n              endpoint: http://h\n              headers_list: justatoken\n"), []string{"t.yaml:22:", "headers_list"}},
		{"console", withTelemetry("      readers:\n      - periodic:\n          exporter:\n            console: {}\n"), []string{"t.yaml:19:", "console", "not implemented"}},
		{"no exporter", withTelemetry("      readers:\n      - periodic:\n          interval: 1000\n"), []string{"t.yaml:18:", "needs an exporter"}},
		{"interval zero", withTelemetry("      readers:\n      - periodic:\n          interval: 0\n"), []string{"t.yaml:18:", "interval", "positive"}},
		{"pull no port", withTelemetry("      readers:\n      - pull:\n          exporter:\n            prometheus:\n              host: localhost\n"), []string{"t.yaml:20:", "port is required"}},
		{"pull port range", withTelemetry("      readers:\n      - pull:\n          exporter:\n            prometheus:\n              host: localhost\n              port: 70000\n"), []string{"t.yaml:21:", "out of range"}},
		{"pull units", withTelemetry("      readers:\n      - pull:\n          exporter:\n            prometheus: {host: localhost, port: 9, without_units: false}\n"), []string{"t.yaml:19:", "without_units"}},
		{"pull labels", withTelemetry("      readers:\n      - pull:\n          exporter:\n            prometheus:\n              host: localhost\n              port: 9\n              with_resource_constant_labels: {included: [a]}\n"), []string{"t.yaml:22:", "with_resource_constant_labels is not implemented"}},
		{"resource not string", base + "  telemetry:\n    resource:\n      a: [1]\n", []string{"t.yaml:16:", "service.telemetry.resource.a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(tc.src), jobEnv)
			if err == nil {
				t.Fatalf("accepted:\n%s", tc.src)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// A header value in headers_list never appears in an error.
func TestTelemetryHeadersListErrorRedacts(t *testing.T) {
	src := withTelemetry("      readers:\n      - periodic:\n          exporter:\n            otlp:\n              protocol: http/protobuf\n              endpoint: http://h\n              headers_list: \"a=b,tokenvalue-secret\"\n")
	_, err := Parse("t.yaml", []byte(src), jobEnv)
	if err == nil || strings.Contains(err.Error(), "tokenvalue-secret") {
		t.Fatalf("want a refusal without the value, got %v", err)
	}
}
