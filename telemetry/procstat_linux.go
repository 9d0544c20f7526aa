package telemetry

import (
	"bytes"
	"os"
	"strconv"
)

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
