package main

import (
	"bytes"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/otelstep/otelstep/cmd/otelstep/internal/boot"
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
	var out bytes.Buffer
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
	time.Sleep(300 * time.Millisecond) // the first self-scrape is within 250ms
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

func TestGCPercentDefault(t *testing.T) {
	orig := debug.SetGCPercent(100)
	defer debug.SetGCPercent(orig)
	setGCPercent(func(string) (string, bool) { return "200", true })
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GOGC set: GC percent changed to %d", got)
	}
	setGCPercent(func(string) (string, bool) { return "", false })
	if got := debug.SetGCPercent(100); got != defaultGCPercent {
		t.Fatalf("GOGC unset: GC percent %d, want %d", got, defaultGCPercent)
	}
}

// The GC is off while otelstep starts, with a heap limit as a backstop,
// and at otelstep's target once settled; a job's GOGC or GOMEMLIMIT is
// left alone throughout.
func TestGCOffForStart(t *testing.T) {
	origPct := debug.SetGCPercent(100)
	origLimit := debug.SetMemoryLimit(math.MaxInt64)
	defer func() { debug.SetGCPercent(origPct); debug.SetMemoryLimit(origLimit) }()
	unset := func(string) (string, bool) { return "", false }
	settled := gcOffForStart(unset)
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Errorf("starting: GC percent %d, want off", got)
	}
	if got := debug.SetMemoryLimit(-1); got != startHeapLimit {
		t.Errorf("starting: memory limit %d, want %d", got, startHeapLimit)
	}
	settled()
	if got := debug.SetGCPercent(defaultGCPercent); got != defaultGCPercent {
		t.Errorf("settled: GC percent %d, want %d", got, defaultGCPercent)
	}
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("settled: memory limit %d, want none", got)
	}
	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		debug.SetGCPercent(100)
		set := func(k string) (string, bool) { return "200", k == env }
		settled := gcOffForStart(set)
		if got := debug.SetGCPercent(100); got != 100 {
			t.Errorf("%s set: GC percent changed to %d while starting", env, got)
		}
		if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
			t.Errorf("%s set: memory limit changed to %d", env, got)
		}
		settled()
		want := defaultGCPercent
		if env == "GOGC" {
			want = 100
		}
		if got := debug.SetGCPercent(100); got != want {
			t.Errorf("%s set: GC percent %d once settled, want %d", env, got, want)
		}
	}
}

func TestProcsDefault(t *testing.T) {
	orig := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(orig)
	runtime.SetDefaultGOMAXPROCS()
	perCPU := runtime.GOMAXPROCS(0)
	unset := func(string) (string, bool) { return "", false }
	envSet := func(k string) (string, bool) { return "3", k == "GOMAXPROCS" }

	runtime.GOMAXPROCS(5)
	setProcs(defaultProcs, false, unset)
	if got := runtime.GOMAXPROCS(0); got != defaultProcs {
		t.Errorf("nothing set: GOMAXPROCS %d, want %d", got, defaultProcs)
	}
	runtime.GOMAXPROCS(5)
	setProcs(defaultProcs, false, envSet)
	if got := runtime.GOMAXPROCS(0); got != 5 {
		t.Errorf("GOMAXPROCS set, no --procs: changed to %d", got)
	}
	setProcs(2, true, envSet)
	if got := runtime.GOMAXPROCS(0); got != 2 {
		t.Errorf("--procs 2 with GOMAXPROCS set: %d, want 2 (the flag wins)", got)
	}
	setProcs(0, true, unset)
	if got := runtime.GOMAXPROCS(0); got != perCPU {
		t.Errorf("--procs 0: %d, want the runtime's default %d", got, perCPU)
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

// TestMain runs this package's tests in-process at the runtime's default
// GOMAXPROCS, as before package boot set it to one at init.
func TestMain(m *testing.M) {
	boot.RestoreProcs()
	os.Exit(m.Run())
}

// TestBootInitialisesEarly: in the built binary, package boot's initialiser
// runs before the slow ones it is there to speed up (protobuf's and the
// OTLP types' registrations, gRPC, YAML, Prometheus), whose order Go sets
// by import path (boot's package comment).
func TestBootInitialisesEarly(t *testing.T) {
	code, out := runBinary(t, []string{"GODEBUG=inittrace=1"}, "--help")
	if code != exitOK {
		t.Fatalf("--help: exit %d\n%s", code, out)
	}
	const bootPkg = "github.com/otelstep/otelstep/cmd/otelstep/internal/boot"
	slow := []string{"google.golang.org/", "go.opentelemetry.io/", "go.yaml.in/", "github.com/prometheus/", "net/http"}
	var order []string
	bootAt := -1
	for _, line := range strings.Split(out, "\n") {
		// "init PKG @T ms, C ms clock, B bytes, A allocs"
		fs := strings.Fields(line)
		if len(fs) < 3 || fs[0] != "init" {
			continue
		}
		if fs[1] == bootPkg {
			bootAt = len(order)
		}
		order = append(order, fs[1])
	}
	if bootAt < 0 {
		t.Fatalf("no init of %s in the inittrace of %d packages:\n%s", bootPkg, len(order), out)
	}
	for _, p := range order[:bootAt] {
		for _, s := range slow {
			if strings.HasPrefix(p, s) {
				t.Errorf("%s was initialised before %s (%d of %d)", p, bootPkg, bootAt+1, len(order))
			}
		}
	}
	t.Logf("%s initialised %d of %d", bootPkg, bootAt+1, len(order))
}
