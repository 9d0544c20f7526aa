package batch

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/otelstep/otelstep/pipeline"
)

// Options configures the Processor (the collector's batch processor).
type Options struct {
	// SendBatchSize: a batch is sent once it has this many items (data
	// points, spans, log records); default 8192.
	SendBatchSize int
	// SendBatchMaxSize: if > 0 no batch sent has more items than this
	// (SendBatchSize is lowered to it if larger). 0 means no maximum.
	SendBatchMaxSize int
	// Timeout: a batch is sent this long after its first item arrived,
	// whatever its size; default 200ms.
	Timeout time.Duration
	// AckLinger: a batch holding items whose senders wait for them to be
	// written (pipeline.Ack) is sent this long after the first such item
	// arrived, if Timeout or its size has not sent it before; default
	// DefaultAckLinger.
	AckLinger time.Duration
}

// DefaultAckLinger is Options.AckLinger unset. A sender waits this
// much at most for the requests beside it to share its batch: long
// enough that requests a few milliseconds apart (a job's few hundred a
// second) share a line and a backend request, short beside the 200 ms of
// Timeout, which every answer would otherwise wait for.
const DefaultAckLinger = 5 * time.Millisecond

// Processor accumulates batches per signal and sends them to next once they
// reach SendBatchSize items or Timeout after their first item.
//
// Splitting (SendBatchMaxSize > 0) happens at resource granularity, then
// scope, then metric, and within a metric at data-point granularity (spans
// and log records for the other signals), so every batch sent has at most
// SendBatchMaxSize items. The pieces of a split resource/scope/metric share
// the original Resource, scope and metric metadata pointers read-only.
//
// Backpressure invariant: Consume returns nil iff it took the batch (it will
// be delivered, in order, unless Shutdown's ctx runs out); an error (ErrFull
// when ctx is done before next accepts, ErrStopped after Shutdown) means the
// batch was not taken, so the sender may retry without duplicates. Consume
// calls next synchronously with the caller's ctx: when the pending batch is
// already full because an earlier flush was refused, Consume first tries to
// flush it and returns the error without taking the new batch if that fails.
// When the new batch fills the pending batch, it is taken and the flush is
// attempted; if next refuses, the data stays pending (for the timer or the
// next Consume), so at most one batch beyond SendBatchSize (per signal) is
// ever held. A batch's acks (pipeline.Ack) go with its items: a merged
// batch holds every request's, and both halves of a split hold them all
// (a request is written once both are). A batch holding acks is sent
// AckLinger after the first of them came, not at Timeout: its senders
// wait for their answers. The timer flush calls next with a context that only ends at
// Shutdown and keeps retrying, so it never drops. All sends to next are
// serialised, which keeps the order of each signal.
type Processor struct {
	o    Options
	next pipeline.Consumer

	lock    chan struct{} // 1-slot mutex that callers can abandon on ctx
	pend    [3]pendingBatch
	stopped bool // under lock

	kick      chan struct{}
	stopCh    chan struct{}
	done      chan struct{}
	runCtx    context.Context
	runCancel context.CancelFunc
	startOnce sync.Once
	stopOnce  sync.Once
	// idleWakes counts the timer's firings that found nothing pending
	// (tests).
	idleWakes atomic.Int64
}

type pendingBatch struct {
	b     *pipeline.Batch // its Items are the pending count
	since time.Time
	// acked is when the first item whose sender waits arrived (zero:
	// none waits).
	acked time.Time
}

// New returns a Processor sending to next.
func New(o Options, next pipeline.Consumer) *Processor {
	if o.SendBatchSize <= 0 {
		o.SendBatchSize = 8192
	}
	if o.SendBatchMaxSize < 0 {
		o.SendBatchMaxSize = 0
	}
	if o.SendBatchMaxSize > 0 && o.SendBatchSize > o.SendBatchMaxSize {
		o.SendBatchSize = o.SendBatchMaxSize
	}
	if o.Timeout <= 0 {
		o.Timeout = 200 * time.Millisecond
	}
	if o.AckLinger <= 0 {
		o.AckLinger = DefaultAckLinger
	}
	b := &Processor{
		o:      o,
		next:   next,
		lock:   make(chan struct{}, 1),
		kick:   make(chan struct{}, 1),
		stopCh: make(chan struct{}),
		done:   make(chan struct{}),
	}
	b.runCtx, b.runCancel = context.WithCancel(context.Background())
	return b
}

func (b *Processor) acquire(ctx context.Context) error {
	select {
	case b.lock <- struct{}{}:
		return nil
	default:
	}
	select {
	case b.lock <- struct{}{}:
		return nil
	case <-ctx.Done():
		return pipeline.ErrFull
	}
}

func (b *Processor) unlock() { <-b.lock }

// Consume adds in to the pending batch of its signal; see the type's doc for
// the backpressure invariant.
func (b *Processor) Consume(ctx context.Context, in *pipeline.Batch) error {
	if in == nil || in.Signal > pipeline.Logs {
		return nil
	}
	in.CheckLive() // what it is about to read was not given back (pipeline.Lease)
	if in.Len() == 0 {
		in.Release()
		in.ResolveAcks(nil) // nothing to write
		return nil
	}
	if err := b.acquire(ctx); err != nil {
		return err
	}
	defer b.unlock()
	if b.stopped {
		return pipeline.ErrStopped
	}
	p := &b.pend[in.Signal]
	if p.b != nil && p.b.Items >= b.o.SendBatchSize {
		// An earlier flush was refused: push back before taking more.
		if err := b.flushLocked(ctx, in.Signal, false); err != nil {
			return err
		}
	}
	if p.b == nil {
		p.b = &pipeline.Batch{Signal: in.Signal, Scraped: in.Scraped}
		p.since = time.Now()
		select {
		case b.kick <- struct{}{}:
		default:
		}
	}
	if len(in.Acks) > 0 && p.acked.IsZero() {
		p.acked = time.Now()
		select {
		case b.kick <- struct{}{}: // the timer is set for AckLinger
		default:
		}
	}
	appendBatch(p.b, in)
	if p.b.Items >= b.o.SendBatchSize {
		// in is taken whatever happens: on failure it stays pending.
		_ = b.flushLocked(ctx, in.Signal, false)
	}
	return nil
}

