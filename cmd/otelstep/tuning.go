package main

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"
)

// The collector's process-wide settings are all here (the timer slack's
// system calls in tuning_linux.go), set once by tune from run before
// anything is built; bench and replay run at the runtime's defaults. Each
// has an off switch, and DESIGN.md ("Process settings") says why each is
// worth it. Nothing else in otelstep changes how the Go runtime or the
// kernel treats the process.

// defaultProcs is how many threads run otelstep's Go code at once unless
// --procs or GOMAXPROCS says otherwise. otelstep runs beside a benchmark,
// on the benchmark's cores, and its work is many short pieces handed
// between goroutines (a scrape loop, the fan-out, the batcher, two sinks,
// the receivers' connections). With more than one P the runtime wakes an
// idle thread for each hand-off and lets it spin looking for work, which
// costs more than the work handed over, and the GC takes a quarter of the
// Ps for its mark workers: on a 64-core node, 16 threads taken from the
// benchmark. One core's worth is far above a job's load.
const defaultProcs = 1

// defaultGCPercent is the GC target otelstep runs at unless GOGC is set.
// Its memory is the benchmark job's, and it allocates little once running
// (a scrape's points come from pooled chunks, request bodies are pooled),
// so marking the live heap more often costs little CPU for a smaller peak.
const defaultGCPercent = 25

// defaultMemoryLimit is the Go runtime's soft memory limit unless
// GOMEMLIMIT is set (GOMEMLIMIT=off is the off switch). What otelstep
// holds is bounded in bytes (the receivers' admission budget, the
// exporter's queue, the scrapes' memory budget), so its live heap stays
// well under this; the limit is for what the GC target alone does not
// bound: after a spike (a big page, a burst of requests) the heap the
// runtime keeps, and the memory it has not given back to the system, are
// held to this rather than to the spike's size, and a heap that does near
// it is collected more often instead of growing by GOGC.
const defaultMemoryLimit = 256 << 20

// defaultTimerSlack is every thread's timer slack unless
// OTELSTEP_TIMERSLACK says otherwise. The timer slack is how late Linux may
// end a thread's sleeps and timeouts so that it can wake it together with
// other work (prctl(2), PR_SET_TIMERSLACK); a process starts with 50 µs.
//
// It is for the Go runtime's sysmon thread. While otelstep's one P runs,
// sysmon naps 20 µs plus the slack at a time, to find goroutines to
// preempt and system calls to take the P from, and every nap is a wake-up
// of its own. At a job's load otelstep's work comes in bursts a few
// milliseconds long (an OTLP request through both sinks, a scrape), so
// sysmon would wake dozens of times per burst; with 5 ms it wakes once or
// twice (the A/B: docs/decisions.md). The cost: timers may run up to 5 ms
// late, and a goroutine blocked in a system call holds the P up to 5 ms
// longer before sysmon hands it on; nothing in otelstep needs its timers
// to the millisecond (scrape intervals are seconds, the batch timeout
// 200 ms).
const defaultTimerSlack = 5 * time.Millisecond

// timerSlackEnv names the environment variable that sets the slack: a Go
// duration from 1µs to 1s, or 0 to leave the slack otelstep was started
// with (the off switch).
const timerSlackEnv = "OTELSTEP_TIMERSLACK"

// kernelTimerSlack is the slack Linux gives a process no one set one for.
// Any other at the start was chosen by whoever started otelstep (systemd's
// TimerSlackNSec=, say), and is left alone.
const kernelTimerSlack = 50 * time.Microsecond

// timerSlackFrom returns the slack timerSlackEnv asks for (0: leave it),
// or an error naming the variable and what it wants.
func timerSlackFrom(lookup func(string) (string, bool)) (time.Duration, error) {
	s, set := lookup(timerSlackEnv)
	if !set {
		return defaultTimerSlack, nil
	}
	s = strings.TrimSpace(s)
	d, err := time.ParseDuration(s) // "0" is the one number it takes without a unit
	if err == nil && d == 0 {
		return 0, nil
	}
	if err != nil || d < time.Microsecond || d > time.Second {
		return 0, fmt.Errorf("%s=%q: want a duration from 1µs to 1s, such as 5ms, or 0 to leave the timer slack as started", timerSlackEnv, s)
	}
	return d, nil
}

