package main

import (
	"fmt"
	"os"
	"syscall"
)

// releaseStartPages releases the resident pages of the binary's read-only
// mappings (see startpages.go) and returns how many kB were resident in
// them.
func releaseStartPages() (int64, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, fmt.Errorf("release startup pages: %w", err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, fmt.Errorf("release startup pages: %w", err)
	}
	ms, err := releasable(f, exe)
	f.Close()
	if err != nil {
		return 0, fmt.Errorf("release startup pages: /proc/self/smaps: %w", err)
	}
	var kb int64
	for _, m := range ms {
		if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, uintptr(m.lo), uintptr(m.hi-m.lo), syscall.MADV_DONTNEED); e != 0 {
			return kb, fmt.Errorf("release startup pages: madvise %x-%x %s: %w", m.lo, m.hi, m.perms, e)
		}
		kb += m.rssKB
	}
	return kb, nil
}
