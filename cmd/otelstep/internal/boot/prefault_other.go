//go:build !linux

package boot

// prefault does nothing off Linux (prefault_linux.go).
func prefault() {}
