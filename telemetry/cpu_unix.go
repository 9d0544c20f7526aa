//go:build unix

package telemetry

import "syscall"

// cpuSeconds is the process's user and system CPU time, all threads, from
// getrusage: in microseconds, where /proc/self/stat counts clock ticks
// (10 ms), too coarse for a process that mostly sleeps.
func (p *process) cpuSeconds() (float64, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9, true
}
