package faults

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
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
// the test sets. It records, decoded, every request it answered 200.
type Backend struct {
	Addr string // host:port, the same whatever the mode

	mu      sync.Mutex
	mode    Mode
	delay   time.Duration
	status  int
	srv     *http.Server
	release chan struct{} // closed to let hung requests go
	got     Items         // what it answered 200
	reqs    map[Mode]int  // requests seen in each mode
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
	b := &Backend{Addr: p[0], got: newItems(), reqs: map[Mode]int{}, release: make(chan struct{})}
	if err := b.listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Set(Down) })
	return b
}

// URL is the backend's base URL.
func (b *Backend) URL() string { return "http://" + b.Addr }

func (b *Backend) listen() error {
	ln, err := net.Listen("tcp", b.Addr)
	if err != nil {
		return fmt.Errorf("backend on %s: %w", b.Addr, err)
	}
	b.srv = &http.Server{Handler: b}
	go func(s *http.Server) { _ = s.Serve(ln) }(b.srv)
	return nil
}

// Set changes the backend's mode. Down stops it as a backend stops: the
// listener closes at once (a new connection is refused), the requests it
// is handling are answered before their connections close (their items
// are recorded, and the exporter is told), then every connection closes.
// Cutting them instead would record items whose 200 never reached the
// exporter, which then rightly sends them again: the backend took them
// without answering. Leaving Hung lets its held requests go (unanswered:
// their connections are closed, nothing recorded).
func (b *Backend) Set(m Mode) {
	b.mu.Lock()
	if b.mode == Hung && m != Hung {
		close(b.release)
		b.release = make(chan struct{})
	}
	var old *http.Server
	if m == Down && b.srv != nil {
		old, b.srv = b.srv, nil
	}
	if m != Down && b.srv == nil {
		// The port was this backend's a moment ago; binding it again can
		// fail only if another process took it meanwhile.
		if err := b.listen(); err != nil {
			b.mu.Unlock()
			panic(err)
		}
	}
	if m == Down && b.mode != Down {
		b.before = b.mode
	}
	b.mode = m
	b.mu.Unlock()
	if old != nil {
		// Without b.mu: the requests being answered take it.
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		if err := old.Shutdown(ctx); err != nil {
			_ = old.Close()
		}
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

// Got is a copy of what the backend answered 200.
func (b *Backend) Got() Items {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.got.clone()
}

func (b *Backend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	b.mu.Lock()
	mode, delay, status, release := b.mode, b.delay, b.status, b.release
	if mode == Down {
		// Read as it went down: answered as before, but for a hung
		// backend, which goes down without answering.
		mode = b.before
		if mode == Hung {
			b.mu.Unlock()
			panic(http.ErrAbortHandler)
		}
	}
	b.reqs[mode]++
	b.mu.Unlock()
	switch mode {
	case Hung:
		select {
		case <-release:
		case <-r.Context().Done():
		}
		// Never answered: the connection goes without a response.
		panic(http.ErrAbortHandler)
	case Failing:
		http.Error(w, "backend failing on purpose", status)
		return
	case Slow:
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	got := newItems()
	if err := got.addRequest(r.URL.Path, body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	b.mu.Lock()
	b.got.merge(got)
	answering := b.answering
	b.mu.Unlock()
	if answering != nil {
		answering()
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

func readBody(r *http.Request) ([]byte, error) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return nil, err
		}
		body = zr
	}
	return io.ReadAll(body)
}

// addRequest decodes an OTLP/HTTP protobuf request for path and counts
// its items.
func (it Items) addRequest(path string, body []byte) error {
	switch path {
	case "/v1/traces":
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			return err
		}
		it.addTraces(req.ResourceSpans)
	case "/v1/logs":
		var req collogspb.ExportLogsServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			return err
		}
		it.addLogs(req.ResourceLogs)
	case "/v1/metrics":
		var req colmetricspb.ExportMetricsServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			return err
		}
		it.addMetrics(req.ResourceMetrics)
	default:
		return errors.New("unknown path " + strconv.Quote(path))
	}
	return nil
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
