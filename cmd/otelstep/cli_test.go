package main

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/otelstep/otelstep/internal/proctest"
)

// runSplit runs the built otelstep with args and env, returning its exit
// status, stdout and stderr apart.
func runSplit(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(buildBinary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String(), errOut.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, out.String(), errOut.String()
}

// Help, however asked for, is on stdout with exit 0 and lists every flag
// of the command and of each subcommand; each subcommand's -h is its own.
func TestHelpOnStdout(t *testing.T) {
	flags := []string{"-config", "-procs", "-cpuprofile", "-endpoint", "-token-env", "-from-start", "-accept-skipped", "-strict", "-dry-run", "-peer", "-peer-kind", "-frozen", "-pages", "-protocol", "-summary", "-panels"}
	for _, spelling := range []string{"help", "-h", "--help"} {
		code, out, errOut := runSplit(t, nil, spelling)
		if code != 0 || errOut != "" {
			t.Errorf("otelstep %s: exit %d, stderr %q", spelling, code, errOut)
		}
		for _, f := range flags {
			if !strings.Contains(out, "  "+f+" ") && !strings.Contains(out, "  "+f+"\n") {
				t.Errorf("otelstep %s does not list %s", spelling, f)
			}
		}
	}
	for _, c := range []struct{ args, usage, flag string }{
		{"run -h", "usage: otelstep [run]", "-procs"},
		{"--config x.yaml -h", "usage: otelstep [run]", "-procs"},
		{"validate -h", "usage: otelstep validate", "-config"},
		{"validate --help", "usage: otelstep validate", "-config"},
		{"replay -h", "usage: otelstep replay", "-accept-skipped"},
		{"bench -h", "usage: otelstep bench", "-peer"},
		{"bench scrape -h", "usage: otelstep bench", "-peer"},
		{"report -h", "usage: otelstep report", "-summary"},
		{"version -h", "usage: otelstep version", ""},
	} {
		code, out, errOut := runSplit(t, nil, strings.Fields(c.args)...)
		if code != 0 || errOut != "" || !strings.HasPrefix(out, c.usage) || !strings.Contains(out, c.flag) {
			t.Errorf("otelstep %s: exit %d, stderr %q, stdout:\n%s", c.args, code, errOut, out)
		}
		if !strings.HasPrefix(c.args, "validate") && c.args != "version -h" && strings.Contains(out, "usage: otelstep validate") {
			t.Errorf("otelstep %s prints another subcommand's usage", c.args)
		}
	}
	// A bad flag is an error: on stderr, exit 2.
	if code, out, errOut := runSplit(t, nil, "replay", "--bogus"); code != 2 || out != "" || !strings.Contains(errOut, "-bogus") {
		t.Errorf("replay --bogus: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, out, errOut := runSplit(t, nil, "bench", "scrape", "--peer", "/bin/true", "--peer-kind", "vm"); code != 2 || out != "" || !strings.Contains(errOut, `--peer-kind "vm"`) {
		t.Errorf("bench --peer-kind vm: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, out, errOut := runSplit(t, nil, "bench", "otlp", "--rounds", "0"); code != 2 || out != "" || !strings.Contains(errOut, "--rounds 0: want 1 or more") {
		t.Errorf("bench --rounds 0: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestVersion(t *testing.T) {
	code, out, errOut := runSplit(t, nil, "version")
	if code != 0 || errOut != "" {
		t.Fatalf("version: exit %d, stderr %q", code, errOut)
	}
	// A build in a working copy is "(devel)"; one with VCS stamping names
	// the revision (or a pseudo-version holding it).
	if !regexp.MustCompile(`^otelstep (\(devel\)|v\S+)( revision [0-9a-f]{40}(\+modified)?)? go1\.\S+\n$`).MatchString(out) {
		t.Errorf("version: %q", out)
	}
	if bi, err := exec.Command("go", "version", "-m", buildBinary(t)).Output(); err == nil {
		if m := regexp.MustCompile(`vcs\.revision=([0-9a-f]+)`).FindSubmatch(bi); m != nil && !strings.Contains(out, string(m[1][:12])) {
			t.Errorf("version %q does not name the revision %s", out, m[1])
		}
	}
	if code, out2, _ := runSplit(t, nil, "--version"); code != 0 || out2 != out {
		t.Errorf("--version: exit %d, %q, want %q", code, out2, out)
	}
}

// validate reports every error of the file in one run, a line each with
// its place, and exit 2; FILE works with or without --config.
func TestValidateReportsEveryError(t *testing.T) {
	good, err := os.ReadFile("testdata/collector-v1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(good), "scrape_interval: 15s", "scrape_interval: 15 seconds", 1)
	bad = strings.Replace(bad, "processors:\n  batch: {}\n", "processors:\n  batch:\n    send_batch_size: lots\n", 1)
	bad = strings.Replace(bad, "action: insert", "action: inject", 1)
	bad = strings.Replace(bad, "  pipelines:\n", "  pipelines:\n    traces/x:\n      receivers: [otlp]\n      exporters: [file/nowhere]\n", 1)
	p := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(p, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"OTEL_TOKEN=" + testToken, "SLURM_JOB_ID=7"}
	for _, args := range [][]string{{"validate", p}, {"validate", "--config", p}, {"--config", p}} {
		code, out, errOut := runSplit(t, env, args...)
		if code != 2 || out != "" {
			t.Errorf("%v: exit %d, stdout %q", args, code, out)
		}
		want := []string{
			`bad.yaml:9: receivers.prometheus.config.scrape_configs[0].scrape_interval: expected a duration`,
			`bad.yaml:33: processors.batch.send_batch_size: expected an integer, got "lots"`,
			`bad.yaml:41: processors.resource.attributes[1].action: unknown action "inject"`,
			`service.pipelines.traces/x.exporters: exporter "file/nowhere" is not defined`,
		}
		last := -1
		for _, w := range want {
			i := strings.Index(errOut, w)
			if i < 0 {
				t.Errorf("%v: no %q in:\n%s", args, w, errOut)
				continue
			}
			if i < last {
				t.Errorf("%v: %q is out of the file's order:\n%s", args, w, errOut)
			}
			last = i
		}
		if n := strings.Count(errOut, "bad.yaml:"); n != len(want) {
			t.Errorf("%v: %d errors, want %d:\n%s", args, n, len(want), errOut)
		}
		if strings.Contains(errOut, testToken) {
			t.Error("token printed")
		}
	}
}

// validate warns of a port in use and of a variable stamped on every
// resource that is set but empty, and fails on a JSONL file whose folder
// cannot be made.
func TestValidateChecksTheMachine(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	blocker := filepath.Join(dir, "not-a-folder")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := setupConfig(t, freePort(t), freePort(t), ln.Addr().String(), "0", filepath.Join(dir, "otel", "traces.jsonl"))
	withEmpty := func(s string) string {
		return strings.Replace(s, "      action: upsert\n", "      action: upsert\n    - key: slurm_job_id\n      value: ${env:SLURM_JOB_ID}\n      action: insert\n", 1)
	}
	b, _ := os.ReadFile(cfg)
	if err := os.WriteFile(cfg, []byte(withEmpty(string(b))), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"OTEL_TOKEN=" + testToken, "SLURM_JOB_ID="}
	code, out, errOut := runSplit(t, env, "validate", cfg)
	if code != 0 || !strings.Contains(out, "OK") {
		t.Fatalf("warnings only: exit %d, stdout %q, stderr:\n%s", code, out, errOut)
	}
	for _, w := range []string{
		"collector.yaml:10: receivers.otlp.protocols.http.endpoint: warning: " + ln.Addr().String() + ": the port is already in use",
		`collector.yaml:18: processors.resource.attributes[1].value: warning: the environment variable SLURM_JOB_ID is set but empty: every resource gets slurm_job_id=""`,
	} {
		if !strings.Contains(errOut, w) {
			t.Errorf("no %q in:\n%s", w, errOut)
		}
	}
	// A token of a few characters: a warning at each place it is stamped
	// or sent (the redaction that hides it masks it inside words too),
	// never showing it; with the real token, none.
	if strings.Contains(errOut, "shorter than 8") {
		t.Errorf("a warning of a short token for %d characters:\n%s", len(testToken), errOut)
	}
	code, out, errOut = runSplit(t, []string{"OTEL_TOKEN=x", "SLURM_JOB_ID=1"}, "validate", cfg)
	if code != 0 || !strings.Contains(out, "OK") {
		t.Fatalf("a short token: exit %d, stdout %q, stderr:\n%s", code, out, errOut)
	}
	for _, w := range []string{
		"processors.resource.attributes[0].value: warning: the token from the environment variable OTEL_TOKEN is shorter than 8 characters (1)",
	} {
		if !strings.Contains(errOut, w) {
			t.Errorf("no %q in:\n%s", w, errOut)
		}
	}

	// The JSONL folder cannot be made: an error, with the warnings.
	b, _ = os.ReadFile(cfg)
	if err := os.WriteFile(cfg, bytes.Replace(b, []byte(filepath.Join(dir, "otel")), []byte(filepath.Join(blocker, "otel")), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runSplit(t, env, "validate", cfg)
	if code != 2 || out != "" || !strings.Contains(errOut, "exporters.file/traces.path: the folder of "+filepath.Join(blocker, "otel", "traces.jsonl")+" cannot be created: "+blocker+" is a file") ||
		!strings.Contains(errOut, "warning: the environment variable SLURM_JOB_ID") {
		t.Errorf("unwritable JSONL folder: exit %d, stdout %q, stderr:\n%s", code, out, errOut)
	}
}

// service.telemetry.logs with encoding json and a file among its output
// paths: every line a JSON object, the first naming the version, config,
// health address, JSONL path and no secret.
func TestLogsJSONToFile(t *testing.T) {
	dir := t.TempDir()
	health := freePort(t)
	jsonl := filepath.Join(dir, "traces.jsonl")
	cfg := setupConfig(t, health, freePort(t), freePort(t), "0", jsonl)
	logFile := filepath.Join(dir, "otelstep.log")
	b, _ := os.ReadFile(cfg)
	b = bytes.Replace(b, []byte("  telemetry:\n"), []byte("  telemetry:\n    logs:\n      level: info\n      encoding: json\n      output_paths: [stderr, "+logFile+"]\n      error_output_paths: [stderr]\n"), 1)
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	p := proctest.Start(t, buildBinary(t), cfg, health, "OTEL_TOKEN="+testToken)
	p.Stop(t)
	data, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) < 2 {
		t.Fatalf("log file: %q", data)
	}
	for i, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %d is not JSON (%v): %s", i+1, err, l)
		}
		if i == 0 {
			if m["msg"] != "otelstep starting" || m["level"] != "INFO" || m["config"] != cfg || m["health"] != "http://"+health+"/" ||
				m["jsonl"] != jsonl || m["exporters"] != "none" || m["version"] == nil || m["version"] == "" {
				t.Errorf("first line: %s", l)
			}
		}
	}
	if !strings.Contains(lines[len(lines)-1], `"msg":"otelstep stopped"`) {
		t.Errorf("last line: %s", lines[len(lines)-1])
	}
	if bytes.Contains(data, []byte(testToken)) || strings.Contains(p.Out.String(), testToken) {
		t.Error("token in the log")
	}
	// stderr got the same lines.
	if !strings.Contains(p.Out.String(), lines[0]) {
		t.Errorf("stderr lacks the first line:\n%s", p.Out.String())
	}
}

func TestLogsSamplingRefused(t *testing.T) {
	cfg := setupConfig(t, freePort(t), freePort(t), freePort(t), "0", filepath.Join(t.TempDir(), "t.jsonl"))
	b, _ := os.ReadFile(cfg)
	b = bytes.Replace(b, []byte("  telemetry:\n"), []byte("  telemetry:\n    logs:\n      sampling:\n        initial: 10\n      development: true\n"), 1)
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runSplit(t, []string{"OTEL_TOKEN=" + testToken}, "validate", cfg)
	if code != 2 || !strings.Contains(errOut, "collector.yaml:24: service.telemetry.logs.sampling: sampling is not implemented") ||
		!strings.Contains(errOut, `collector.yaml:26: service.telemetry.logs.development: unknown key "development"`) {
		t.Errorf("exit %d:\n%s", code, errOut)
	}
}
