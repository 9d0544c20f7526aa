package main

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// With the backend down, a stop waits for the exporter's retries; meanwhile
// health answers 503, and a second signal exits at once.
func TestStoppingHealthAndSecondSignal(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	httpAddr, healthAddr, dead := freePort(t), freePort(t), freePort(t)
	cfg := `extensions:
  health_check: {endpoint: ` + healthAddr + `}
receivers:
  otlp:
    protocols:
      http: {endpoint: ` + httpAddr + `}
exporters:
  otlp_http:
    endpoint: http://` + dead + `
    retry_on_failure: {initial_interval: 1s}
  file: {path: ` + filepath.Join(dir, "traces.jsonl") + `}
service:
  extensions: [health_check]
  pipelines:
    traces: {receivers: [otlp], exporters: [otlp_http, file]}
`
	cfgPath := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "--config", cfgPath)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() { _ = cmd.Process.Kill() }()
	health := func() int {
		resp, err := http.Get("http://" + healthAddr + "/")
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	deadline := time.Now().Add(patience)
	for health() != 200 {
		if time.Now().After(deadline) {
			t.Fatalf("never healthy:\n%s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	body := `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"queued"}]}]}]}`
	resp, err := http.Post("http://"+httpAddr+"/v1/traces", "application/json", strings.NewReader(body))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("post: %v %v", err, resp)
	}
	resp.Body.Close()

	_ = cmd.Process.Signal(syscall.SIGTERM)
	got503 := false
	for end := time.Now().Add(patience); time.Now().Before(end) && !got503; {
		got503 = health() == 503
		time.Sleep(20 * time.Millisecond)
	}
	if !got503 {
		t.Errorf("health did not answer 503 while stopping:\n%s", stderr.String())
	}
	// The JSONL copy is written before the backend is given up on: while
	// the stop still waits for the backend's retries.
	for end := time.Now().Add(patience); ; time.Sleep(20 * time.Millisecond) {
		data, _ := os.ReadFile(filepath.Join(dir, "traces.jsonl"))
		if bytes.Contains(data, []byte(`"queued"`)) {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("exited (%v) with the span not in the JSONL file:\n%s", err, stderr.String())
		default:
		}
		if time.Now().After(end) {
			t.Fatalf("span not in the JSONL file while the backend is down:\n%s", stderr.String())
		}
	}
	// A second signal exits at once, where the stop would go on retrying
	// until its deadline (service.StopTimeout), and says so.
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if err == nil {
			t.Error("second signal: exit 0, want non-zero")
		}
		if !strings.Contains(stderr.String(), "second signal, exiting now") {
			t.Errorf("exited, but not on the second signal:\n%s", stderr.String())
		}
	case <-time.After(patience):
		t.Fatalf("second signal did not exit:\n%s", stderr.String())
	}
}
