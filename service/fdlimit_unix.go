//go:build unix

package service

import "syscall"

// openFileLimit is the process's RLIMIT_NOFILE (the soft limit, which the
// Go runtime raises to the hard one at start); false when unknown or
// unlimited.
func openFileLimit() (int64, bool) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil || l.Cur > 1<<40 {
		return 0, false
	}
	return int64(l.Cur), true
}
