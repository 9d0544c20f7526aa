// Package testlog gives tests a logger whose output they can read while
// the code under test still logs from its own goroutines.
package testlog

import (
	"bytes"
	"log/slog"
	"sync"
)

// Buffer is a goroutine-safe log buffer.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *Buffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// String is everything written so far.
func (w *Buffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// New returns a text logger at debug level writing into a new Buffer.
func New() (*slog.Logger, *Buffer) {
	w := &Buffer{}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug})), w
}

// Reset drops everything written so far.
func (w *Buffer) Reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Reset()
}
