package otlpin

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/otelstep/otelstep/pipeline"
)

// Admission: the bytes of requests in flight, bounded.
//
// Connections are bounded (LimitListener) and each request's size is
// (MaxRequestBytes, GRPCMaxRecvBytes), but not how many large requests are
// held at once, and a few dozen large ones together hold many times the
// process's memory bound (decoded, a request is larger still). So a
// Receiver has one budget of bytes shared by its gRPC and HTTP servers. A
// request takes its (decompressed) size from it before its body is read
// whole, and gives it back when the last stage downstream lets go of its
// batch (the grant is one of the batch's leases, pipeline.Lease): the
// budget bounds the requests' data wherever it waits, in the batch
// processor or a sink's queue, not only while the request is answered. A
// request that does not fit is not kept (its body is read into nothing):
// it is answered "retry later"
// (HTTP 503 with Retry-After, gRPC UNAVAILABLE with RetryInfo), as when
// the pipeline is full. A request bigger than the whole budget is taken
// when nothing else is in flight, so it is slowed, never refused for good.

// DefaultAdmissionBytes is Options.AdmissionBytes when unset.
const DefaultAdmissionBytes = 32 << 20

// errOverBudget is the refusal of a request the budget has no room for;
// it is a pipeline.ErrFull, so it is answered as one.
var errOverBudget = fmt.Errorf("%w: requests in flight hold the receiver's byte budget", pipeline.ErrFull)

// admission is a Receiver's budget of request bytes in flight.
type admission struct {
	limit int64
	mu    sync.Mutex
	used  int64
	// refused counts the requests refused (tests, logs).
	refused int64
}

// grant is bytes taken from the budget; its lease gives them back.
type grant struct {
	a     *admission
	n     int64
	lease pipeline.Lease
}

// take takes n bytes, or returns nil when they do not fit.
func (a *admission) take(n int64) *grant {
	g := &grant{a: a}
	if !g.grow(n) {
		return nil
	}
	g.lease.Reset(g.free)
	return g
}

// grow takes n more bytes for g; false (and nothing taken) when they do
// not fit.
func (g *grant) grow(n int64) bool {
	a := g.a
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.used+n > a.limit && a.used > 0 {
		a.refused++
		return false
	}
	a.used += n
	g.n += n
	return true
}

// free gives g's bytes back: its lease's last release calls it.
func (g *grant) free() {
	a := g.a
	a.mu.Lock()
	a.used -= g.n
	a.mu.Unlock()
	g.n = 0
}

// full reports a budget with nothing left: a new request would not fit.
func (a *admission) full() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.used >= a.limit
}

// inUse is the bytes taken (tests).
func (a *admission) inUse() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.used
}

// budgetReader takes from g what it reads from r, a body of unknown
// size, in steps of at least admissionStep, and fails with errOverBudget
// when the budget has no room for the next step. It reads at most limit
// bytes (0: no limit) and takes no more than that and a step: a caller's
// buffer grown to twice what was read (bytes.Buffer.ReadFrom) would
// otherwise ask for as much again, and a gzip bomb, a body that is only
// too large (413), be told to retry later instead.
type budgetReader struct {
	r       io.Reader
	g       *grant
	limit   int64
	read    int64
	granted int64
}

const admissionStep = 256 << 10

func (b *budgetReader) Read(p []byte) (int, error) {
	if b.limit > 0 {
		if b.read >= b.limit {
			return 0, io.EOF
		}
		if left := b.limit - b.read; int64(len(p)) > left {
			p = p[:left]
		}
	}
	if b.read+int64(len(p)) > b.granted {
		step := max(int64(len(p)), admissionStep)
		if !b.g.grow(step) {
			return 0, errOverBudget
		}
		b.granted += step
	}
	n, err := b.r.Read(p)
	b.read += int64(n)
	return n, err
}

// settle gives back what was taken but not read: the grant is then the
// body's size.
func (b *budgetReader) settle() {
	a := b.g.a
	a.mu.Lock()
	a.used -= b.granted - b.read
	a.mu.Unlock()
	b.g.n -= b.granted - b.read
	b.granted = b.read
}

// isOverBudget reports a read that stopped for the budget.
func isOverBudget(err error) bool { return errors.Is(err, errOverBudget) }
