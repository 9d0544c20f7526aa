package pipeline

import (
	"sync"
	"sync/atomic"
)

// Acks: a sender waiting until its request's items are written.
//
// An OTLP receiver answers a request OK only once the request's items are
// in the JSONL files of the pipelines it feeds (written with write(2), not
// fsynced: the page cache outlives the process), so that a kill -9 loses
// nothing a sender was told was taken. An Ack is that wait: the receiver
// makes one per request, puts it in the request's batch (Batch.Acks) and
// waits on Wait; the stages pass it on with the items, and the JSONL file
// sinks resolve it once the line holding them is written out, or fail it
// when they cannot write it.
//
// "Written" is the request's own signal's files: a traces request is
// acknowledged once its spans are in every traces JSONL file of every
// pipeline it feeds, not once the span metrics a connector makes of them
// are in the metrics file (those are made later, at the connector's flush,
// and are derived: the spans are the record). A pipeline with no JSONL
// file resolves its references when its last stage has taken the batch
// (sink.Fanout).
//
// The rules, alike to the leases' (lease.go), for every holder of a batch
// with acks:
//   - Whoever owns the batch (the Consume contract: the callee once Consume
//     returns nil, the caller otherwise) holds one reference on each of its
//     Acks. Passing the batch on passes the reference with it; merging
//     batches (the batch processor) merges their Acks.
//   - A holder that gives the items to k holders (the fan-out to k JSONL
//     files, a split batch's two halves, a receiver's copy for each of its
//     pipelines) calls RetainAcks(k-1) first.
//   - A holder resolves its reference once the items are written
//     (ResolveAcks(nil)), or when it cannot write them (ResolveAcks(err)):
//     a failure is told to the sender at once, whatever the other holders
//     do, as "retry later".
//   - A holder that drops its reference without writing (an empty batch,
//     the extra reference of a split that was not sent) resolves it with
//     nil: it carried no items of its own.
//
// A sender whose request was refused (Consume returned an error) does not
// wait: the references downstream may then never all resolve, and the Ack
// goes to the garbage collector.
type Ack struct {
	refs atomic.Int32
	once sync.Once
	done chan struct{}
	err  atomic.Pointer[error]
}

// NewAck returns an Ack with one reference, the request's.
func NewAck() *Ack {
	a := &Ack{done: make(chan struct{})}
	a.refs.Store(1)
	return a
}

// Retain adds n references.
func (a *Ack) Retain(n int) {
	if n > 0 {
		a.refs.Add(int32(n))
	}
}

// Resolve drops one reference: err nil when its part of the items is
// written (or it had none), else why it cannot be. The first failure, or
// the last reference, ends the wait.
func (a *Ack) Resolve(err error) {
	if err != nil {
		a.err.CompareAndSwap(nil, &err)
		a.once.Do(func() { close(a.done) })
	}
	if n := a.refs.Add(-1); n == 0 {
		a.once.Do(func() { close(a.done) })
	} else if n < 0 {
		panic("pipeline: Ack resolved more often than retained")
	}
}

// Wait returns a channel closed once every reference is resolved or one
// failed; Err then says which.
func (a *Ack) Wait() <-chan struct{} { return a.done }

// Err is the first failure, nil when none (yet).
func (a *Ack) Err() error {
	if p := a.err.Load(); p != nil {
		return *p
	}
	return nil
}

// RetainAcks adds n references to each of the batch's acks.
func (b *Batch) RetainAcks(n int) {
	for _, a := range b.Acks {
		a.Retain(n)
	}
}

// ResolveAcks resolves the holder's reference on each of the batch's
// acks with err. Like Release it does not change b.
func (b *Batch) ResolveAcks(err error) {
	for _, a := range b.Acks {
		a.Resolve(err)
	}
}
