package config

import (
	"errors"
	"strings"
	"testing"
)

// One run reports every error of the file, in its order, each once: an
// unset variable is not reported again as the bad value it leaves, nor is
// a reference to a component that failed to decode.
func TestEveryErrorOnce(t *testing.T) {
	yaml := `receivers:
  otlp:
    protocols:
      http:
        endpoint: ${env:MISSING_ADDR}
  prometheus:
    config:
      scrape_configs:
      - job_name: a
        scrape_interval: soon
processors:
  batch:
    timeout: later
    nope: 1
exporters:
  otlp_http:
    endpoint: ${env:MISSING_URL}
  file:
    path: /tmp/x.jsonl
service:
  pipelines:
    metrics:
      receivers: [otlp, prometheus, ghost]
      processors: [batch]
      exporters: [otlp_http, file]
`
	err := wantErrors(t, yaml,
		"c.yaml:5: receivers.otlp.protocols.http.endpoint: environment variable MISSING_ADDR is not set",
		"c.yaml:10: receivers.prometheus.config.scrape_configs[0].scrape_interval: expected a duration",
		"c.yaml:13: processors.batch.timeout: expected a duration",
		`c.yaml:14: processors.batch.nope: unknown key "nope"`,
		"c.yaml:17: exporters.otlp_http.endpoint: environment variable MISSING_URL is not set",
		`c.yaml:23: service.pipelines.metrics.receivers: receiver "ghost" is not defined`,
	)
	var got []string
	for _, e := range Errors(err) {
		got = append(got, e.Error())
	}
	if err.Error() != strings.Join(got, "\n") {
		t.Errorf("Error() is not the lines in order:\n%s", err)
	}
	var ce *Error
	if !errors.As(err, &ce) || ce.Line != 5 {
		t.Errorf("errors.As finds %+v, want the first", ce)
	}
}

// A component whose variable did not expand still has its other errors
// reported in the same run; only what the missing value made fail (an
// error on its line) is not repeated.
func TestUnsetVariableKeepsComponentsOtherErrors(t *testing.T) {
	yaml := `receivers:
  otlp:
    protocols:
      http:
        endpoint: localhost:4318
processors:
  resource:
    attributes:
    - key: model
      value: ${env:MISSING_MODEL}
      action: upsert
    - key: slurm_job_id
      action: frobnicate
exporters:
  otlp_http:
    endpoint: ${env:MISSING_URL}
    timeot: 5s
service:
  pipelines:
    traces:
      receivers: [otlp]
      processors: [resource]
      exporters: [otlp_http]
`
	wantErrors(t, yaml,
		"c.yaml:10: processors.resource.attributes[0].value: environment variable MISSING_MODEL is not set",
		`c.yaml:13: processors.resource.attributes[1].action: unknown action "frobnicate"`,
		"c.yaml:16: exporters.otlp_http.endpoint: environment variable MISSING_URL is not set",
		`c.yaml:17: exporters.otlp_http.timeot: unknown key "timeot"`,
	)
}

// wantErrors parses yaml with no environment variable set and checks that
// it is refused with the errors whose prefixes are want, in order; it
// returns the error.
func wantErrors(t *testing.T, yaml string, want ...string) error {
	t.Helper()
	_, err := Parse("c.yaml", []byte(yaml), func(string) (string, bool) { return "", false })
	if err == nil {
		t.Fatal("accepted")
	}
	var got []string
	for _, e := range Errors(err) {
		got = append(got, e.Error())
	}
	if len(got) != len(want) {
		t.Fatalf("%d errors, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("error %d: %q, want %q...", i, got[i], want[i])
		}
	}
	return err
}
