//go:build unix

package main

import (
	"os/signal"
	"syscall"
)

// ignoreFileSizeSignal ignores SIGXFSZ: a write past the file size limit
// (RLIMIT_FSIZE) then fails with EFBIG, which the JSONL sink handles like a
// full disk (it keeps the data and retries until a write succeeds), instead
// of the signal ending the process. Go's runtime ignores it too unless
// notified; this says it is meant.
func ignoreFileSizeSignal() { signal.Ignore(syscall.SIGXFSZ) }
