package pipeline

import (
	"errors"
	"sync/atomic"
)

// Leases: memory a producer lends to the batches it sends and wants back.
//
// A scrape's data points, metrics and their slices are carved from chunks
// (scraper's arenas). They are garbage once every sink has encoded the
// batch, and without leases they go to the garbage collector while every
// scrape allocates them afresh, which keeps the collector busy on the
// scrape path. A Lease lets the producer have them back instead: it counts
// the holders of a batch's memory, and the last one to let go calls the
// producer's free function.
//
// The rules, for every holder of a batch with leases:
//   - Whoever owns the batch (the Consume contract: the callee once Consume
//     returns nil, the caller otherwise) holds one reference on each of its
//     Leases. Passing the batch on passes the reference with it.
//   - A holder that gives the same memory to k holders (the fan-out to its
//     sinks, a split batch's two halves) calls Retain(k-1) first.
//   - A holder calls Release once it will never touch the batch's memory
//     again: after a sink has encoded it, or when it drops it.
//   - Never releasing is safe for the memory: it then goes to the garbage
//     collector, as it would without a lease. But an OTLP receiver's lease
//     also holds the request's bytes of its budget (otlpin's admission),
//     which only a release gives back, so every holder releases what it
//     is done with. Releasing early is never safe, so a path that is
//     unsure whether others read the memory keeps its reference.
//   - A stage that reads a batch's memory calls Batch.CheckLive before and
//     after: a no-op, except in a poison build.
//
// A Batch's Leases slice is read-only once the batch is shared: Release
// does not change it, so sinks may release one batch concurrently.
//
// The lifetime is checked in a build with the poison tag (PoisonReleased):
// there a producer's free overwrites the memory with a poison pattern and
// keeps it from reuse instead of pooling it, so a lease released for the
// last time stays released, and Batch.CheckLive panics on a batch one of
// whose leases is. A release that comes early, before some holder is done
// reading, then fails that holder's test loudly (a panic, or poisoned
// values in what it wrote) where a normal build would hand live memory to
// the next scrape or request and go on. CI runs the stages' tests so.
type Lease struct {
	refs atomic.Int32
	free func()
}

// Reset readies l to be lent out again: one reference (the producer's,
// which it hands over with the batch) and free, called by the last Release.
// The producer calls it before each use; the previous use must be over.
func (l *Lease) Reset(free func()) {
	l.free = free
	l.refs.Store(1)
}

// Retain adds n references. The caller must hold one: retaining a lease
// released for the last time would revive memory its producer has
// already taken back, so it panics.
func (l *Lease) Retain(n int) {
	if n > 0 && l.refs.Add(int32(n)) == int32(n) {
		panic(ErrUseAfterRelease)
	}
}

// Released reports whether l's last reference was released. It is only
// meaningful while the producer cannot reuse l: in a poison build, or in a
// test that knows it does not.
func (l *Lease) Released() bool { return l.refs.Load() <= 0 }

// ErrUseAfterRelease is what a poison build panics with when a batch's
// memory is touched after the last release of its lease (and what Retain
// panics with in any build when it revives a released lease).
var ErrUseAfterRelease = errors.New("pipeline: batch memory used after its lease was released (a holder released early)")

// Release drops one reference; the last one calls free. Releasing more
// often than the references held is a bug that would hand live memory back
// to its producer, so it panics rather than go on.
func (l *Lease) Release() {
	switch n := l.refs.Add(-1); {
	case n == 0:
		l.free()
	case n < 0:
		panic("pipeline: Lease released more often than retained")
	}
}

// Retain adds n references to each of the batch's leases.
func (b *Batch) Retain(n int) {
	for _, l := range b.Leases {
		l.Retain(n)
	}
}

// CheckLive panics with ErrUseAfterRelease, in a poison build, when one
// of b's leases was released for the last time: b's memory is then poison,
// and whatever read it (or is about to) read garbage. Stages that read a
// batch call it before and after. Without the poison tag it does nothing,
// and costs nothing.
func (b *Batch) CheckLive() {
	if !PoisonReleased {
		return
	}
	for _, l := range b.Leases {
		if l.Released() {
			panic(ErrUseAfterRelease)
		}
	}
}

// Release drops the holder's reference on each of the batch's leases. It
// does not change b, so the holders of a shared batch may call it
// concurrently (each once).
func (b *Batch) Release() {
	for _, l := range b.Leases {
		l.Release()
	}
}

// Poison patterns: what a poison build writes over released memory, chosen
// to be seen (a byte no valid UTF-8 starts with, a time five centuries
// ahead, a NaN whose payload spells them) rather than to look like data.
const (
	PoisonByte        byte   = 0xDB
	PoisonUint64      uint64 = 0xDBDBDBDBDBDBDBDB
	PoisonFloat64Bits uint64 = 0x7FF8DBDBDBDBDBDB
)

// PoisonBytes overwrites b with PoisonByte.
func PoisonBytes(b []byte) {
	for i := range b {
		b[i] = PoisonByte
	}
}
