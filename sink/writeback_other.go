//go:build !linux

package sink

import "errors"

var errNoWriteback = errors.New("no sync_file_range on this system")

// startWriteback is Linux only; elsewhere the page cache is left alone.
func startWriteback(fd uintptr, off, n int64) error { return errNoWriteback }

func dropCache(fd uintptr, off, n int64) error { return errNoWriteback }
