package scraper

import (
	"bytes"
	"context"
	"sync"
	"time"
)

// A job's targets are scraped in the same instant (see phase), so without a
// bound every one of them would hold its page at once: read, then waiting
// for the CPU to convert it. With one P (otelstep's default) the pages are
// converted one after another anyway, so holding them all buys nothing but
// memory, and a job's pages held at once are a large share of the heap
// (docs/decisions.md).
//
// So a scrape takes a slot of the Manager's pageGate when the response
// header is in and the body is about to be read, and gives it back once the
// page is converted; only then does the next scrape read its body. Waiting
// on the header, the slow part of a scrape, stays concurrent. The target's
// response waits meanwhile in the socket's buffer, or the target waits on
// its write.
//
// A slot is waited for at most a quarter of what is left of the scrape's
// timeout: a target that sends its body slowly, or pages that take long to
// convert, must not make the job's other scrapes fail. Past it the scrape
// reads its page without a slot, and memory goes back to one page per
// scrape. (A quarter, not a few milliseconds: a target's first scrape, all
// of whose series are new, converts many times slower than the next ones,
// and with a short wait every target of the job would hold its page
// through the first scrapes, which is when the heap peaks.)

// pageWait is the longest a scrape without a deadline waits for a slot.
const pageWait = 250 * time.Millisecond

// pageGate is a counting semaphore of pages being read or converted.
type pageGate struct {
	slots chan struct{}
	wait  time.Duration // the longest enter waits without a deadline
}

// newPageGate returns a gate of n slots (at least one) that waits at most
// wait for one.
func newPageGate(n int, wait time.Duration) pageGate {
	return pageGate{slots: make(chan struct{}, max(n, 1)), wait: wait}
}

