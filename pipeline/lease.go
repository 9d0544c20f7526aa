package pipeline

import "sync/atomic"

// Leases: memory a producer lends to the batches it sends and wants back.
//
// A scrape's data points, metrics and their slices are carved from chunks
// (scraper's arenas). They are garbage once every sink has encoded the
// batch, and without leases they go to the garbage collector, whose marking
// was a seventh of the scrape path's CPU. A Lease lets the producer have
// them back instead: it counts the holders of a batch's memory, and the
// last one to let go calls the producer's free function.
//
// The rules, for every holder of a batch with leases:
//   - Whoever owns the batch (the Consume contract: the callee once Consume
//     returns nil, the caller otherwise) holds one reference on each of its
//     Leases. Passing the batch on passes the reference with it.
//   - A holder that gives the same memory to k holders (the fan-out to its
//     sinks, a split batch's two halves) calls Retain(k-1) first.
//   - A holder calls Release once it will never touch the batch's memory
//     again: after a sink has encoded it, or when it drops it.
//   - Never releasing is always safe: the memory then goes to the garbage
//     collector, as it would without a lease. Releasing early is not, so a
//     path that is unsure keeps its reference.
//
// A Batch's Leases slice is read-only once the batch is shared: Release
// does not change it, so sinks may release one batch concurrently.
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

// Retain adds n references.
func (l *Lease) Retain(n int) {
	if n > 0 {
		l.refs.Add(int32(n))
	}
}

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

// Release drops the holder's reference on each of the batch's leases. It
// does not change b, so the holders of a shared batch may call it
// concurrently (each once).
func (b *Batch) Release() {
	for _, l := range b.Leases {
		l.Release()
	}
}
