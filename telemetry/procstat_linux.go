package telemetry

import (
	"bytes"
	"os"
	"strconv"
)

// clockTicks is USER_HZ, the unit of /proc/self/stat's times: 100 on every
// Linux architecture Go runs on (sysconf(_SC_CLK_TCK) needs cgo to ask).
const clockTicks = 100

var pageSize = int64(os.Getpagesize())

// readProc reads a small /proc file into p.buf (the caller holds p.mu, or
// is newProcess): one read, no allocation but the open file's.
func (p *process) readProc(name string) ([]byte, bool) {
	f, err := os.Open(name)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	n, err := f.Read(p.buf[:])
	if err != nil || n == 0 {
		return nil, false
	}
	return p.buf[:n], true
}

// cpuSeconds is the process's user and system CPU time, from
// /proc/self/stat's utime and stime (fields 14 and 15).
func (p *process) cpuSeconds() (float64, bool) {
	b, ok := p.readProc("/proc/self/stat")
	if !ok {
		return 0, false
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// the fields are counted from after its closing one.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(b[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, false
	}
	ut, err1 := strconv.ParseUint(string(f[11]), 10, 64)
	st, err2 := strconv.ParseUint(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return float64(ut+st) / clockTicks, true
}

// rssBytes is the resident set size, /proc/self/statm's second field in
// pages.
func (p *process) rssBytes() (int64, bool) {
	b, ok := p.readProc("/proc/self/statm")
	if !ok {
		return 0, false
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil {
		return 0, false
	}
	return pages * pageSize, true
}
