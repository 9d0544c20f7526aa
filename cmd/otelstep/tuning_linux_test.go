package main

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startForSlack starts bin on the embedded default with env, the process
// starting with the timer slack start (the thread that forks it has it for
// the moment), and waits for its first log line: tune has run by then.
func startForSlack(t *testing.T, bin string, env []string, start time.Duration) (*exec.Cmd, *lockedOut) {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Dir = t.TempDir()
	cmd.Env = append(withoutVars(os.Environ(), timerSlackEnv), "OTELSTEP_HEALTH="+freePort(t), "OTELSTEP_GRPC="+freePort(t), "OTELSTEP_HTTP="+freePort(t))
	cmd.Env = append(cmd.Env, env...)
	out := new(lockedOut)
	cmd.Stdout, cmd.Stderr = out, out
	func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		was, err := currentTimerSlack()
		if err != nil {
			t.Fatal(err)
		}
		if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, uintptr(start), 0); e != 0 {
			t.Fatal(e)
		}
		defer syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, uintptr(was), 0)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	for !strings.Contains(out.String(), `msg="otelstep starting"`) {
		select {
		case err := <-done:
			t.Fatalf("exited before starting: %v\n%s", err, out.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	return cmd, out
}

// threadSlacks returns the timer slack of every thread of pid, read from
// /proc/TID/timerslack_ns (each thread's own; /proc/PID/task/TID has no
// such file). Reading another process's needs CAP_SYS_NICE: the test is
// skipped without it.
func threadSlacks(t *testing.T, pid int) map[int]time.Duration {
	t.Helper()
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[int]time.Duration, len(tasks))
	for _, e := range tasks {
		tid, _ := strconv.Atoi(e.Name())
		b, err := os.ReadFile("/proc/" + e.Name() + "/timerslack_ns")
		if errors.Is(err, os.ErrPermission) {
			t.Skipf("reading another process's timer slack needs CAP_SYS_NICE: %v", err)
		}
		if errors.Is(err, os.ErrNotExist) {
			continue // the thread ended
		}
		if err != nil {
			t.Fatal(err)
		}
		ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		out[tid] = time.Duration(ns)
	}
	return out
}

// TestTimerSlackOnEveryThread: once tune has run, every thread of the
// static (released) binary has the slack OTELSTEP_TIMERSLACK asks for
// (default 5 ms), sysmon's included, which the runtime started before any
// of otelstep's code ran; "0" (the off switch), or a slack other than the
// kernel's 50 µs at the start, leaves the slack as started. Threads started
// later copy their creator's.
func TestTimerSlackOnEveryThread(t *testing.T) {
	for _, c := range []struct {
		name  string
		env   []string
		start time.Duration
		want  time.Duration
		log   string
	}{
		{"default", nil, kernelTimerSlack, defaultTimerSlack, "timer_slack=5ms"},
		{"2ms", []string{timerSlackEnv + "=2ms"}, kernelTimerSlack, 2 * time.Millisecond, "timer_slack=2ms"},
		{"off", []string{timerSlackEnv + "=0"}, kernelTimerSlack, kernelTimerSlack, "as started (OTELSTEP_TIMERSLACK=0)"},
		{"chosen at the start", nil, 70 * time.Microsecond, 70 * time.Microsecond, "as started (chosen by whoever started otelstep)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd, out := startForSlack(t, buildStatic(t), c.env, c.start)
			got := threadSlacks(t, cmd.Process.Pid)
			if len(got) < 2 {
				t.Fatalf("%d threads: %v", len(got), got)
			}
			for tid, d := range got {
				if d != c.want {
					t.Errorf("thread %d: timer slack %v, want %v on each of %v", tid, d, c.want, got)
				}
			}
			if !strings.Contains(out.String(), c.log) {
				t.Errorf("the log does not say %q:\n%s", c.log, out.String())
			}
		})
	}
}

// TestTimerSlackUnderCgo: a build with cgo (the tests' binary under -race,
// or go run where a C compiler is found) runs at the slack it was started
// with, and its log says why.
func TestTimerSlackUnderCgo(t *testing.T) {
	if !raceBuild {
		t.Skip("the tests' binary is built with cgo only under -race")
	}
	cmd, out := startForSlack(t, buildBinary(t), nil, kernelTimerSlack)
	for tid, d := range threadSlacks(t, cmd.Process.Pid) {
		if d != kernelTimerSlack {
			t.Errorf("thread %d: timer slack %v, want %v as started", tid, d, kernelTimerSlack)
		}
	}
	if !strings.Contains(out.String(), "cgo") {
		t.Errorf("the log does not say why the timer slack is not set:\n%s", out.String())
	}
}
