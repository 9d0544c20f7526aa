//go:build !linux

package boot

// Prefault does nothing off Linux (prefault_linux.go).
func Prefault() error { return nil }
