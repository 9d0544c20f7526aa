package sink

import "golang.org/x/sys/unix"

// startWriteback starts (does not wait for) writeback of [off, off+n).
func startWriteback(fd uintptr, off, n int64) error {
	return unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE)
}

// dropCache drops the clean pages of [off, off+n) from the page cache.
func dropCache(fd uintptr, off, n int64) error {
	return unix.Fadvise(int(fd), off, n, unix.FADV_DONTNEED)
}
