package main

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Timer slack is how late Linux may end a thread's sleeps and timeouts so
// that it can wake it together with other work (prctl(2),
// PR_SET_TIMERSLACK); a process starts with 50 µs.
//
// The collector raises it to defaultTimerSlack for the Go runtime's sysmon
// thread. While otelstep's one P runs, sysmon naps 20 µs plus the slack at
// a time, to find goroutines to preempt and syscalls to take the P from;
// on the job's VMs each nap lasted about 250 µs and cost about 23 µs of
// CPU to set up and end. Scrapes, flushes and file writes come a few
// milliseconds apart, so sysmon never got to its long naps: on the
// 84-target fixture mix it was 11% of the process's CPU (perf,
// 2026-12-05). With 5 ms its naps last 5 ms, twenty times fewer: +6 to
// +20% samples per CPU-second on that mix (four pairs run at once, "0"
// against it; bench/README.md), start to healthy unchanged. The cost is
// that a goroutine blocked in a syscall holds the one P up to 5 ms longer
// before sysmon hands the P on, and that timers run up to 5 ms late.
// Nothing in otelstep needs its timers to the millisecond: scrape
// intervals are seconds, the batch timeout 200 ms.
//
// sysmon's thread is started before any of otelstep's code runs, and a
// thread's slack is its own (new threads copy their creator's), so it is
// set on every thread at once with syscall.AllThreadsSyscall, once the
// collector is running. Setting it on the threads started after main's
// first (all but sysmon's) measured nothing; executing the binary again
// with the slack set, so that sysmon started with it, gained the same but
// cost 10 ms of every start.
const defaultTimerSlack = 5 * time.Millisecond

// timerSlackEnv names the environment variable that sets the slack: a Go
// duration from 1µs to 1s, or 0 to leave the slack otelstep was started
// with.
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

// errSlackChosen is setTimerSlack's answer when the process was started
// with a slack of its own.
var errSlackChosen = errors.New("left as started")
