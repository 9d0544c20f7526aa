// Package pool keeps values for reuse, typed: Pool, a sync.Pool of *T, for
// what a garbage collection may take back (buffers, chunks, readers lent
// for one request or scrape); FreeList, a bounded stack that a collection
// leaves alone, for what is costly to make again (a compressor's state).
//
// Neither clears what it is given: the caller empties a value before Put
// (or after Get), as only it knows what the value holds. A value handed to
// Put must not be used again by the caller.
package pool

import "sync"

// Pool is a sync.Pool of *T. The zero Pool makes new values with new(T).
type Pool[T any] struct {
	p sync.Pool
	// New, when set, makes a value when none is kept.
	New func() *T
}

// Get returns a kept value, else a new one.
func (p *Pool[T]) Get() *T {
	if x, _ := p.p.Get().(*T); x != nil {
		return x
	}
	if p.New != nil {
		return p.New()
	}
	return new(T)
}

// Put keeps x for a later Get; nil is ignored.
func (p *Pool[T]) Put(x *T) {
	if x != nil {
		p.p.Put(x)
	}
}

// FreeList is a stack of *T kept for reuse. Unlike a Pool, a garbage
// collection does not empty it. The zero FreeList keeps every value put
// and makes new values with new(T).
type FreeList[T any] struct {
	mu   sync.Mutex
	free []*T
	// Keep bounds the values kept (0: as many as were ever put and not
	// taken again); a value put past it is left to the garbage collector.
	Keep int
	// New, when set, makes a value when none is kept.
	New func() *T
}

// Get returns the value put last, else a new one.
func (l *FreeList[T]) Get() *T {
	l.mu.Lock()
	if n := len(l.free); n > 0 {
		x := l.free[n-1]
		l.free[n-1] = nil
		l.free = l.free[:n-1]
		l.mu.Unlock()
		return x
	}
	l.mu.Unlock()
	if l.New != nil {
		return l.New()
	}
	return new(T)
}

// Put keeps x, unless Keep are kept; nil is ignored.
func (l *FreeList[T]) Put(x *T) {
	if x == nil {
		return
	}
	l.mu.Lock()
	if l.Keep == 0 || len(l.free) < l.Keep {
		l.free = append(l.free, x)
	}
	l.mu.Unlock()
}

// Len is how many values are kept.
func (l *FreeList[T]) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.free)
}
