package config

import (
	"os"
	"strings"
	"testing"

	"github.com/otelstep/otelstep/redact/redacttest"
)

// A token that no HTTP header may hold (a line feed, a carriage return, a
// control character) is refused at startup, naming the variable and where
// it is used, never showing it: in the exporter's header, the
// Authorization attribute, a telemetry reader's headers and headers_list.
func TestTokenNotAHeaderValue(t *testing.T) {
	v1, err := os.ReadFile("testdata/collector-v1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const tok = "tok-Secret-98765"
	for _, bad := range []string{tok + "\n", tok + "\r\n", "tok\rSecret-98765", tok + "\x00", tok + "\x7f"} {
		_, err := Parse("collector.yaml", v1, env(map[string]string{"OTEL_TOKEN": bad, "SLURM_JOB_ID": "4242"}))
		if err == nil {
			t.Fatalf("a token with a control character was accepted")
		}
		msg := err.Error()
		if !strings.Contains(msg, "OTEL_TOKEN") || !strings.Contains(msg, "collector.yaml:") {
			t.Errorf("the error does not name the variable and its place: %s", redacttest.Describe(msg))
		}
		if leak := redacttest.Leak(msg, tok); leak != "" {
			t.Errorf("the error holds %s", leak)
		}
	}
	// Only in the exporter's header (no Authorization attribute).
	noAttr := strings.Replace(string(v1), "    - key: Authorization\n      value: ${env:OTEL_TOKEN}\n      action: upsert\n", "", 1)
	_, err = Parse("collector.yaml", []byte(noAttr), env(map[string]string{"OTEL_TOKEN": tok + "\n", "SLURM_JOB_ID": "4242"}))
	if err == nil || !strings.Contains(err.Error(), "exporters.otlp_http/managed.headers.Authorization") || !strings.Contains(err.Error(), `line feed`) {
		t.Errorf("exporter header: %v", err)
	}
	// A telemetry reader's headers, as a list and as headers_list.
	for _, hdr := range []string{
		"                headers:\n                - name: Authorization\n                  value: Bearer ${env:OTEL_TOKEN}\n",
		"                headers_list: Authorization=Bearer%20${env:OTEL_TOKEN}\n",
	} {
		cfg := noAttr + `  telemetry:
    metrics:
      readers:
        - periodic:
            exporter:
              otlp:
                protocol: http/protobuf
                endpoint: http://127.0.0.1:4318
` + hdr
		cfg = strings.Replace(cfg, "      Authorization: Bearer ${env:OTEL_TOKEN}\n", "      X-Other: x\n", 1)
		cfg = strings.Replace(cfg, "service:\n  extensions:\n  - health_check\n  telemetry:\n    logs:\n      level: debug\n", "service:\n  extensions:\n  - health_check\n", 1)
		_, err := Parse("collector.yaml", []byte(cfg), env(map[string]string{"OTEL_TOKEN": "tok-Secret\r98765", "SLURM_JOB_ID": "4242"}))
		if err == nil || !strings.Contains(err.Error(), "OTEL_TOKEN") || !strings.Contains(err.Error(), "carriage return") {
			t.Errorf("telemetry headers %q: %v", strings.TrimSpace(hdr), err)
		}
	}
	// A good token passes.
	if _, err := Parse("collector.yaml", v1, env(map[string]string{"OTEL_TOKEN": tok, "SLURM_JOB_ID": "4242"})); err != nil {
		t.Fatal(err)
	}
}

// A config error hides the values of the variables used in secret places,
// wherever else the config uses them.
func TestConfigErrorHidesSecrets(t *testing.T) {
	v1, err := os.ReadFile("testdata/collector-v1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const tok = "tok-Secret-98765"
	bad := strings.Replace(string(v1), "  batch: {}\n", "  batch:\n    timeout: ${env:OTEL_TOKEN}\n", 1)
	_, err = Parse("collector.yaml", []byte(bad), env(map[string]string{"OTEL_TOKEN": tok, "SLURM_JOB_ID": "4242"}))
	if err == nil || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("a token as a duration: %v", err)
	}
	if leak := redacttest.Leak(err.Error(), tok); leak != "" {
		t.Errorf("the error holds %s", leak)
	}
}
