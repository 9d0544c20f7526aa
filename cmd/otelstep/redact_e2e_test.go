package main

import (
	"encoding/base64"
	"fmt"
	"github.com/otelstep/otelstep/internal/fakebackend"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/otelstep/otelstep/redact"
	"github.com/otelstep/otelstep/redact/redacttest"
	"google.golang.org/protobuf/encoding/protowire"
)

// echoBodies are error bodies that echo the token: as it is, cut short,
// base64, URL-encoded and JSON-quoted, placed before, across and after
// byte 256 of the message.
func echoBodies() []string {
	h := "Bearer " + testToken
	forms := map[string]string{
		"raw":       h,
		"base64":    base64.StdEncoding.EncodeToString([]byte("Authorization: " + h)),
		"base64url": base64.RawURLEncoding.EncodeToString([]byte("x" + h)),
		"url":       url.QueryEscape("authorization=" + h),
		"json":      fmt.Sprintf(`{"authorization":%q}`, h),
	}
	for _, n := range []int{redact.Window(len(testToken)), len(testToken) / 2, len(testToken) - 1} {
		forms[fmt.Sprintf("cut to %d", n)] = "Bearer " + testToken[:n]
	}
	var bodies []string
	for _, form := range forms {
		for _, pad := range []int{0, 200, 210, 215, 220, 225, 230, 300, 2000} {
			bodies = append(bodies, "invalid credentials "+strings.Repeat(".", pad)+form+" (refused)")
		}
	}
	return bodies
}

// newEchoBackend answers every request with an error whose body is one of
// echoBodies in turn.
func newEchoBackend(t *testing.T) (*fakebackend.Backend, []string) {
	bodies := echoBodies()
	b := fakebackend.New(t)
	b.Answer(func(r *fakebackend.Request) fakebackend.Reply {
		i := r.N - 1
		body := bodies[i%len(bodies)]
		kind := i % 3
		if r.Path == "/v1/metrics" {
			kind = i % 2 // otelstep's own metrics: the SDK's retries would take seconds
		}
		switch kind {
		case 0: // a protobuf google.rpc.Status, not retried
			return fakebackend.Reply{Status: http.StatusBadRequest, ContentType: "application/x-protobuf",
				Body: protowire.AppendString(protowire.AppendTag(nil, 2, protowire.BytesType), body)}
		case 1: // plain text, not retried
			return fakebackend.Reply{Status: http.StatusUnauthorized, ContentType: "text/plain", Body: []byte(body)}
		default: // retried: logged at debug
			return fakebackend.Reply{Status: http.StatusServiceUnavailable, ContentType: "text/plain", Body: []byte(body)}
		}
	})
	return b, bodies
}

// A backend that echoes the token in its error bodies, in any form, cut or
// whole, anywhere in the body, leaves no piece of it of redact.Window
// bytes or more in otelstep's log at debug level: not from the OTLP/HTTP
// exporter, not from the exporter of otelstep's own metrics.
func TestBackendEchoesNeverLogged(t *testing.T) {
	dir := t.TempDir()
	echo, bodies := newEchoBackend(t)
	httpAddr, health := freePort(t), freePort(t)
	cfgPath := ownMetricsConfig(t, dir, httpAddr, health, echo.URL(), `    retry_on_failure:
      initial_interval: 1ms
      max_interval: 1ms
      max_elapsed_time: 1s
`, `  telemetry:
    logs:
      level: debug
    metrics:
      readers:
      - periodic:
          interval: 50
          exporter:
            otlp:
              protocol: http/protobuf
              endpoint: `+echo.URL()+`
              headers:
              - name: Authorization
                value: Bearer ${env:OTEL_TOKEN}`)
	p := startOtelstep(t, buildBinary(t), cfgPath, health, "OTEL_TOKEN="+testToken)
	for range len(bodies) {
		sendSpans(t, httpAddr, 1)
	}
	echo.Wait(t, fmt.Sprintf("%d trace and 3 metrics requests answered", len(bodies)), func(reqs []*fakebackend.Request) bool {
		traces, metrics := 0, 0
		for _, r := range reqs {
			switch r.Path {
			case "/v1/traces":
				traces++
			case "/v1/metrics":
				metrics++
			}
		}
		return traces >= len(bodies) && metrics >= 3
	})
	// Stopped without p.stop, which prints the log on a failure: its final
	// export of otelstep's metrics fails (exit 1), and the log is checked
	// below without being printed.
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done:
	case <-time.After(patience):
		t.Fatal("did not exit after SIGTERM")
	}
	log := p.Out.String()
	if !strings.Contains(log, "invalid credentials") || !strings.Contains(log, "telemetry: exporting otelstep's metrics failed") {
		t.Fatalf("the backend's messages were not logged: %s", redacttest.Describe(log))
	}
	if leak := redacttest.Leak(log, testToken); leak != "" {
		t.Errorf("otelstep's log holds %s", leak)
	}
	assertNoToken(t, dir, cfgPath, log)
}

// A token no HTTP header may hold (a line feed from a token file read
// with its line end, a carriage return) is refused at startup, exit 2,
// naming the variable and not showing it: run, validate and replay.
func TestTokenWithLineEndRefused(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile("testdata/collector-v1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "collector.yaml")
	if err := os.WriteFile(cfgPath, good, 0o644); err != nil {
		t.Fatal(err)
	}
	jsonl := filepath.Join(dir, "traces.jsonl")
	if err := os.WriteFile(jsonl, []byte(`{"resourceSpans":[]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{testToken + "\n", testToken + "\r", "e2e-Secret\n-Token-7f3a9c"} {
		for _, args := range [][]string{
			{"--config", cfgPath},
			{"validate", "--config", cfgPath},
			{"replay", "--endpoint", "http://127.0.0.1:1", "--progress", "none", jsonl},
		} {
			code, out := runBinary(t, []string{"OTEL_TOKEN=" + bad, "SLURM_JOB_ID=7"}, args...)
			if code != 2 {
				t.Errorf("%s: exit %d, want 2: %s", args[0], code, redacttest.Describe(out))
			}
			if !strings.Contains(out, "OTEL_TOKEN") {
				t.Errorf("%s: the variable is not named: %s", args[0], redacttest.Describe(out))
			}
			if leak := redacttest.Leak(out, testToken); leak != "" {
				t.Errorf("%s: the output holds %s", args[0], leak)
			}
		}
	}
}
