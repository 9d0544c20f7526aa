package main

import (
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
		{"defaults", nil, nil, "GOMAXPROCS=1 GOGC=25"},
		{"environment", []string{"GOMAXPROCS=2", "GOGC=80"}, nil, "GOMAXPROCS=2 GOGC=80"},
		{"--procs wins", []string{"GOMAXPROCS=2"}, []string{"--procs", "3"}, "GOMAXPROCS=3 GOGC=25"},
		{"GC off", []string{"GOGC=off"}, nil, "GOMAXPROCS=1 GOGC=off"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(bin, c.args...)
			cmd.Dir = t.TempDir()
			cmd.Env = withoutVars(os.Environ(), "GOMAXPROCS", "GOGC")
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
