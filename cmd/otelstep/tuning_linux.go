package main

import (
	"fmt"
	"syscall"
	"time"
)

// prctl(2) options.
const (
	prSetTimerSlack = 29
	prGetTimerSlack = 30
)

// currentTimerSlack returns the calling thread's timer slack.
func currentTimerSlack() (time.Duration, error) {
	r, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prGetTimerSlack, 0, 0)
	if e != 0 {
		return 0, fmt.Errorf("prctl(PR_GET_TIMERSLACK): %w", e)
	}
	return time.Duration(r), nil
}

// setTimerSlack sets the timer slack of every thread of the process to d
// (tuning.go says why). It stops the world for a moment. A build with cgo
// gets ENOTSUP (errors.ErrUnsupported).
func setTimerSlack(d time.Duration) error {
	if _, _, e := syscall.AllThreadsSyscall(syscall.SYS_PRCTL, prSetTimerSlack, uintptr(d.Nanoseconds()), 0); e != 0 {
		return fmt.Errorf("prctl(PR_SET_TIMERSLACK, %v) on every thread: %w", d, e)
	}
	return nil
}
