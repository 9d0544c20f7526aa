//go:build !linux

package bench

import (
	"errors"
	"time"
)

// threadCPU reports that a thread's CPU time is not read here: it is
// RUSAGE_THREAD, which only Linux has (threadcpu_linux.go). TextparseRate
// falls back to wall time.
func threadCPU() (time.Duration, error) {
	return 0, errors.New("bench: a thread's CPU time is read on Linux only")
}
