//go:build !unix

package main

// ignoreFileSizeSignal: there is no SIGXFSZ.
func ignoreFileSizeSignal() {}
