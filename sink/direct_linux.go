package sink

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// openDirect opens path a second time with O_DIRECT for the sink's
// direct writes, or returns nil where the file system refuses it.
func openDirect(path string) *os.File {
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_DIRECT, 0)
	if err != nil {
		return nil
	}
	return f
}

// pwriteDirect writes p at off on the O_DIRECT descriptor fd and returns
// how much of it was written.
func pwriteDirect(fd int, p []byte, off int64) (int, error) {
	done := 0
	for done < len(p) {
		n, err := unix.Pwrite(fd, p[done:], off+int64(done))
		if err != nil {
			return done, err
		}
		done += n
		if n <= 0 || n%directAlign != 0 {
			// What is left would not be aligned: the caller writes
			// it through the page cache.
			return done, errShortDirect
		}
	}
	return done, nil
}
