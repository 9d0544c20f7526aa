package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat.
// It is 100 on every Linux architecture Go supports; reading it needs
// sysconf, which needs cgo.
const clockTicks = 100

// Proc is a collector process under measurement: otelstep itself or a peer,
// started on a config the tool wrote.
type Proc struct {
	Name    string
	cmd     *exec.Cmd
	stderr  *bytes.Buffer
	health  string // host:port of its health_check
	started time.Time
	// Healthy is how long it took from exec to the first 200 on health.
	Healthy time.Duration
	done    chan error // receives Wait's result once
	exited  bool       // done was received
	// anonPeak is the highest RssAnon seen by the sampler, in bytes.
	anonPeak atomic.Int64
	// gone is set once the process has exited.
	gone atomic.Bool
}

// anonSampleEvery is how often the sampler reads RssAnon.
const anonSampleEvery = 20 * time.Millisecond

// StartProc runs argv and waits until its health endpoint answers 200.
func StartProc(ctx context.Context, name string, argv []string, health string, env []string) (*Proc, error) {
	if len(argv) == 0 {
		return nil, errors.New("no command")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	p := &Proc{Name: name, cmd: cmd, stderr: &bytes.Buffer{}, health: health, done: make(chan error, 1)}
	cmd.Stderr = &limitedBuffer{b: p.stderr, max: 1 << 20}
	cmd.Stdout = cmd.Stderr
	// The tool's own garbage (the ceiling's parsing, the targets' pages)
	// is collected now: on a 2-core host its GC's workers, and what they
	// leave to sweep, would run on the cores the process is starting on,
	// and its start to healthy would read slower than the same binary
	// started alone.
	runtime.GC()
	p.started = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	go func() {
		err := cmd.Wait()
		p.gone.Store(true)
		p.done <- err
	}()
	deadline := time.Now().Add(30 * time.Second)
	client := &http.Client{Timeout: time.Second}
	for {
		resp, err := client.Get("http://" + health + "/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				p.Healthy = time.Since(p.started)
				go p.sampleAnon()
				return p, nil
			}
		}
		select {
		case err := <-p.done:
			p.exited = true
			return nil, fmt.Errorf("%s exited before it was healthy (%v):\n%s", name, err, tail(p.stderr.String(), 2000))
		case <-ctx.Done():
			p.Kill()
			return nil, ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.Kill()
			return nil, fmt.Errorf("%s: not healthy on %s after 30s:\n%s", name, health, tail(p.stderr.String(), 2000))
		}
	}
}

// Gone reports whether the process has exited.
func (p *Proc) Gone() bool { return p.gone.Load() }

// CPU returns the process's user+system CPU seconds so far: the sum of
// its threads' run time in /proc/PID/task/*/schedstat, in nanoseconds,
// where /proc/PID/stat counts 10 ms ticks (a job's load of three targets at
// 15 s costs a few ticks a minute). A thread that has exited is no longer
// counted there; Go's runtime keeps its threads. Without schedstat (a
// kernel without CONFIG_SCHED_INFO), the ticks.
func (p *Proc) CPU() (float64, error) {
	if v, ok := p.schedCPU(); ok {
		return v, nil
	}
	return p.statCPU()
}

// schedCPU sums the first field (time on a CPU, ns) of every thread's
// schedstat.
func (p *Proc) schedCPU() (float64, bool) {
	dir := fmt.Sprintf("/proc/%d/task", p.cmd.Process.Pid)
	tasks, err := os.ReadDir(dir)
	if err != nil || len(tasks) == 0 {
		return 0, false
	}
	var ns int64
	for _, t := range tasks {
		data, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if errors.Is(err, os.ErrNotExist) {
			continue // the thread ended
		}
		if err != nil {
			return 0, false
		}
		f := strings.Fields(string(data))
		if len(f) == 0 {
			return 0, false
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, false
		}
		ns += v
	}
	return float64(ns) / 1e9, true
}

