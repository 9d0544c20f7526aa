//go:build !unix

package service

// openFileLimit: no limit is known here.
func openFileLimit() (int64, bool) { return 0, false }
