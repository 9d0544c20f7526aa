package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

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

// lockedOutput is a process's output, read while it writes.
type lockedOutput struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *lockedOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

func (o *lockedOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// startWithSlack starts the built collector bin on the embedded default with
// env, the process starting with the timer slack start (the thread that
// forks it has it for the moment), and waits until it is healthy.
func startWithSlack(t *testing.T, bin string, env []string, start time.Duration) (*exec.Cmd, *lockedOutput) {
	t.Helper()
	health := freePort(t)
	cmd := exec.Command(bin)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "OTELSTEP_HEALTH="+health, "OTELSTEP_GRPC="+freePort(t), "OTELSTEP_HTTP="+freePort(t))
	cmd.Env = append(cmd.Env, env...)
	out := new(lockedOutput)
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
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	waitHealthy(t, health, out)
	return cmd, out
}

// TestTimerSlackOnEveryThread: once running, every thread of the collector
// has the slack OTELSTEP_TIMERSLACK asks for (default 5 ms), sysmon's
// included, which the runtime started before any of otelstep's code ran;
// "0", or a slack other than the kernel's 50 µs at the start, leaves the
// slack as started.
func TestTimerSlackOnEveryThread(t *testing.T) {
	for _, c := range []struct {
		name  string
		env   []string
		start time.Duration
		want  time.Duration
	}{
		{"default", nil, kernelTimerSlack, defaultTimerSlack},
		{"2ms", []string{timerSlackEnv + "=2ms"}, kernelTimerSlack, 2 * time.Millisecond},
		{"off", []string{timerSlackEnv + "=0"}, kernelTimerSlack, kernelTimerSlack},
		{"chosen at the start", nil, 70 * time.Microsecond, 70 * time.Microsecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd, out := startWithSlack(t, buildStatic(t), c.env, c.start)
			// The slack is set once the health endpoint has answered, or
			// startSettle after the start: past that, a slack that is to
			// stay as started would have been changed.
			time.Sleep(startSettle + 250*time.Millisecond)
			var got map[int]time.Duration
			for end := time.Now().Add(5 * time.Second); ; {
				got = threadSlacks(t, cmd.Process.Pid)
				same := true
				for _, d := range got {
					same = same && d == c.want
				}
				if same && len(got) > 1 {
					return
				}
				if time.Now().After(end) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			t.Errorf("threads' timer slack %v, want %v on each\n%s", got, c.want, out.String())
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
	cmd, out := startWithSlack(t, buildBinary(t), nil, kernelTimerSlack)
	time.Sleep(startSettle + 250*time.Millisecond)
	for tid, d := range threadSlacks(t, cmd.Process.Pid) {
		if d != kernelTimerSlack {
			t.Errorf("thread %d: timer slack %v, want %v as started", tid, d, kernelTimerSlack)
		}
	}
	if !strings.Contains(out.String(), "cgo") {
		t.Errorf("the log does not say why the timer slack is not set:\n%s", out.String())
	}
}