// enter takes a slot, waiting at most a quarter of the time left before
// ctx's deadline (g.wait without one) or until ctx is done, and reports
// whether it did.
func (g pageGate) enter(ctx context.Context) bool {
	select {
	case g.slots <- struct{}{}:
		return true
	default:
	}
	wait := g.wait
	if d, ok := ctx.Deadline(); ok {
		wait = time.Until(d) / 4
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case g.slots <- struct{}{}:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// leave gives back a slot taken by enter.
func (g pageGate) leave() { <-g.slots }

// pageBuf is one scrape's page: its buffer from the Manager's free list, taken
// with a slot of the gate when the body comes (buffer), both given back by
// done.
type pageBuf struct {
	l    *loop
	buf  *bytes.Buffer // nil until the body comes
	slot bool          // holds a slot of the Manager's gate
	// charged is what the buffer is charged to the Manager's budget
	// (budget.go); ok says the page was converted, so that its size is
	// the next buffer's (a failed page's, an endless one's, is not).
	charged int64
	ok      bool
}

// buffer returns the page's empty buffer, with room for size bytes (-1:
// unknown, then for the target's last page and an eighth), taking a slot
// of the gate first, and charging the buffer to the Manager's budget.
func (pg *pageBuf) buffer(ctx context.Context, size int) (*bytes.Buffer, error) {
	if pg.buf == nil {
		if !pg.slot {
			pg.slot = pg.l.m.pages.enter(ctx)
		}
		if size < 0 {
			size = pg.l.size + pg.l.size/8
		}
		if err := pg.charge(int64(size + size/pageSlack)); err != nil {
			return nil, err
		}
		pg.buf = pg.l.m.bodies.get(size)
		return pg.buf, pg.charge(int64(pg.buf.Cap()))
	}
	pg.buf.Reset()
	if size > 0 {
		if err := pg.charge(int64(size)); err != nil {
			return nil, err
		}
		growExact(pg.buf, size)
	}
	return pg.buf, pg.charge(int64(pg.buf.Cap()))
}

// charge makes what the page is charged n bytes (no less than it is),
// or fails with the budget's error.
func (pg *pageBuf) charge(n int64) error {
	if n <= pg.charged {
		return nil
	}
	b, held := pg.l.m.budget, pg.charged+pg.l.conv.held
	if !b.take(n-pg.charged, held) {
		return b.exhausted("the page", n-pg.charged, held)
	}
	pg.charged = n
	return nil
}

// bytes is the page read (nil before any body).
func (pg *pageBuf) bytes() []byte {
	if pg.buf == nil {
		return nil
	}
	return pg.buf.Bytes()
}

// done gives back the buffer and the slot; it may be called again.
func (pg *pageBuf) done() {
	if pg.buf != nil {
		if pg.ok {
			pg.l.size = pg.buf.Len()
		}
		pg.l.m.bodies.put(pg.buf)
		pg.buf = nil
	}
	pg.l.m.budget.give(pg.charged)
	pg.charged = 0
	if pg.slot {
		pg.l.m.pages.leave()
		pg.slot = false
	}
}

// growExact makes room for n more bytes in b. bytes.Buffer.Grow doubles the
// capacity when it must regrow (so that appends are amortised), which for a
// page buffer about to be filled by one page of known size leaves up to
// twice the page allocated for as long as the buffer lives.
func growExact(b *bytes.Buffer, n int) {
	if b.Cap()-b.Len() >= n {
		return
	}
	nb := make([]byte, b.Len(), b.Len()+n)
	copy(nb, b.Bytes())
	*b = *bytes.NewBuffer(nb)
}

// freeBodies bounds the page buffers kept between scrapes by a bodyList
// whose keep is not set.
const freeBodies = 8

// bodyList is the free list of page buffers.
type bodyList struct {
	mu   sync.Mutex
	free []*bytes.Buffer
	// keep bounds the buffers kept (0: freeBodies). A Manager keeps its
	// gate's slots' worth: the buffers of scrapes that went on without a
	// slot go back to the GC, or a slow first scrape (every series new)
	// would leave one buffer a target in the list for good.
	keep int
}

// bigBody is the size past which a page buffer is not kept: memory one
// huge page took goes back to the GC (and, under the runtime's memory
// limit, to the system) rather than staying pinned for the rest of the
// job, at the cost of a fresh buffer for each scrape of a target whose
// every page is that big.
const bigBody = 16 << 20

// get returns an empty buffer of at least size bytes: the smallest free one
// that fits, else the largest grown to fit (the targets of a job serve
// pages of different sizes, and a buffer handed to a bigger page than it
// fits is regrown at once).
func (l *bodyList) get(size int) *bytes.Buffer {
	l.mu.Lock()
	fit, largest := -1, -1
	for i, b := range l.free {
		if b.Cap() >= size && (fit < 0 || b.Cap() < l.free[fit].Cap()) {
			fit = i
		}
		if largest < 0 || b.Cap() > l.free[largest].Cap() {
			largest = i
		}
	}
	best := fit
	if best < 0 {
		best = largest
	}
	var b *bytes.Buffer
	if best >= 0 {
		b = l.free[best]
		last := len(l.free) - 1
		l.free[best], l.free[last] = l.free[last], nil
		l.free = l.free[:last]
	}
	l.mu.Unlock()
	if b == nil {
		b = new(bytes.Buffer)
	}
	if b.Cap() < size {
		growExact(b, size+size/pageSlack)
	}
	return b
}

// pageSlack: a buffer too small for a page is grown with a pageSlack-th of
// the page to spare. A live target's page grows a few bytes at a time (a
// counter gains a digit): grown to the exact size, a big page's buffer
// would be reallocated, and the page copied, at nearly every scrape.
const pageSlack = 16

// put returns b to the list, unless it is over bigBody (that memory goes
// back to the GC instead of staying pinned). With l.keep kept, the
// smallest gives way to a bigger one.
func (l *bodyList) put(b *bytes.Buffer) {
	if b.Cap() > bigBody {
		return
	}
	b.Reset()
	l.mu.Lock()
	defer l.mu.Unlock()
	keep := l.keep
	if keep <= 0 {
		keep = freeBodies
	}
	if len(l.free) < keep {
		l.free = append(l.free, b)
		return
	}
	small := 0
	for i, f := range l.free {
		if f.Cap() < l.free[small].Cap() {
			small = i
		}
	}
	if b.Cap() > l.free[small].Cap() {
		l.free[small] = b
	}
}