// tune applies the collector's settings: GOMAXPROCS from --procs (procs,
// given) or defaultProcs, the GC target, the soft memory limit, and every
// thread's timer slack
// (slack, from timerSlackFrom). lookup reads the environment. It returns
// what came of the timer slack, for the log.
func tune(procs int, given bool, slack time.Duration, lookup func(string) (string, bool)) (slackNote string) {
	setProcs(procs, given, lookup)
	setGCPercent(lookup)
	setMemoryLimit(lookup)
	return applyTimerSlack(slack)
}

// applyTimerSlack sets every thread's timer slack to d, unless d is 0 or
// the process was started with a slack other than the kernel's, and says
// what the slack is and why. sysmon's thread is started before any of
// otelstep's code runs, and a thread's slack is its own (a new thread
// copies its creator's), so it is set on every thread at once; a build
// with cgo cannot reach the threads C may have started, and keeps the
// slack it was started with.
func applyTimerSlack(d time.Duration) string {
	was, err := currentTimerSlack()
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		return "not set: Linux only"
	case err != nil:
		return fmt.Sprintf("not set: %v", err)
	case d == 0:
		return fmt.Sprintf("%v, as started (%s=0)", was, timerSlackEnv)
	case was != kernelTimerSlack:
		return fmt.Sprintf("%v, as started (chosen by whoever started otelstep)", was)
	}
	switch err := setTimerSlack(d); {
	case errors.Is(err, errors.ErrUnsupported):
		return fmt.Sprintf("%v, as started: a build with cgo cannot set it on every thread, a static one (CGO_ENABLED=0) does", was)
	case err != nil:
		return fmt.Sprintf("%v, as started: %v", was, err)
	}
	return d.String()
}

// setProcs sets GOMAXPROCS to n (0: the runtime's own choice, one per CPU
// the process may use) if --procs was given or GOMAXPROCS is not set (the
// runtime has applied that one already).
func setProcs(n int, given bool, lookup func(string) (string, bool)) {
	if _, set := lookup("GOMAXPROCS"); set && !given {
		return
	}
	if n == 0 {
		runtime.SetDefaultGOMAXPROCS()
		return
	}
	runtime.GOMAXPROCS(n)
}

// setGCPercent sets defaultGCPercent unless GOGC is set (the runtime has
// applied that one already).
func setGCPercent(lookup func(string) (string, bool)) {
	if _, set := lookup("GOGC"); !set {
		debug.SetGCPercent(defaultGCPercent)
	}
}

// setMemoryLimit sets defaultMemoryLimit unless GOMEMLIMIT is set (the
// runtime has applied that one already).
func setMemoryLimit(lookup func(string) (string, bool)) {
	if _, set := lookup("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
}

// memoryLimit is the runtime's soft memory limit in force, for the log:
// "256MiB", or "off" when there is none (GOMEMLIMIT=off).
func memoryLimit() string {
	s := []metrics.Sample{{Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(s)
	n := s[0].Value.Uint64()
	switch {
	case n >= math.MaxInt64:
		return "off"
	case n%(1<<20) == 0:
		return strconv.FormatUint(n>>20, 10) + "MiB"
	}
	return strconv.FormatUint(n, 10) + "B"
}

// settings returns GOMAXPROCS and the GC target in force ("off" for
// GOGC=off), for the log: what tune set, or what the environment did.
func settings() (procs int, gogc string) {
	s := []metrics.Sample{{Name: "/sched/gomaxprocs:threads"}, {Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	if pct := int64(s[1].Value.Uint64()); pct >= 0 {
		gogc = strconv.FormatInt(pct, 10)
	} else {
		gogc = "off"
	}
	return int(s[0].Value.Uint64()), gogc
}
