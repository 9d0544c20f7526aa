package faults

import (
	"context"
	"github.com/otelstep/otelstep/internal/fakebackend"
	"net/http"
	"sync"
	"testing"
	"time"
)

// Mode is how the backend behaves.
type Mode int

const (
	// Up answers 200 and records what it received.
	Up Mode = iota
	// Down listens on nothing: a connection is refused.
	Down
	// Hung accepts a request, reads it and never answers (until the mode
	// changes or the test ends).
	Hung
	// Slow answers 200 after Backend.Delay.
	Slow
	// Failing answers Backend.Status (a 5xx) to every request.
	Failing
)

func (m Mode) String() string {
	return [...]string{"up", "down", "hung", "slow", "failing"}[m]
}

// Backend is an OTLP/HTTP backend on a fixed loopback port whose behaviour
// the test sets (internal/fakebackend). It records, decoded, every request
// it answered 200.
type Backend struct {
	Addr string // host:port, the same whatever the mode

	fb     *fakebackend.Backend
	mu     sync.Mutex
	mode   Mode
	delay  time.Duration
	status int
	reqs   map[Mode]int // requests seen in each mode
	// before is the mode before Down: a request the backend was reading
	// as it went down is answered as it would have been.
	before Mode
	// answering, when set, is called for each request between recording
	// its items and answering 200 (the harness's own test holds it).
	answering func()
}

// NewBackend starts a backend in mode Up; it is closed at the test's end.
func NewBackend(t testing.TB) *Backend {
	t.Helper()
	p, err := ports.Take(1)
	if err != nil {
		t.Fatal(err)
	}
	fb, err := fakebackend.Start(p[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fb.Close)
	b := &Backend{Addr: fb.Addr(), fb: fb, reqs: map[Mode]int{}}
	fb.Answer(b.answer)
	fb.Recorded(func(r *fakebackend.Request) {
		b.mu.Lock()
		answering := b.answering
		b.mu.Unlock()
		if answering != nil && r.Status == http.StatusOK {
			answering()
		}
	})
	return b
}

// URL is the backend's base URL.
func (b *Backend) URL() string { return b.fb.URL() }

// Set changes the backend's mode. Down stops it as a backend stops
// (fakebackend.Backend.Down): the listener closes at once, the requests it
// is handling are answered before their connections close. Leaving Hung
// lets its held requests go (unanswered: their connections are closed,
// nothing recorded).
func (b *Backend) Set(m Mode) {
	b.mu.Lock()
	if b.mode == Hung && m != Hung {
		b.fb.ReleaseHung()
	}
	if m == Down && b.mode != Down {
		b.before = b.mode
	}
	b.mode = m
	b.mu.Unlock()
	if m == Down {
		b.fb.Down() // without b.mu: the requests being answered take it
	} else if err := b.fb.Up(); err != nil {
		// The port was this backend's a moment ago; binding it again can
		// fail only if another process took it meanwhile.
		panic(err)
	}
}

// SetSlow makes the backend answer 200 after d.
func (b *Backend) SetSlow(d time.Duration) {
	b.Set(Slow)
	b.mu.Lock()
	b.delay = d
	b.mu.Unlock()
}

// SetFailing makes the backend answer status to every request.
func (b *Backend) SetFailing(status int) {
	b.Set(Failing)
	b.mu.Lock()
	b.status = status
	b.mu.Unlock()
}

// Requests is the number of requests received in mode m.
func (b *Backend) Requests(m Mode) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reqs[m]
}

// Got is what the backend answered 200.
func (b *Backend) Got() Items {
	got := newItems()
	for _, r := range b.fb.Accepted() {
		got.addTraces(r.Traces.GetResourceSpans())
		got.addLogs(r.Logs.GetResourceLogs())
		got.addMetrics(r.Metrics.GetResourceMetrics())
	}
	return got
}

// answer is the mode's answer to a request the backend decoded.
func (b *Backend) answer(*fakebackend.Request) fakebackend.Reply {
	b.mu.Lock()
	defer b.mu.Unlock()
	mode := b.mode
	if mode == Down {
		// Read as it went down: answered as before, but for a hung
		// backend, which goes down without answering.
		mode = b.before
		if mode == Hung {
			return fakebackend.Reply{Abort: true}
		}
	}
	b.reqs[mode]++
	switch mode {
	case Hung:
		return fakebackend.Reply{Hang: true}
	case Failing:
		return fakebackend.Reply{Status: b.status, ContentType: "text/plain", Body: []byte("backend failing on purpose\n")}
	case Slow:
		return fakebackend.Reply{Delay: b.delay}
	}
	return fakebackend.Reply{}
}

// waitFor waits until cond holds, failing the test after
// proctest.Patience with what describe says.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not within %v", what, patience)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