func appendBatch(dst, src *pipeline.Batch) {
	dst.Metrics = append(dst.Metrics, src.Metrics...)
	dst.Traces = append(dst.Traces, src.Traces...)
	dst.Logs = append(dst.Logs, src.Logs...)
	dst.Items += src.Items
	dst.Scraped = dst.Scraped && src.Scraped
	dst.Leases = append(dst.Leases, src.Leases...) // src's references move with it
	dst.Acks = append(dst.Acks, src.Acks...)       // as do its acks'
}

// flushLocked sends the pending batch of sig: everything if all, else while
// it has at least SendBatchSize items. Chunks are at most SendBatchMaxSize
// items. On error the unsent part stays pending.
func (b *Processor) flushLocked(ctx context.Context, sig pipeline.Signal, all bool) error {
	p := &b.pend[sig]
	for p.b != nil && (all || p.b.Items >= b.o.SendBatchSize) {
		head, rest := p.b, (*pipeline.Batch)(nil)
		if max := b.o.SendBatchMaxSize; max > 0 && p.b.Items > max {
			head, rest = Split(p.b, max)
			head.Leases, head.Acks = p.b.Leases, p.b.Acks
			if rest != nil {
				// Either half may hold any lease's memory, and any
				// request's items: each holds a reference on all
				// of them.
				p.b.Retain(1)
				p.b.RetainAcks(1)
				head.Leases = append([]*pipeline.Lease(nil), p.b.Leases...)
				head.Acks = append([]*pipeline.Ack(nil), p.b.Acks...)
				rest.Leases, rest.Acks = p.b.Leases, p.b.Acks
			}
		}
		if err := b.next.Consume(ctx, head); err != nil {
			if rest != nil {
				head.Release() // p.b, unsplit, stays pending with its own
				head.ResolveAcks(nil)
			}
			return err
		}
		if rest == nil || rest.Len() == 0 {
			*p = pendingBatch{}
			// The timer is set for the batch just sent: have it set
			// again now, while the process is awake, rather than wake
			// it at the sent batch's timeout to find nothing to do.
			select {
			case b.kick <- struct{}{}:
			default:
			}
			return nil
		}
		p.b = rest
		p.since = time.Now()
	}
	return nil
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// Start starts the timer goroutine.
func (b *Processor) Start(context.Context) error {
	b.startOnce.Do(func() {
		go b.run()
	})
	return nil
}

func (b *Processor) run() {
	defer close(b.done)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	retry := min(b.o.Timeout, 50*time.Millisecond)
	var wait time.Duration = time.Hour
	for {
		t.Reset(wait)
		fired := false
		select {
		case <-t.C:
			fired = true
		case <-b.kick:
		case <-b.stopCh:
			return
		}
		if b.acquire(b.runCtx) != nil {
			return
		}
		if fired && !slices.ContainsFunc(b.pend[:], func(p pendingBatch) bool { return p.b != nil }) {
			b.idleWakes.Add(1)
		}
		now := time.Now()
		wait = time.Hour
		for sig := range b.pend {
			p := &b.pend[sig]
			if p.b == nil {
				continue
			}
			due := p.since.Add(b.o.Timeout)
			if !p.acked.IsZero() {
				due = minTime(due, p.acked.Add(b.o.AckLinger))
			}
			if !now.Before(due) {
				if err := b.flushLocked(b.runCtx, pipeline.Signal(sig), true); err != nil {
					if b.runCtx.Err() != nil {
						b.unlock()
						return
					}
					wait = min(wait, retry)
					continue
				}
			} else {
				wait = min(wait, due.Sub(now))
			}
		}
		b.unlock()
	}
}

// Flush sends what is pending of every signal now, rather than at its
// timeout (pipeline.Flusher): its producer has nothing more for now. A
// send that next refuses stays pending, for the timer, as any flush's.
func (b *Processor) Flush(ctx context.Context) {
	if b.acquire(ctx) != nil {
		return
	}
	defer b.unlock()
	if b.stopped {
		return
	}
	for sig := range b.pend {
		if b.pend[sig].b != nil {
			_ = b.flushLocked(ctx, pipeline.Signal(sig), true)
		}
	}
}

// Shutdown stops the timer and flushes every pending batch to next within
// ctx. Consume returns ErrStopped afterwards.
func (b *Processor) Shutdown(ctx context.Context) error {
	var err error
	b.stopOnce.Do(func() {
		close(b.stopCh)
		b.runCancel() // unblocks a timer flush waiting in next
		b.startOnce.Do(func() { close(b.done) })
		select {
		case <-b.done:
		case <-ctx.Done():
			err = ctx.Err()
			return
		}
		if err = b.acquire(ctx); err != nil {
			return
		}
		defer b.unlock()
		b.stopped = true
		for sig := range b.pend {
			if e := b.flushLocked(ctx, pipeline.Signal(sig), true); e != nil && err == nil {
				err = e
			}
		}
	})
	return err
}
