package config

import (
	"strings"
	"testing"
)

// A token shorter than 8 characters, stamped on resources or sent in the
// exporter's Authorization header, draws a warning at each place, naming
// its variable, never its value; a real token draws none.
func TestShortTokenWarned(t *testing.T) {
	const doc = `receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:4318
processors:
  resource:
    attributes:
    - key: Authorization
      value: ${env:OTEL_TOKEN}
      action: upsert
exporters:
  otlp_http:
    endpoint: http://127.0.0.1:4318
    headers:
      Authorization: Bearer ${env:OTEL_TOKEN}
service:
  pipelines:
    traces:
      receivers: [otlp]
      processors: [resource]
      exporters: [otlp_http]
`
	for tok, want := range map[string]int{"q": 2, "s3cret-token-value": 0} {
		c, err := Parse("c.yaml", []byte(doc), func(n string) (string, bool) { return tok, n == "OTEL_TOKEN" })
		if err != nil {
			t.Fatalf("token %d characters: %v", len(tok), err)
		}
		var got []string
		for _, w := range c.Warnings {
			if strings.Contains(w.Err.Msg, "shorter than 8") {
				got = append(got, w.Err.Error())
			}
		}
		if len(got) != want {
			t.Fatalf("token of %d characters: %d warnings, want %d: %q", len(tok), len(got), want, got)
		}
		for _, w := range got {
			if !strings.Contains(w, "the environment variable OTEL_TOKEN is shorter than 8 characters (1)") || strings.Contains(w, `"q"`) {
				t.Errorf("warning: %s", w)
			}
		}
		if want > 0 && (!strings.Contains(got[0]+got[1], "processors.resource.attributes[0].value") || !strings.Contains(got[0]+got[1], "exporters.otlp_http.headers.Authorization")) {
			t.Errorf("warnings do not name both places: %q", got)
		}
	}
}
