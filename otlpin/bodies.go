package otlpin

import (
	"github.com/otelstep/otelstep/internal/pool"
	"math/bits"
	"sync/atomic"

	"github.com/otelstep/otelstep/pipeline"
)

// Pooled request bodies.
//
// The protobuf decoder keeps views of the body it decodes (strings, span
// records), so a request's body lives as long as its batch. A new body
// per request would be most of the bytes a traces load allocates, so
// bodies come from a pool, by size class, and the batch
// carries the body's lease (pipeline.Lease): the last sink to let go of the
// batch puts the body back. Used for gRPC requests (grpcreq.go) and for
// HTTP protobuf requests of known length (http.go); a body bigger than the
// largest class, or one decoded with an error, goes to the garbage
// collector.

// Size classes: 16 KiB, then four a doubling (20, 24, 28, 32 KiB, 40, ...)
// up to 8 MiB, so a body wastes at most a fifth of its size: with a class
// a doubling, requests of just over a power of two would hold twice their
// size. A bigger request
// gets a body of its own that goes to the garbage collector.
const (
	minBodyShift = 14
	maxBodyShift = 23
	bodyClasses  = 1 + 4*(maxBodyShift-minBodyShift)
)

// bodyClass returns the class of the smallest body that holds n bytes, or
// bodyClasses when none does.
func bodyClass(n int) int {
	if n <= 1<<minBodyShift {
		return 0
	}
	e := bits.Len(uint(n-1)) - 1 // n-1 is in [2^e, 2^(e+1))
	if e >= maxBodyShift {
		return bodyClasses
	}
	m := (n - 1) >> (e - 2) & 3 // which quarter of the doubling
	return 1 + 4*(e-minBodyShift) + m
}

// classSize is the size of class c's bodies.
func classSize(c int) int {
	if c == 0 {
		return 1 << minBodyShift
	}
	e, m := minBodyShift+(c-1)/4, (c-1)%4
	return (5 + m) << (e - 2)
}

// bodyPool holds the bodies of decoded requests, by size class.
type bodyPool struct {
	classes [bodyClasses]pool.Pool[body]
	// returned counts the bodies let go of (put back, or poisoned): what
	// a test can count on, since a sync.Pool need not hand a body back
	// (the race detector drops a share of its Puts, a collection empties it).
	returned atomic.Uint64
}

// body is a pooled request body and the lease a batch holds on it.
type body struct {
	b     []byte // cap is the class's size
	class int
	pool  *bodyPool
	lease pipeline.Lease
	back  func() // b.put, made once per body
}

// get returns a body of at least n bytes with b[:n] to fill, its lease
// holding one reference; nil when n is above the largest class.
func (p *bodyPool) get(n int) *body {
	c := bodyClass(n)
	if c >= bodyClasses {
		return nil
	}
	b := p.classes[c].Get()
	if b.pool == nil { // new
		*b = body{b: make([]byte, classSize(c)), class: c, pool: p}
		b.back = b.put
	}
	b.b = b.b[:n]
	b.lease.Reset(b.back)
	return b
}

// put returns b to its class; the lease's last release calls it. In a
// poison build it poisons b's bytes and drops b instead (pipeline.Lease):
// the strings a batch decoded from it then read as poison.
func (b *body) put() {
	b.pool.returned.Add(1)
	if pipeline.PoisonReleased {
		pipeline.PoisonBytes(b.b[:cap(b.b)])
		return
	}
	b.b = b.b[:cap(b.b)]
	b.pool.classes[b.class].Put(b)
}