// statCPU reads utime and stime from /proc/PID/stat.
func (p *Proc) statCPU() (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", p.Name, err)
	}
	// The command name (field 2) may hold spaces: fields count from the
	// last ')'.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("%s: unreadable /proc stat", p.Name)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("%s: short /proc stat", p.Name)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64) // field 14, utime
	st, err2 := strconv.ParseInt(f[12], 10, 64) // field 15, stime
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("%s: bad /proc stat", p.Name)
	}
	return float64(ut+st) / clockTicks, nil
}

// sampleAnon keeps anonPeak until the process is gone (its status stops
// reading, or a zombie's has no RssAnon).
//
// The kernel keeps no high-water mark of the anonymous part alone, so it is
// sampled. It is the part a collector's work moves (heap, stacks): VmHWM
// also counts the file-backed pages of the binary it has touched, which
// are page cache shared with every other process running it.
func (p *Proc) sampleAnon() {
	for {
		v, err := p.status("RssAnon:")
		if err != nil {
			return
		}
		if v > p.anonPeak.Load() {
			p.anonPeak.Store(v)
		}
		time.Sleep(anonSampleEvery)
	}
}

// PeakAnonRSS is the highest RssAnon sampled since it was healthy, in bytes.
func (p *Proc) PeakAnonRSS() int64 { return p.anonPeak.Load() }

// PeakRSS returns VmHWM, the resident set's high-water mark, in bytes.
func (p *Proc) PeakRSS() (int64, error) { return p.status("VmHWM:") }

// RSS returns VmRSS, the resident set now, in bytes.
func (p *Proc) RSS() (int64, error) { return p.status("VmRSS:") }

// status reads one kB field of /proc/PID/status.
func (p *Proc) status(field string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", p.Name, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: bad %s %q", p.Name, field, v)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("%s: no %s in /proc status", p.Name, field)
}

// Stop sends SIGTERM and waits up to timeout, then kills.
func (p *Proc) Stop(timeout time.Duration) error {
	if p.exited {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.exited = true
		if err != nil {
			return fmt.Errorf("%s: %w:\n%s", p.Name, err, tail(p.stderr.String(), 2000))
		}
		return nil
	case <-time.After(timeout):
		p.Kill()
		return fmt.Errorf("%s: did not exit within %s of SIGTERM", p.Name, timeout)
	}
}

// Kill ends the process at once (if it is still running).
func (p *Proc) Kill() {
	if p.exited {
		return
	}
	_ = p.cmd.Process.Kill()
	select {
	case <-p.done:
		p.exited = true
	case <-time.After(5 * time.Second):
	}
}

// Log returns the end of what the process wrote.
func (p *Proc) Log() string { return tail(p.stderr.String(), 4000) }

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// limitedBuffer keeps the first max bytes written (a chatty peer's debug log
// must not grow the bench tool without bound).
type limitedBuffer struct {
	b   *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// Ports hands out loopback host:ports nothing listens on, for a process
// under test to bind, never the same one twice. They come from below
// Linux's ephemeral range (32768 up), at random, checked free: a port from
// :0 is ephemeral, and between closing it here and the child binding it an
// outgoing connection (the scrapes, the load, another test's client) may
// take it as its local port. The zero value is ready to use.
type Ports struct {
	mu    sync.Mutex
	given map[int]bool
}

// Take returns n distinct free ports none of p's earlier answers held.
func (p *Ports) Take(n int) ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.given == nil {
		p.given = map[int]bool{}
	}
	var out []string
	for try := 0; len(out) < n && try < 500; try++ {
		port := 20000 + rand.IntN(12000)
		if p.given[port] {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		p.given[port] = true
		out = append(out, ln.Addr().String())
		ln.Close()
	}
	if len(out) < n {
		return nil, fmt.Errorf("no %d free loopback ports between 20000 and 32000", n)
	}
	return out, nil
}

// scrapeCounter reads one un-labelled sample from a Prometheus text page
// at url (otelstep's own /metrics beside its health endpoint).
func scrapeCounter(url, name string) (float64, bool) {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v, err == nil
		}
	}
	return 0, false
}
