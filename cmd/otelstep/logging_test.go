package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/otelstep/otelstep/config"
)

// The first log line's description of the config holds no secret: no
// userinfo or query of an endpoint, no header value.
func TestStartAttrsHoldNoSecret(t *testing.T) {
	yaml := `extensions:
  health_check:
    endpoint: 127.0.0.1:13133
receivers:
  otlp:
    protocols:
      http:
exporters:
  otlp_http/backend:
    endpoint: https://someone:pass-W0rd@Backend.example:4318/otlp?api_key=qs-S3cret
    headers:
      Authorization: Bearer ${env:OTEL_TOKEN}
      X-Scope-OrgID: org-V4lue
  file/traces:
    path: /jobs/1/otel/traces.jsonl
service:
  extensions: [health_check]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [otlp_http/backend, file/traces]
`
	cfg, err := config.Parse("c.yaml", []byte(yaml), func(k string) (string, bool) { return map[string]string{"OTEL_TOKEN": testToken}[k], k == "OTEL_TOKEN" })
	if err != nil {
		t.Fatal(err)
	}
	line := fmt.Sprint(startAttrs(cfg)...)
	for _, secret := range []string{"pass-W0rd", "someone", "qs-S3cret", "org-V4lue", testToken} {
		if strings.Contains(line, secret) {
			t.Errorf("%q in %s", secret, line)
		}
	}
	for _, want := range []string{"c.yaml", "http://127.0.0.1:13133/", "/jobs/1/otel/traces.jsonl", "otlp_http/backend=https://Backend.example:4318/otlp"} {
		if !strings.Contains(line, want) {
			t.Errorf("no %q in %s", want, line)
		}
	}
}

type flakyWriter struct{ fail bool }

func (f *flakyWriter) Write(p []byte) (int, error) {
	if f.fail {
		return 0, errors.New("no space left on device")
	}
	return len(p), nil
}

// A log output that fails is reported once on the error outputs, and its
// recovery; the other outputs get every line.
func TestLogWriterReportsAFailingOutputOnce(t *testing.T) {
	var good, errOut bytes.Buffer
	bad := &flakyWriter{fail: true}
	w := &logWriter{outs: []namedWriter{{"log.txt", bad}, {"stderr", &good}}, errs: []namedWriter{{"stderr", &errOut}}, failed: make([]bool, 2)}
	for range 3 {
		w.Write([]byte("line\n"))
	}
	bad.fail = false
	w.Write([]byte("line\n"))
	if good.String() != strings.Repeat("line\n", 4) {
		t.Errorf("the good output got %q", good.String())
	}
	want := "otelstep: cannot write the log to log.txt: no space left on device (log lines are lost there until it recovers)\notelstep: writing the log to log.txt again\n"
	if errOut.String() != want {
		t.Errorf("error output %q, want %q", errOut.String(), want)
	}
}

func TestLogsToAFileThatCannotBeOpened(t *testing.T) {
	cfg := &config.Config{}
	cfg.Service.Logs.OutputPaths = []string{os.DevNull + "/nope/otelstep.log"}
	cfg.Service.Logs.ErrorOutputPaths = []string{"stderr"}
	if _, _, err := newLogger(cfg, nil, nil); err == nil || !strings.Contains(err.Error(), "service.telemetry.logs.output_paths") {
		t.Errorf("err %v", err)
	}
}
