// Package proctest runs the built otelstep binary as a subprocess for tests:
// it builds it once, starts it on a config and waits until it is healthy,
// stops it with SIGTERM and tells how it ended (exit code, time from the
// signal, peak resident memory), and checks that the ingest token was
// written nowhere. cmd/otelstep's end-to-end tests and the fault suite
// (package faults) share it.
package proctest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/otelstep/otelstep/internal/testlog"
)

// Patience is how long a test waits for what takes milliseconds on an idle
// machine (a start, a batch reaching a backend): long, so that a busy
// machine makes a test slower, not failed. Waits end as soon as their
// condition holds.
const Patience = time.Minute

// StopBudget is what the job script allows between SIGTERM and SIGKILL.
const StopBudget = 30 * time.Second

// Build is one build of otelstep, made at its first use.
type Build struct {
	// Env is added to the go command's environment; Args to go build's
	// ("-race", "-pgo=off", ...).
	Env, Args []string

	once sync.Once
	path string
	err  error
}

// Path builds github.com/otelstep/otelstep/cmd/otelstep into a temporary
// folder the first time and returns the binary's path.
func (b *Build) Path() (string, error) {
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "otelstep-bin")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, "otelstep")
		args := append([]string{"build", "-o", b.path}, b.Args...)
		cmd := exec.Command("go", append(args, "github.com/otelstep/otelstep/cmd/otelstep")...)
		cmd.Env = append(os.Environ(), b.Env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("%s go build %s: %v\n%s", strings.Join(b.Env, " "), strings.Join(b.Args, " "), err, out)
		}
	})
	return b.path, b.err
}

// Get is Path for a test: a failed build fails it.
func (b *Build) Get(t testing.TB) string {
	t.Helper()
	p, err := b.Path()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Remove deletes the built binary's folder.
func (b *Build) Remove() {
	if b.path != "" {
		_ = os.RemoveAll(filepath.Dir(b.path))
	}
}

// Output is a process's stdout and stderr, written by exec's copying
// goroutine while a test reads it.
type Output = testlog.Buffer

// Process is the built binary running on a config.
type Process struct {
	Cmd *exec.Cmd
	Out Output // its stdout and stderr
	// Done receives Cmd.Wait's result once, when the process has exited.
	Done chan error

	exited  chan struct{} // closed when it has exited
	peakRSS atomic.Int64  // the largest VmHWM read, bytes
}

// rssEvery is how often a running process's VmHWM is read: its peak
// resident set is the last value read before it exited. The rusage a
// wait returns cannot tell it: Go starts a child with vfork, so the
// child's maxrss begins at the test process's own peak.
const rssEvery = 20 * time.Millisecond

// Command is exec.Command(bin, args...) with env added to the test's
// environment, ready for Launch.
func Command(bin string, env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// Launch starts cmd with its output kept in Out, and kills it at the
// test's end if it still runs.
func Launch(t testing.TB, cmd *exec.Cmd) *Process {
	t.Helper()
	p := &Process{Cmd: cmd, Done: make(chan error, 1), exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &p.Out, &p.Out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		tick := time.NewTicker(rssEvery)
		defer tick.Stop()
		for {
			if hwm, err := statusField(cmd.Process.Pid, "VmHWM"); err == nil {
				p.peakRSS.Store(max(p.peakRSS.Load(), hwm))
			}
			select {
			case <-p.exited:
				return
			case <-tick.C:
			}
		}
	}()
	go func() {
		err := cmd.Wait()
		close(p.exited)
		p.Done <- err
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return p
}

// Start runs bin --config cfgPath with env added to the test's, waits
// until healthAddr answers 200, and kills the process at the test's end if
// it still runs.
func Start(t testing.TB, bin, cfgPath, healthAddr string, env ...string) *Process {
	t.Helper()
	p := Launch(t, Command(bin, env, "--config", cfgPath))
	p.WaitHealthy(t, healthAddr)
	return p
}

// WaitHealthy waits until healthAddr answers 200, failing the test if the
// process exits first or Patience passes.
func (p *Process) WaitHealthy(t testing.TB, healthAddr string) {
	t.Helper()
	deadline := time.Now().Add(Patience)
	for {
		if Health(healthAddr) == 200 {
			return
		}
		select {
		case err := <-p.Done:
			p.Done <- err
			t.Fatalf("exited before it was healthy: %v; output:\n%s", err, p.Out.String())
		default:
		}
		if time.Now().After(deadline) {
			_ = p.Cmd.Process.Kill()
			t.Fatalf("not healthy in %v; output:\n%s", Patience, p.Out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Health is the status the health endpoint at addr answers, 0 when it
// does not.
func Health(addr string) int {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + addr + "/")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Exit is how a process ended.
type Exit struct {
	Code int           // exit status; -1 when killed by a signal
	Took time.Duration // from SIGTERM to the exit
	// PeakRSS is the process's peak resident set in bytes: its VmHWM
	// (/proc/PID/status) as last read before it exited (rssEvery).
	PeakRSS int64
}

// Terminate sends SIGTERM and waits for the exit. otelstep bounds its own
// stop (service.StopTimeout); if it has not exited after Patience it is
// killed (Code -1).
func (p *Process) Terminate(t testing.TB) Exit {
	t.Helper()
	// Read now too: on a busy machine the sampler may not have run yet.
	if hwm, err := statusField(p.Cmd.Process.Pid, "VmHWM"); err == nil {
		p.peakRSS.Store(max(p.peakRSS.Load(), hwm))
	}
	sent := time.Now()
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-p.Done:
	case <-time.After(Patience):
		_ = p.Cmd.Process.Kill()
		err = <-p.Done
	}
	e := Exit{Took: time.Since(sent)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		e.Code = ee.ExitCode()
	default:
		t.Fatalf("waiting for the process: %v", err)
	}
	e.PeakRSS = p.peakRSS.Load()
	p.Done <- err
	return e
}

// Stop sends SIGTERM and fails the test unless the process exits 0.
func (p *Process) Stop(t testing.TB) Exit {
	t.Helper()
	e := p.Terminate(t)
	if e.Code != 0 {
		t.Fatalf("exit %d %v after SIGTERM; output:\n%s", e.Code, e.Took.Round(time.Millisecond), p.Out.String())
	}
	t.Logf("exited 0, %v after SIGTERM", e.Took.Round(time.Millisecond))
	return e
}

// PeakRSS is the running process's peak resident set (VmHWM) in bytes,
// read now.
func (p *Process) PeakRSS() (int64, error) {
	return statusField(p.Cmd.Process.Pid, "VmHWM")
}

// RSS reads the running process's resident set (VmRSS) in bytes.
func (p *Process) RSS() (int64, error) {
	return statusField(p.Cmd.Process.Pid, "VmRSS")
}

// statusField reads a "kB" field of /proc/pid/status.
func statusField(pid int, name string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), name+":")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/status %s: %w", pid, name, err)
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("/proc/%d/status has no %s", pid, name)
}

// AssertNoToken fails the test if token is in any file under dir but
// cfgPath (which names only the variable) or in log.
func AssertNoToken(t testing.TB, token, dir, cfgPath, log string) {
	t.Helper()
	_ = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && p != cfgPath {
			data, _ := os.ReadFile(p)
			if bytes.Contains(data, []byte(token)) {
				t.Errorf("token found in %s", p)
			}
		}
		return nil
	})
	if strings.Contains(log, token) {
		t.Error("token found in otelstep's log")
	}
}
