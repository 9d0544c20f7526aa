// Package ratelimit spaces events to a fixed rate, for the load tools that
// must not send faster than asked: replay's --rate and the OTLP load
// generator's.
package ratelimit

import (
	"context"
	"sync"
	"time"
)

// Limiter hands out one slot every 1/rate seconds. It does not burst: a
// caller that was idle gets the next slot at once, not a backlog of them.
// A nil *Limiter never waits. It is safe for concurrent use.
type Limiter struct {
	mu    sync.Mutex
	every time.Duration
	next  time.Time
}

// New returns a Limiter for rate events per second; nil (no limit) when
// rate <= 0.
func New(rate float64) *Limiter {
	if rate <= 0 {
		return nil
	}
	return &Limiter{every: time.Duration(float64(time.Second) / rate)}
}

// Wait blocks until the caller's slot. It returns ctx.Err() when ctx ends
// first (or has ended).
func (l *Limiter) Wait(ctx context.Context) error {
	if l == nil {
		return ctx.Err()
	}
	l.mu.Lock()
	now := time.Now()
	at := l.next
	if at.Before(now) {
		at = now
	}
	l.next = at.Add(l.every)
	l.mu.Unlock()
	return Sleep(ctx, time.Until(at))
}

// Sleep waits d or until ctx ends, whichever is first, and returns
// ctx.Err() in the second case.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
