package main

import (
	"math"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

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

// The soft memory limit is defaultMemoryLimit unless GOMEMLIMIT is set,
// whatever it says (off included): the runtime applied that one.
func TestMemoryLimitDefault(t *testing.T) {
	orig := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(orig)
	debug.SetMemoryLimit(math.MaxInt64)
	setMemoryLimit(func(k string) (string, bool) { return "off", k == "GOMEMLIMIT" })
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Fatalf("GOMEMLIMIT set: the limit changed to %d", got)
	}
	if got := memoryLimit(); got != "off" {
		t.Errorf("no limit logged as %q, want off", got)
	}
	setMemoryLimit(func(string) (string, bool) { return "", false })
	if got := debug.SetMemoryLimit(-1); got != defaultMemoryLimit {
		t.Fatalf("GOMEMLIMIT unset: the limit is %d, want %d", got, defaultMemoryLimit)
	}
	if got := memoryLimit(); got != "256MiB" {
		t.Errorf("the default logged as %q, want 256MiB", got)
	}
	debug.SetMemoryLimit(100<<20 + 1)
	if got := memoryLimit(); got != "104857601B" {
		t.Errorf("a limit of no whole MiB logged as %q", got)
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

// TestTuningInTheBinary: the collector runs at GOMAXPROCS 1 and GOGC 25
// unless the environment or --procs says otherwise, as its first log line
// reports.
func TestTuningInTheBinary(t *testing.T) {
	bin := buildBinary(t)
	for _, c := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"defaults", nil, nil, "GOMAXPROCS=1 GOGC=25 GOMEMLIMIT=256MiB"},
		{"environment", []string{"GOMAXPROCS=2", "GOGC=80", "GOMEMLIMIT=100MiB"}, nil, "GOMAXPROCS=2 GOGC=80 GOMEMLIMIT=100MiB"},
		{"--procs wins", []string{"GOMAXPROCS=2"}, []string{"--procs", "3"}, "GOMAXPROCS=3 GOGC=25"},
		{"GC off", []string{"GOGC=off"}, nil, "GOMAXPROCS=1 GOGC=off"},
		{"memory limit off", []string{"GOMEMLIMIT=off"}, nil, "GOGC=25 GOMEMLIMIT=off"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(bin, c.args...)
			cmd.Dir = t.TempDir()
			cmd.Env = withoutVars(os.Environ(), "GOMAXPROCS", "GOGC", "GOMEMLIMIT")
			cmd.Env = append(cmd.Env, "OTELSTEP_HEALTH="+freePort(t), "OTELSTEP_GRPC="+freePort(t), "OTELSTEP_HTTP="+freePort(t))
			cmd.Env = append(cmd.Env, c.env...)
			var out lockedOut
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			defer func() { _ = cmd.Process.Kill(); <-done }()
			// The line comes before the pipelines are built; no deadline
			// but the test's own: a busy machine only makes it later.
			for !strings.Contains(out.String(), "msg=\"otelstep starting\"") {
				select {
				case err := <-done:
					t.Fatalf("exited before starting: %v\n%s", err, out.String())
				case <-time.After(10 * time.Millisecond):
				}
			}
			if !strings.Contains(out.String(), c.want) {
				t.Errorf("want %q in the log:\n%s", c.want, out.String())
			}
		})
	}
}

func TestTimerSlackFrom(t *testing.T) {
	for _, c := range []struct {
		env  string
		set  bool
		want time.Duration
		bad  bool
	}{
		{set: false, want: defaultTimerSlack},
		{env: "0", set: true, want: 0},
		{env: " 0 ", set: true, want: 0},
		{env: "2ms", set: true, want: 2 * time.Millisecond},
		{env: "750us", set: true, want: 750 * time.Microsecond},
		{env: "1s", set: true, want: time.Second},
		{env: "", set: true, bad: true},
		{env: "5", set: true, bad: true}, // a unit is wanted
		{env: "abc", set: true, bad: true},
		{env: "-1ms", set: true, bad: true},
		{env: "500ns", set: true, bad: true},
		{env: "2s", set: true, bad: true},
	} {
		got, err := timerSlackFrom(func(k string) (string, bool) {
			if k != timerSlackEnv {
				t.Fatalf("looked up %q", k)
			}
			return c.env, c.set
		})
		if c.bad {
			if err == nil {
				t.Errorf("%q: %v, want an error", c.env, got)
			} else if !strings.Contains(err.Error(), timerSlackEnv) || !strings.Contains(err.Error(), c.env) {
				t.Errorf("%q: error %q does not name the variable and its value", c.env, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q (set %v): %v, %v; want %v", c.env, c.set, got, err, c.want)
		}
	}
}

// A bad OTELSTEP_TIMERSLACK is refused before anything runs, by validate
// too.
func TestTimerSlackRefused(t *testing.T) {
	code, out := runBinary(t, []string{timerSlackEnv + "=5"}, "validate", "--config", "testdata/collector-v1.yaml")
	if code != exitUsage {
		t.Fatalf("%s=5: exit %d, want %d\n%s", timerSlackEnv, code, exitUsage, out)
	}
	if !strings.Contains(out, timerSlackEnv+`="5"`) {
		t.Errorf("the error does not name the variable and its value: %q", out)
	}
}

// withoutVars returns env without the variables named.
func withoutVars(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		keep := true
		for _, n := range names {
			keep = keep && !strings.HasPrefix(kv, n+"=")
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}
