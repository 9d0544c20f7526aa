// Package sink is the end of every pipeline, where batches leave otelstep:
// the buffered fan-out (Fanout) and the two destinations it feeds, the
// JSONL file sink (File), which never drops, and the OTLP/HTTP exporter
// sink (HTTP), which never blocks. The batch processor before it is
// package batch.
//
// Ownership: once Fanout.Consume returns nil the batch is shared read-only by
// every sink; no sink mutates it.
//
// Acknowledgements (pipeline.Ack): the batch processor carries a batch's acks with
// its items, merged and split with them; the Fanout gives each File sink a
// reference, and a File sink resolves it once the batch's line is written
// to the file, or fails it when the write fails. The HTTP sink and the
// connectors hold none: a request is acknowledged once it is in its own
// signal's JSONL files. A Fanout with no File sink resolves at once.
//
// Shutdown order: stop the receivers, then the batch processors (they
// flush into the Fanout), then the sinks.
//
// A Fanout may track a File and an HTTP sink it feeds (Fanout.Track): a
// DeliveryRecord is then told, for each batch, where its line lies in the
// file and whether the HTTP sink delivered it, so that what was not
// delivered can be sent again from the file (package backfill).
//
// Every batch the HTTP sink takes ends in exactly one Fate (fate.go):
// delivered, or left in the JSONL because its queue was full, the backend
// was down, the backend refused it, or its time at stop ran out. The fates
// are counted in one place, so HTTPStats.Fates sums to what it took.
package sink

import (
	"context"
	"errors"

	"github.com/otelstep/otelstep/pipeline"
)

// Sink is one destination with its own goroutine(s).
type Sink interface {
	// Name is the component id, e.g. "file/metrics", "otlp_http/managed".
	Name() string
	// Enqueue hands a batch to the sink's bounded buffer. Sinks that must
	// not drop block until there is room or ctx is done (returning
	// pipeline.ErrFull); sinks that may drop never block.
	Enqueue(ctx context.Context, b *pipeline.Batch) error
	Start(ctx context.Context) error
	// Shutdown flushes everything buffered (within ctx) and stops.
	Shutdown(ctx context.Context) error
}

// reserver is implemented by the blocking (no-drop) sinks of this package. It
// lets Fanout reserve queue room in every blocking sink before giving the
// batch to any sink, so a returned ErrFull means nobody took the batch.
type reserver interface {
	// reserve blocks until one queue slot is reserved, ctx is done
	// (pipeline.ErrFull) or the sink stops (pipeline.ErrStopped).
	reserve(ctx context.Context) error
	// release gives back an unused reservation.
	release()
	// enqueueReserved enqueues b into a reserved slot; it never blocks.
	enqueueReserved(b *pipeline.Batch) error
}

// Fanout is a pipeline.Consumer that hands each batch to every sink. The
// batch is shared read-only between the sinks.
type Fanout struct {
	blocking    []reserver
	nonBlocking []Sink
	blockingS   []Sink
	tracks      []track
	// files is how many of the blocking sinks are JSONL files: each holds
	// a reference on a batch's acks (pipeline.Ack).
	files int
}

// NewFanout returns a Fanout over sinks.
func NewFanout(sinks ...Sink) *Fanout {
	f := &Fanout{}
	for _, s := range sinks {
		if _, ok := s.(*File); ok {
			f.files++
		}
		if r, ok := s.(reserver); ok {
			f.blocking = append(f.blocking, r)
			f.blockingS = append(f.blockingS, s)
		} else {
			f.nonBlocking = append(f.nonBlocking, s)
		}
	}
	return f
}

// Consume gives b to every sink. It first reserves room in every blocking
// sink (waiting at most until ctx is done); if that fails it returns
// pipeline.ErrFull (or ErrStopped) and no sink has the batch, so the sender
// can retry without duplicates. Then it enqueues into every sink; the
// non-blocking sinks never block and drop on their own when full.
func (f *Fanout) Consume(ctx context.Context, b *pipeline.Batch) error {
	for i, r := range f.blocking {
		if err := r.reserve(ctx); err != nil {
			for _, rr := range f.blocking[:i] {
				rr.release()
			}
			return err
		}
	}
	items := b.Items // for a sink that stopped in between
	// Every sink holds its own reference on the batch's leases; the
	// caller's is the first sink's.
	if n := len(f.blocking) + len(f.nonBlocking); n > 1 {
		b.Retain(n - 1)
	}
	// Likewise each JSONL file on its acks: they are resolved once every
	// file has written the batch's line. Without a file the batch is as
	// written as it will be once every sink has it.
	if f.files > 1 {
		b.RetainAcks(f.files - 1)
	}
	acks := b.Acks // b is the sinks' once enqueued
	var firstErr error
	unused := 0     // references of sinks that did not take the batch
	unusedAcks := 0 // the acks' references of files that did not
	ts := f.tickets()
	for _, r := range f.blocking {
		// Cannot block; fails only if the sink stopped in between.
		var err error
		if fs, ok := r.(*File); ok && ts != nil {
			err = fs.enqueueTracked(b, f.fileTickets(fs, ts))
		} else {
			err = r.enqueueReserved(b)
		}
		if err != nil {
			unused++
			if _, ok := r.(*File); ok {
				unusedAcks++
			}
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	for _, s := range f.nonBlocking {
		// Errors (stopped) of a dropping sink do not fail the batch: the
		// no-drop copies have it.
		var err error
		h, _ := s.(*HTTP)
		var t *ticket
		if h != nil && ts != nil {
			t = f.httpTicket(h, ts)
		}
		if t != nil {
			err = h.enqueueTracked(ctx, b, t)
		} else {
			err = s.Enqueue(ctx, b)
		}
		if err != nil {
			unused++
			if h != nil {
				h.settle(b.Signal, items, LeftAtStop, t) // the sink stopped: never sent
			}
		}
	}
	if firstErr != nil {
		// The caller still owns the batch (and keeps one reference).
		unused--
		if unusedAcks > 0 {
			unusedAcks--
		}
	}
	for range unused {
		b.Release()
	}
	for range unusedAcks {
		for _, a := range acks {
			a.Resolve(firstErr)
		}
	}
	if f.files == 0 && firstErr == nil {
		for _, a := range acks {
			a.Resolve(nil)
		}
	}
	return firstErr
}

// Sinks returns every sink of the fan-out (blocking ones first).
func (f *Fanout) Sinks() []Sink {
	return append(append([]Sink(nil), f.blockingS...), f.nonBlocking...)
}

func ctxFull(ctx context.Context) error {
	if errors.Is(context.Cause(ctx), pipeline.ErrStopped) {
		return pipeline.ErrStopped
	}
	return pipeline.ErrFull
}
