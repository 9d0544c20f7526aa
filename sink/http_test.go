package sink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/otelstep/otelstep/internal/fakebackend"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/otelstep/otelstep/pipeline"
	"google.golang.org/protobuf/encoding/protowire"
)

// backend is the sink tests' OTLP/HTTP backend (internal/fakebackend): it
// wants POSTs of protobuf metrics to /v1/metrics with the tests' headers,
// compressed by gzip or the Content-Encoding in encoding when set ("none":
// plain), and fails the test on any other or on a body it cannot decode.
type backend struct {
	*fakebackend.Backend
	t        *testing.T
	encoding string
	hits     atomic.Int32
	// handle, if set, may answer request n itself (returns true).
	handle func(n int32, w http.ResponseWriter) bool
}

func newBackend(t *testing.T, handle func(n int32, w http.ResponseWriter) bool) *backend {
	be := &backend{Backend: fakebackend.New(t), t: t, handle: handle}
	be.Answer(be.answer)
	t.Cleanup(func() {
		for _, r := range be.Requests() {
			if r.DecodeErr != nil {
				t.Errorf("backend: request %d: %v", r.N, r.DecodeErr)
			}
		}
	})
	return be
}

func (be *backend) answer(r *fakebackend.Request) fakebackend.Reply {
	n := be.hits.Add(1)
	if be.handle != nil {
		rec := httptest.NewRecorder()
		if be.handle(n, rec) {
			return fakebackend.Reply{Status: rec.Code, RetryAfter: rec.Header().Get("Retry-After"), ContentType: rec.Header().Get("Content-Type"), Body: rec.Body.Bytes()}
		}
	}
	if r.Method != http.MethodPost || r.Path != "/v1/metrics" {
		be.t.Errorf("%s %s", r.Method, r.Path)
	}
	enc := be.encoding
	switch enc {
	case "":
		enc = "gzip"
	case "none":
		enc = ""
	}
	for k, want := range map[string]string{
		"Content-Type": "application/x-protobuf", "Content-Encoding": enc,
		"User-Agent": "otelstep", "X-Api-Key": "k3y-v4lue",
	} {
		if got := r.Header.Get(k); got != want {
			be.t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	return fakebackend.Reply{}
}

// got returns the ids of the batches the backend answered 200, in order.
func (be *backend) got() []string {
	var ids []string
	for _, r := range be.Accepted() {
		ids = append(ids, batchID(&pipeline.Batch{Metrics: r.Metrics.GetResourceMetrics()}))
	}
	return ids
}

func fastRetry() RetryOptions {
	return RetryOptions{Enabled: true, InitialInterval: 10 * time.Millisecond, MaxInterval: 50 * time.Millisecond, MaxElapsedTime: 5 * time.Second}
}

func newTestHTTP(t *testing.T, endpoint string, o HTTPOptions) (*HTTP, *syncBuf) {
	t.Helper()
	lg, logs := testLogger()
	o.Endpoint = endpoint
	o.Logger = lg
	if o.Headers == nil {
		o.Headers = map[string]string{"X-Api-Key": "k3y-v4lue"}
	}
	if o.Retry == (RetryOptions{}) {
		o.Retry = fastRetry()
	}
	h, err := NewHTTP(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if strings.Contains(logs.String(), "k3y-v4lue") {
			t.Errorf("header value logged: %s", logs.String())
		}
	})
	return h, logs
}

func TestHTTPSendsGzipProtobuf(t *testing.T) {
	be := newBackend(t, nil)
	h, _ := newTestHTTP(t, be.URL()+"/", HTTPOptions{Name: "otlp_http/test"})
	_ = h.Start(context.Background())
	for i := range 5 {
		if err := h.Enqueue(context.Background(), metricsBatch(fmt.Sprint(i), 10)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, patience, func() bool { return h.Stats().SentBatches == 5 }, "5 sent")
	if err := h.Shutdown(ctxT(patience)); err != nil {
		t.Fatal(err)
	}
	st := h.Stats()
	if st.SentItems != 50 || st.Failed != 0 || st.Dropped != 0 || st.Retries != 0 {
		t.Fatalf("stats %+v", st)
	}
	if n := len(be.got()); n != 5 {
		t.Fatalf("backend got %d", n)
	}
}

func TestHTTPRetryAfter503ThenSuccess(t *testing.T) {
	be := newBackend(t, func(n int32, w http.ResponseWriter) bool {
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	h, _ := newTestHTTP(t, be.URL(), HTTPOptions{})
	_ = h.Start(context.Background())
	start := time.Now()
	_ = h.Enqueue(context.Background(), metricsBatch("r", 1))
	waitFor(t, patience, func() bool { return h.Stats().SentBatches == 1 }, "sent after retry")
	if el := time.Since(start); el < 900*time.Millisecond {
		t.Fatalf("Retry-After not honoured: succeeded after %v", el)
	}
	_ = h.Shutdown(ctxT(patience))
	if st := h.Stats(); st.Retries != 1 || st.Failed != 0 || be.hits.Load() != 2 {
		t.Fatalf("stats %+v hits %d", st, be.hits.Load())
	}
}

func TestHTTP400NotRetried(t *testing.T) {
	status := protowire.AppendTag(nil, 1, protowire.VarintType)
	status = protowire.AppendVarint(status, 3)
	status = protowire.AppendTag(status, 2, protowire.BytesType)
	status = protowire.AppendString(status, "bad metric name")
	be := newBackend(t, func(n int32, w http.ResponseWriter) bool {
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(status)
		return true
	})
	u := strings.Replace(be.URL(), "http://", "http://user:pa55word@", 1)
	h, logs := newTestHTTP(t, u, HTTPOptions{})
	_ = h.Start(context.Background())
	_ = h.Enqueue(context.Background(), metricsBatch("bad", 1))
	waitFor(t, patience, func() bool { return h.Stats().Failed == 1 }, "failed")
	_ = h.Shutdown(ctxT(patience)) // its goroutines are done: no retry can come later
	if be.hits.Load() != 1 || h.Stats().Retries != 0 {
		t.Fatalf("400 retried: hits %d", be.hits.Load())
	}
	l := logs.String()
	if !strings.Contains(l, "400") || !strings.Contains(l, "bad metric name") {
		t.Fatalf("log lacks status/message: %s", l)
	}
	if strings.Contains(l, "pa55word") || strings.Contains(l, "user:") {
		t.Fatalf("userinfo logged: %s", l)
	}
}

func TestHTTPQueueFullDropsOldest(t *testing.T) {
	be := newBackend(t, nil)
	h, logs := newTestHTTP(t, be.URL(), HTTPOptions{QueueSize: 2})
	// Not started: the queue fills.
	for i := range 5 {
		// Blocked, it would wait until ctx ends: nothing drains the queue
		// before Start.
		if err := h.Enqueue(ctxT(patience), metricsBatch(fmt.Sprint(i), 1)); err != nil {
			t.Fatal(err)
		}
	}
	if d := h.Stats().Dropped; d != 3 {
		t.Fatalf("dropped %d, want 3", d)
	}
	_ = h.Start(context.Background())
	if err := h.Shutdown(ctxT(patience)); err != nil {
		t.Fatal(err)
	}
	got := be.got()
	if len(got) != 2 || !(got[0] == "3" && got[1] == "4" || got[0] == "4" && got[1] == "3") {
		t.Fatalf("backend got %v, want the newest [3 4]", got)
	}
	if !strings.Contains(logs.String(), "queue full, oldest batches left") {
		t.Fatalf("drop not logged: %s", logs.String())
	}
}

func TestHTTPShutdownDeliversQueued(t *testing.T) {
	be := newBackend(t, nil)
	h, _ := newTestHTTP(t, be.URL(), HTTPOptions{QueueSize: 100})
	_ = h.Start(context.Background())
	for i := range 50 {
		_ = h.Enqueue(context.Background(), metricsBatch(fmt.Sprint(i), 3))
	}
	if err := h.Shutdown(ctxT(patience)); err != nil {
		t.Fatal(err)
	}
	if st := h.Stats(); st.SentBatches != 50 || st.SentItems != 150 || st.Dropped != 0 {
		t.Fatalf("stats %+v", st)
	}
	if n := len(be.got()); n != 50 {
		t.Fatalf("backend got %d", n)
	}
}

func TestDeadBackendNeverBlocksFanout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	// Retried for longer than the test: a batch leaves the queue only by
	// being dropped for a newer one, or at stop.
	const queue = 4
	h, _ := newTestHTTP(t, dead, HTTPOptions{QueueSize: queue, Timeout: 200 * time.Millisecond,
		Retry: RetryOptions{Enabled: true, InitialInterval: 10 * time.Millisecond, MaxInterval: 50 * time.Millisecond, MaxElapsedTime: patience}})
	path := filepath.Join(t.TempDir(), "m.jsonl")
	f, err := NewFile(FileOptions{Path: path, Signal: pipeline.Metrics, QueueSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	fo := NewFanout(h, f)
	_ = h.Start(context.Background())
	_ = f.Start(context.Background())
	const N = 300
	for i := range N {
		if err := fo.Consume(ctxT(patience), metricsBatch(fmt.Sprint(i), 2)); err != nil {
			t.Fatalf("Consume %d: %v", i, err)
		}
	}
	// Not waiting for the backend: all but the queue's and the workers'
	// batches were dropped for newer ones, none failed yet.
	if st := h.Stats(); st.Dropped < N-queue-httpWorkers || st.Failed != 0 || st.SentBatches != 0 {
		t.Fatalf("after %d batches to a dead backend: stats %+v, want at least %d dropped", N, st, N-queue-httpWorkers)
	}
	// Shutdown ends at its ctx, not when the retries would.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := h.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("HTTP Shutdown with its ctx done: %v, want it ended by the ctx", err)
	}
	if err := f.Shutdown(ctxT(patience)); err != nil {
		t.Fatal(err)
	}
	if n := len(readLines(t, path)); n != N {
		t.Fatalf("JSONL got %d lines, want %d", n, N)
	}
	st := h.Stats()
	if st.SentBatches != 0 || st.Dropped+st.Failed != N {
		t.Fatalf("stats %+v: every batch should be dropped or failed", st)
	}
	_ = os.Remove(path)
}

func TestParseRetryAfter(t *testing.T) {
	if d := parseRetryAfter("3"); d != 3*time.Second {
		t.Fatal(d)
	}
	if d := parseRetryAfter(time.Now().Add(10 * time.Second).UTC().Format(http.TimeFormat)); d < 8*time.Second || d > 11*time.Second {
		t.Fatal(d)
	}
	if d := parseRetryAfter("soon"); d != 0 {
		t.Fatal(d)
	}
}

// TestHTTPShutdownDuringEnqueues: a batch Enqueue took (returned nil) while
// Shutdown began is still sent, though it is encoded outside the queue's
// lock; none is sent twice; and one encoder a signal at most ever exists.
func TestHTTPShutdownDuringEnqueues(t *testing.T) {
	be := newBackend(t, nil)
	h, _ := newTestHTTP(t, be.URL(), HTTPOptions{QueueSize: 10000})
	_ = h.Start(context.Background())
	// Hold the metrics' open request: the Enqueues below pass the
	// stopping check and wait to encode.
	h.open[pipeline.Metrics].mu.Lock()
	const n = 6
	errs := make(chan error, n)
	for i := range n {
		go func() { errs <- h.Enqueue(context.Background(), metricsBatch(fmt.Sprint(i), 100)) }()
	}
	for h.enqueuingNow() < n {
		time.Sleep(time.Millisecond)
	}
	shut := make(chan error, 1)
	go func() { shut <- h.Shutdown(ctxT(patience)) }()
	for begun := false; !begun; time.Sleep(time.Millisecond) { // Shutdown has begun
		h.mu.Lock()
		begun = h.stopping
		h.mu.Unlock()
	}
	if err := h.Enqueue(context.Background(), metricsBatch("late", 1)); !errors.Is(err, pipeline.ErrStopped) {
		t.Fatalf("Enqueue after Shutdown began: %v, want ErrStopped", err)
	}
	h.open[pipeline.Metrics].mu.Unlock()
	for range n {
		if err := <-errs; err != nil {
			t.Fatalf("Enqueue: %v", err)
		}
	}
	if err := <-shut; err != nil {
		t.Fatal(err)
	}
	got := be.got()
	sort.Strings(got)
	want := []string{"0", "1", "2", "3", "4", "5"}
	if !slices.Equal(got, want) {
		t.Fatalf("the backend got %v, want %v", got, want)
	}
	if st := h.Stats(); st.Dropped != 0 || st.SentBatches != n {
		t.Fatalf("stats %+v", st)
	}
	if k := h.encoders.Len(); k > 1 {
		t.Fatalf("%d encoders, want at most 1", k)
	}
}

// TestPostDoneWithBodyOnReturn: Post returns only once the transport is
// done with the request body, even when the backend answers before it has
// read it all, so the exporter may refill the body's buffer at once. (The
// race detector sees the transport still reading it otherwise.)
func TestPostDoneWithBodyOnReturn(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Answer at once, before reading the body, and keep the
		// connection a while without reading it either.
		w.Header().Set("Content-Length", "9")
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		_, _ = w.Write([]byte("too large"))
		w.(http.Flusher).Flush()
		time.Sleep(300 * time.Millisecond)
	}))
	defer srv.Close()
	body := bytes.Repeat([]byte("x"), 8<<20)
	for range 3 {
		res := Post(context.Background(), srv.Client(), Export{Signal: pipeline.Metrics, URL: srv.URL, Body: body})
		if res.Status != http.StatusRequestEntityTooLarge {
			t.Fatalf("status %d (%v), want 413", res.Status, res.Err)
		}
		for i := range body { // what the exporter's next encode does
			body[i] = 'y'
		}
	}
}

// The queue is bounded in bytes as well as in batches: past QueueBytes the
// oldest requests are dropped (and counted) until the new one fits, and a
// request bigger than the whole bound is queued alone.
func TestHTTPQueueBytesDropsOldest(t *testing.T) {
	var one bytes.Buffer
	if err := EncodeRequest(metricsBatch("0", 50), DefaultCompression, &one); err != nil {
		t.Fatal(err)
	}
	size := int64(one.Cap()) // what a queued request holds
	be := newBackend(t, nil)
	h, _ := newTestHTTP(t, be.URL(), HTTPOptions{QueueSize: 100, QueueBytes: 2*size + size/2})
	for i := range 5 {
		if err := h.Enqueue(context.Background(), metricsBatch(fmt.Sprint(i), 50)); err != nil {
			t.Fatal(err)
		}
	}
	if d, q := h.Stats().Dropped, h.queued(); d != 3 || q != 2 {
		t.Fatalf("5 requests of %d bytes into %d: dropped %d, queued %d; want 3 and 2", size, 2*size+size/2, d, q)
	}
	if err := h.Enqueue(context.Background(), metricsBatch("big", 200)); err != nil {
		t.Fatal(err)
	}
	if d, q := h.Stats().Dropped, h.queued(); d != 5 || q != 1 {
		t.Fatalf("a request bigger than the bound: dropped %d, queued %d; want 5 and 1", d, q)
	}
	_ = h.Start(context.Background())
	if err := h.Shutdown(ctxT(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := be.got(); len(got) != 1 || got[0] != "big" {
		t.Fatalf("backend got %v, want [big]", got)
	}
}
