package main

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runBinary runs the built otelstep with args and env, returning its exit
// status and combined output.
func runBinary(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(buildBinary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, out.String()
}

func TestRefusedConfigs(t *testing.T) {
	good, err := os.ReadFile("testdata/collector-v1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	jobEnv := []string{"OTEL_TOKEN=" + testToken, "SLURM_JOB_ID=7"}
	cases := []struct {
		name  string
		edit  func(string) string
		env   []string
		wants []string
	}{
		{"unknown key", func(s string) string {
			return strings.Replace(s, "        scrape_interval: 15s\n", "        scrape_interval: 15s\n        scrape_protocols: [PrometheusText0.0.4]\n", 1)
		}, jobEnv, []string{"collector.yaml:10:", `unknown key "scrape_protocols"`, "scrape_configs[0]"}},
		{"unknown component", func(s string) string {
			return strings.Replace(s, "processors:\n  batch: {}\n", "processors:\n  batch: {}\n  memory_limiter:\n    limit_mib: 100\n", 1)
		}, jobEnv, []string{"collector.yaml:33:", `"memory_limiter"`}},
		{"unset variable", func(s string) string { return s }, []string{"SLURM_JOB_ID=7", "OTEL_TOKEN="},
			nil},
		{"unset variable really unset", func(s string) string { return strings.ReplaceAll(s, "OTEL_TOKEN", "OTEL_TOKEN_MISSING_X") }, []string{"SLURM_JOB_ID=7"},
			[]string{"OTEL_TOKEN_MISSING_X", "not set", "collector.yaml:42:"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "collector.yaml")
			if err := os.WriteFile(p, []byte(tc.edit(string(good))), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out := runBinary(t, tc.env, "validate", "--config", p)
			if tc.wants == nil {
				// An empty token is refused too: the proxy would drop everything.
				if code != 2 || !strings.Contains(out, "Authorization") {
					t.Fatalf("empty token: exit %d, output:\n%s", code, out)
				}
				return
			}
			if code != 2 {
				t.Fatalf("exit %d, want 2; output:\n%s", code, out)
			}
			for _, w := range tc.wants {
				if !strings.Contains(out, w) {
					t.Errorf("output does not name %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, testToken) {
				t.Error("token printed")
			}
		})
	}
}

// The v2 config with its connector used on one side only, or on the wrong
// signal, is refused at startup, naming the connector and the line.
func TestRefusedConnectors(t *testing.T) {
	v2, err := os.ReadFile("testdata/collector-v2.yaml")
	if err != nil {
		t.Fatal(err)
	}
	jobEnv := []string{"OTEL_TOKEN=" + testToken, "SLURM_JOB_ID=7"}
	for _, tc := range []struct{ name, old, new, line, want string }{
		{"exporter only", "      - otlp\n      - span_metrics\n", "      - otlp\n", "collector.yaml:146:", "receiver of no metrics pipeline"},
		{"receiver only", "      - file/traces\n      - span_metrics\n", "      - file/traces\n", "collector.yaml:128:", "exporter of no traces pipeline"},
		{"wrong signal", "      - file/logs\n", "      - file/logs\n      - span_metrics\n", "collector.yaml:158:", "takes traces"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "collector.yaml")
			if err := os.WriteFile(p, []byte(strings.Replace(string(v2), tc.old, tc.new, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out := runBinary(t, jobEnv, "--config", p)
			if code != 2 || !strings.Contains(out, tc.line) || !strings.Contains(out, `connector "span_metrics"`) || !strings.Contains(out, tc.want) {
				t.Fatalf("exit %d, want 2 naming the connector at %s (%s); output:\n%s", code, tc.line, tc.want, out)
			}
		})
	}
	code, out := runBinary(t, jobEnv, "validate", "--config", "testdata/collector-v2.yaml")
	if code != 0 || !strings.Contains(out, "connect  span_metrics: traces -> span_metrics -> metrics") {
		t.Fatalf("validate v2: exit %d:\n%s", code, out)
	}
}

func TestValidateRedacts(t *testing.T) {
	code, out := runBinary(t, []string{"OTEL_TOKEN=" + testToken, "SLURM_JOB_ID=7"}, "validate", "--config=testdata/collector-v1.yaml")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, w := range []string{"scrape", "localhost:8000", "listen", "grpc 0.0.0.0:4317", "pipeline metrics", "file/metrics", "otlp_http/managed", "<redacted>"} {
		if !strings.Contains(out, w) {
			t.Errorf("validate output lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, testToken) {
		t.Errorf("token printed:\n%s", out)
	}
}

func TestUsageErrors(t *testing.T) {
	if code, out := runBinary(t, nil, "run", "extra"); code != 2 || !strings.Contains(out, "unexpected argument") {
		t.Errorf("extra argument: exit %d, %s", code, out)
	}
	if code, out := runBinary(t, nil, "--config", "/nonexistent/c.yaml"); code != 2 || !strings.Contains(out, "/nonexistent/c.yaml") {
		t.Errorf("missing file: exit %d, %s", code, out)
	}
}

// TestEmbeddedDefault runs the README's first command as a user would: no
// --config, in an empty folder. It must get healthy, take OTLP, scrape its
// own metrics and write both to ./otel, then stop cleanly on SIGTERM.
func TestEmbeddedDefault(t *testing.T) {
	dir := t.TempDir()
	health, grpcAddr, httpAddr := freePort(t), freePort(t), freePort(t)
	cmd := exec.Command(buildBinary(t))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "OTELSTEP_HEALTH="+health, "OTELSTEP_GRPC="+grpcAddr, "OTELSTEP_HTTP="+httpAddr)
	var out lockedOut
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	waitHealthy(t, health, &out)
	span := `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","name":"readme-span"}]}]}]}`
	resp, err := http.Post("http://"+httpAddr+"/v1/traces", "application/json", strings.NewReader(span))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("OTLP/HTTP JSON: %v %v", err, resp)
	}
	resp.Body.Close()
	// The first self-scrape comes within the interval's first 250 ms, and
	// reaches the file after the batch and the file's flush.
	selfScraped := func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "otel", "metrics.jsonl"))
		return bytes.Contains(b, []byte("otelcol_process_uptime"))
	}
	for end := time.Now().Add(patience); !selfScraped(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("no self-scrape in ./otel/metrics.jsonl in %v:\n%s", patience, out.String())
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "embedded default") {
		t.Errorf("the log does not say the embedded default runs:\n%s", out.String())
	}
	traces, _ := os.ReadFile(filepath.Join(dir, "otel", "traces.jsonl"))
	metrics, _ := os.ReadFile(filepath.Join(dir, "otel", "metrics.jsonl"))
	if !bytes.Contains(traces, []byte("readme-span")) {
		t.Errorf("the span is not in ./otel/traces.jsonl: %q", traces)
	}
	if !bytes.Contains(metrics, []byte(`"name":"up"`)) || !bytes.Contains(metrics, []byte("otelcol_process_uptime")) {
		t.Errorf("./otel/metrics.jsonl lacks the self-scrape (%d bytes)", len(metrics))
	}
}

func TestProcsNegativeRefused(t *testing.T) {
	var stderr bytes.Buffer
	if code := run([]string{"--procs", "-1"}, io.Discard, &stderr); code != exitUsage {
		t.Fatalf("--procs -1: exit %d, want %d", code, exitUsage)
	}
	if !strings.Contains(stderr.String(), "--procs -1") {
		t.Errorf("error does not name the flag: %q", stderr.String())
	}
}
