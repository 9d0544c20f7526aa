package sink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/otelstep/otelstep/internal/pool"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/otelstep/otelstep/pipeline"
	"github.com/otelstep/otelstep/redact"
	"github.com/otelstep/otelstep/telemetry"
)

// RetryOptions is the exporter's retry_on_failure. The collector defaults are
// Enabled true, InitialInterval 5s, MaxInterval 30s, MaxElapsedTime 300s;
// DefaultRetryOptions returns them. Zero durations in an enabled
// RetryOptions take those defaults.
type RetryOptions struct {
	Enabled                                      bool
	InitialInterval, MaxInterval, MaxElapsedTime time.Duration
}

// DefaultRetryOptions returns the collector's retry defaults.
func DefaultRetryOptions() RetryOptions {
	return RetryOptions{Enabled: true, InitialInterval: 5 * time.Second, MaxInterval: 30 * time.Second, MaxElapsedTime: 300 * time.Second}
}

// HTTPOptions configures the OTLP/HTTP exporter sink.
type HTTPOptions struct {
	Name string // component id, e.g. "otlp_http/managed"
	// Endpoint is the base URL; batches are posted to Endpoint+"/v1/"+signal
	// unless the signal's override below is set (used as is).
	Endpoint                                      string
	MetricsEndpoint, TracesEndpoint, LogsEndpoint string
	// Headers are added to every request. Their values are secrets and are
	// never logged.
	Headers map[string]string
	// Secrets are hidden (as package redact hides them) in what a backend
	// answers before it is logged, with the header values.
	Secrets []string
	// Compression is "gzip" (default), "zstd", "snappy" or "none", at
	// CompressionLevel (0: the type's default), as the collector's
	// exporter takes them (Compression).
	Compression      string
	CompressionLevel int
	// Timeout is per request; default 30s.
	Timeout time.Duration
	Retry   RetryOptions
	// QueueSize is the number of batches buffered; default 1000.
	// QueueBytes bounds the memory of their encoded requests (what the
	// queue holds: their buffers, grown as they were encoded); default
	// DefaultQueueBytes. Past either, the oldest batches
	// are dropped (counted in Stats and the telemetry) until the new one
	// fits; a request bigger than QueueBytes is queued alone.
	QueueSize  int
	QueueBytes int64
	// RequestItems and RequestWait gather a signal's batches into one
	// request, as the collector's batch processor sends them to its
	// exporter: the batches taken within RequestWait of a request's first
	// go into it, up to RequestItems items (a batch that would take it past
	// that begins the next; one bigger than that goes alone). RequestWait
	// 0 sends each batch as its own request. RequestItems defaults to
	// DefaultRequestItems.
	RequestItems int
	RequestWait  time.Duration
	Logger       *slog.Logger
	Client       *http.Client
	// Telemetry records what the sink sends, fails, drops and retries,
	// each request's duration and the queue's length; nil records nothing.
	Telemetry *telemetry.Sink
	// SharedAttrs finds the producers' attribute sets whose protobuf
	// encodings the sink stores and reuses (otlpwire.ProtoEncoder.Shared);
	// nil encodes every point afresh.
	SharedAttrs *pipeline.SharedAttrs
	// TokenEnv names the environment variable the ingest token in Headers
	// came from (a 401 or 403 is logged with it); "" when unknown.
	TokenEnv string
	// ReportEvery is how often a run of failed exports is summed up in
	// the log while it lasts; default DefaultReportEvery.
	ReportEvery time.Duration
}

// DefaultReportEvery is HTTPOptions.ReportEvery when unset.
const DefaultReportEvery = time.Minute

// DefaultRequestItems and DefaultRequestWait are the collector's batch
// processor's defaults (send_batch_size, timeout): what the service gives
// HTTPOptions.RequestItems and RequestWait unless a pipeline feeding the
// exporter bounds its batches lower (send_batch_max_size).
const (
	DefaultRequestItems = 8192
	DefaultRequestWait  = 200 * time.Millisecond
)

// HTTPStats counts what the HTTP sink did. Fates counts every batch it
// took by its fate (the sum is what it took); the other fields are sums of
// them. Failed and Dropped count batches.
type HTTPStats struct {
	Fates       [numFates]FateCount
	SentBatches uint64 // Fates[Delivered]
	SentItems   uint64
	Failed      uint64 // refused, or retries exhausted: Fates[LeftRefused]+Fates[LeftBackendDown]
	Dropped     uint64 // oldest dropped when the queue was full, or left at shutdown
	Retries     uint64
	// BackfilledItems are the items the backfill sent (Backfilled): lines
	// of the JSONL the sink had not delivered, of this run or an earlier
	// one.
	BackfilledItems uint64
	// UnsentBatches and UnsentItems are what Shutdown's time ran out on:
	// queued, in flight or waiting to be retried (counted in Dropped too):
	// Fates[LeftAtStop].
	UnsentBatches, UnsentItems uint64
}

// Accepted is every batch and item the sink took: the sum of the fates.
func (st HTTPStats) Accepted() FateCount {
	var c FateCount
	for _, f := range st.Fates {
		c.Batches += f.Batches
		c.Items += f.Items
	}
	return c
}

const httpWorkers = 2

// DefaultQueueBytes is HTTPOptions.QueueBytes when unset: with a backend
// down or hung, what waits for it stays within a job's memory whatever the
// batches' sizes (1000 requests of a few MB each would be gigabytes).
// What the queue drops is in the JSONL, and the backfill sends it from
// there once the backend answers again, so a small queue loses nothing.
const DefaultQueueBytes = 16 << 20

// HTTP is the OTLP/HTTP exporter sink (protobuf, compressed as configured:
// gzip at the collector's default level unless told). One queue is shared
// by every signal; two workers send. Enqueue never waits on the backend:
// when the queue is full the oldest request is dropped and counted.
//
// A batch is encoded when it is enqueued, in the caller's goroutine, and the
// queue holds request bodies, not batches: the batch is let go at once
// (its lease returns a scrape's points to the scraper's pools), and what
// waits for a slow or dead backend is its gzipped protobuf, far smaller
// than the batch. Encoded in the workers, a round of scrapes would wait in
// the queue as OTLP structs, leases held, while the workers posted the
// requests before it, and a backend outage would hold up to QueueSize
// batches.
//
// A signal's batches are encoded into its open request, one compressed
// stream, until it is full or RequestWait has passed since its first
// (openRequest); it is then queued. The batches an OTLP receiver's
// acknowledgements make (a few milliseconds of requests each: the batch
// processor's AckLinger) so reach the backend as the collector's do, up to
// send_batch_size items a request, and the compressor is reset and a
// request made per RequestItems items rather than per batch. What a body
// holds is still counted and settled per batch: each batch is a line of
// the JSONL, and the body's fate is each of its batches' fate.
type HTTP struct {
	o       HTTPOptions
	log     *slog.Logger
	client  *http.Client
	urls    [3]string
	safeURL [3]string // userinfo redacted, for logs
	red     *redact.Redactor
	comp    Compression
	// encoders are the request encoders (their gzip state is about 1 MB
	// each), held by an open request: at most one a signal. A free list,
	// not a sync.Pool: a garbage collection would drop them, and every few
	// seconds an encode would make a new gzip writer.
	encoders pool.FreeList[requestEncoder]
	bodies   pool.FreeList[body]
	open     [3]openRequest // by signal

	mu           sync.Mutex
	ring         []*body
	head, n      int
	bytes        int64 // the queued bodies hold (their buffers' capacity), at most o.QueueBytes but for one
	queueItems   int   // the queued bodies' items
	queueBatches int   // and batches
	stopping     bool
	started      bool
	avail        chan struct{}
	stopCh       chan struct{}
	wg           sync.WaitGroup
	// enqueuing counts the Enqueue calls past the stopping check: Shutdown
	// waits for them before the workers drain the queue. enqueuingN is the
	// same count, for tests.
	enqueuing  sync.WaitGroup
	enqueuingN atomic.Int32

	runCtx    context.Context
	runCancel context.CancelFunc

	lastDropLog atomic.Int64 // unix nanos
	// fates counts the batches and items by fate and signal (settle).
	fates   [numFates][3]struct{ batches, items atomic.Uint64 }
	retries atomic.Uint64
	// backfilled counts the items the backfill sent (Backfilled).
	backfilled atomic.Uint64
	tel        *telemetry.Sink
	unobserve  func() // stops the queue's observation

	out       outage // the run of failures (fate.go)
	backlogMu sync.Mutex
	backlogs  []func() Backlog

	okState // Answered (delivery.go)
}

// NewHTTP validates o and returns the sink. Call Start to begin sending.
func NewHTTP(o HTTPOptions) (*HTTP, error) {
	if o.QueueSize <= 0 {
		o.QueueSize = 1000
	}
	if o.QueueBytes <= 0 {
		o.QueueBytes = DefaultQueueBytes
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.Retry.Enabled {
		d := DefaultRetryOptions()
		if o.Retry.InitialInterval <= 0 {
			o.Retry.InitialInterval = d.InitialInterval
		}
		if o.Retry.MaxInterval <= 0 {
			o.Retry.MaxInterval = d.MaxInterval
		}
		if o.Retry.MaxElapsedTime <= 0 {
			o.Retry.MaxElapsedTime = d.MaxElapsedTime
		}
	}
	if o.Name == "" {
		o.Name = "otlp_http"
	}
	if o.ReportEvery <= 0 {
		o.ReportEvery = DefaultReportEvery
	}
	if o.RequestItems <= 0 {
		o.RequestItems = DefaultRequestItems
	}
	h := &HTTP{o: o, client: o.Client, red: redact.New(append(slices.Clone(o.Secrets), slices.Collect(maps.Values(o.Headers))...)...)}
	h.comp = Compression{Type: strings.ToLower(o.Compression), Level: o.CompressionLevel}
	if h.comp.Type == "" {
		h.comp.Type = DefaultCompression.Type
	}
	if err := h.comp.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", o.Name, err)
	}
	overrides := [3]string{o.MetricsEndpoint, o.TracesEndpoint, o.LogsEndpoint}
	for _, sig := range []pipeline.Signal{pipeline.Metrics, pipeline.Traces, pipeline.Logs} {
		raw := overrides[sig]
		if raw == "" {
			if o.Endpoint == "" {
				return nil, fmt.Errorf("%s: no endpoint for %s", o.Name, sig)
			}
			raw = strings.TrimRight(o.Endpoint, "/") + "/v1/" + sig.String()
		}
		u, err := url.Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: invalid %s endpoint: %w", o.Name, sig, redactErr(err))
		}
		if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
			return nil, fmt.Errorf("%s: %s endpoint %s: want http(s)://host", o.Name, sig, redactURL(u))
		}
		h.urls[sig] = u.String()
		h.safeURL[sig] = redactURL(u)
	}
	if h.client == nil {
		h.client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	lg := o.Logger
	if lg == nil {
		lg = slog.Default()
	}
	h.log = lg.With("component", o.Name)
	h.ring = make([]*body, o.QueueSize)
	h.bodies.Keep = keptBodies
	h.avail = make(chan struct{}, 1)
	h.stopCh = make(chan struct{})
	h.out.began = make(chan struct{}, 1)
	h.runCtx, h.runCancel = context.WithCancel(context.Background())
	h.tel = o.Telemetry
	stopQ := h.tel.ObserveQueue(h.queued, len(h.ring))
	stopB := h.tel.ObserveBacklog(func() (int, int64) { b := h.backlog().Total(); return b.Batches, b.Bytes })
	h.unobserve = func() { stopQ(); stopB() }
	return h, nil
}

// queued is how many request bodies wait in the queue, or are open.
func (h *HTTP) queued() int {
	h.mu.Lock()
	n := h.n
	h.mu.Unlock()
	for i := range h.open {
		o := &h.open[i]
		o.mu.Lock()
		if o.bd != nil {
			n++
		}
		o.mu.Unlock()
	}
	return n
}

// redactErr strips URL userinfo from a *url.Error.
func redactErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			return &url.Error{Op: ue.Op, URL: redactURL(u), Err: ue.Err}
		}
		return &url.Error{Op: ue.Op, URL: "(invalid url)", Err: ue.Err}
	}
	return err
}

// redactURL renders u without any userinfo.
func redactURL(u *url.URL) string {
	c := *u
	c.User = nil
	return c.String()
}

// Name returns the component id.
func (h *HTTP) Name() string { return h.o.Name }

// Stats returns the counters.
func (h *HTTP) Stats() HTTPStats {
	st := HTTPStats{Retries: h.retries.Load(), BackfilledItems: h.backfilled.Load()}
	for _, f := range Fates() {
		st.Fates[f] = h.fateTotal(f)
	}
	st.SentBatches, st.SentItems = st.Fates[Delivered].Batches, st.Fates[Delivered].Items
	st.Failed = st.Fates[LeftRefused].Batches + st.Fates[LeftBackendDown].Batches
	st.Dropped = st.Fates[LeftQueueFull].Batches + st.Fates[LeftAtStop].Batches
	st.UnsentBatches, st.UnsentItems = st.Fates[LeftAtStop].Batches, st.Fates[LeftAtStop].Items
	return st
}

// fateTotal is the batches and items of fate f, over the signals.
func (h *HTTP) fateTotal(f Fate) FateCount {
	var c FateCount
	for i := range h.fates[f] {
		c.Batches += h.fates[f][i].batches.Load()
		c.Items += h.fates[f][i].items.Load()
	}
	return c
}

// settle decides the fate of one batch of items items of sig the sink took
// (its ticket t, if any): the one place every batch ends, where it is
// counted, in Stats and the telemetry, and its DeliveryRecord told.
func (h *HTTP) settle(sig pipeline.Signal, items int, f Fate, t *ticket) {
	items = max(items, 0)
	if int(sig) < len(h.fates[f]) {
		h.fates[f][sig].batches.Add(1)
		h.fates[f][sig].items.Add(uint64(items))
	}
	switch f {
	case Delivered:
		h.tel.Sent(sig, items)
	case LeftQueueFull:
		h.tel.Dropped(1)
		h.tel.EnqueueFailed(sig, items)
	case LeftBackendDown, LeftRefused:
		h.tel.Failed(sig, items)
	case LeftAtStop:
		h.tel.Dropped(1)
		h.tel.Unsent(sig, items)
	}
	if t != nil {
		t.settle(f, items)
	}
}

// finish settles each batch of bd with fate f and gives bd back.
func (h *HTTP) finish(bd *body, f Fate) {
	for _, p := range bd.batches {
		h.settle(bd.sig, p.items, f, p.t)
	}
	h.putBody(bd)
}

// Start starts the workers.
func (h *HTTP) Start(context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.started || h.stopping {
		return nil
	}
	h.started = true
	names := make([]string, 0, len(h.o.Headers))
	for k := range h.o.Headers {
		names = append(names, k)
	}
	sort.Strings(names)
	h.log.Info("otlp/http exporter started", "metrics_url", h.safeURL[pipeline.Metrics],
		"header_names", names, "compression", h.comp.String())
	for range httpWorkers {
		h.wg.Add(1)
		go h.worker()
	}
	h.wg.Add(1)
	go h.reporter()
	return nil
}

// Enqueue encodes b into its signal's open request and lets go of it; a
// request it fills is queued. It waits only while another batch of its
// signal is being encoded, never on the backend. When the queue is full
// the oldest body is dropped.
// After Shutdown it returns pipeline.ErrStopped.
func (h *HTTP) Enqueue(ctx context.Context, b *pipeline.Batch) error {
	return h.enqueueTracked(ctx, b, nil)
}

// enqueueTracked is Enqueue of a batch whose ticket (if not nil) is told
// whether it was delivered.
func (h *HTTP) enqueueTracked(_ context.Context, b *pipeline.Batch, t *ticket) error {
	if !h.enter() {
		return pipeline.ErrStopped
	}
	defer h.leave()
	items := b.Items // b is let go of once encoded
	if b.Signal > pipeline.Logs {
		b.Release()
		h.log.Error("otlp/http exporter: unknown signal, batch not sent", "signal", int(b.Signal))
		h.settle(b.Signal, items, LeftRefused, t)
		return nil
	}
	h.add(b, items, t)
	return nil
}

// enter counts an Enqueue (or a timer's end of a request) past the
// stopping check, which Shutdown waits for; false once stopping.
func (h *HTTP) enter() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopping {
		return false
	}
	h.enqueuing.Add(1)
	h.enqueuingN.Add(1)
	return true
}

func (h *HTTP) leave() { h.enqueuingN.Add(-1); h.enqueuing.Done() }

// enqueuingNow is how many Enqueue calls are encoding or queueing.
func (h *HTTP) enqueuingNow() int { return int(h.enqueuingN.Load()) }

// openRequest is a signal's request body still taking batches: begun
// with the first batch after the last was queued, it is queued once it
// holds RequestItems items, once the next batch would take it past that
// or is compressed otherwise (requestEncoder.takes), or RequestWait after it was
// begun (its timer). Its encoder holds the compressed stream open between
// batches.
type openRequest struct {
	mu    sync.Mutex
	bd    *body
	re    *requestEncoder
	gen   uint64 // bodies begun: which one the timer is for
	timer *time.Timer
}

// add encodes b, of items items (its ticket t), into its signal's open
// request, beginning one if none is open, and lets go of b; a request it
// fills is queued.
func (h *HTTP) add(b *pipeline.Batch, items int, t *ticket) {
	sig := b.Signal
	o := &h.open[sig]
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.bd != nil && (o.bd.items+items > h.o.RequestItems || !o.re.takes(b)) {
		h.endLocked(o)
	}
	if o.bd == nil && !h.beginLocked(o, sig, b.Scraped) {
		b.Release()
		h.settle(sig, items, LeftRefused, t) // logged
		return
	}
	err := o.re.add(b)
	b.Release() // once encoded, nothing points into b
	o.bd.batches = append(o.bd.batches, part{items, t})
	o.bd.items += items
	if err != nil {
		// The stream holds part of b: the request is given up.
		h.log.Error("otlp/http exporter: encoding failed, batches left in the JSONL", "error", err, "batches", len(o.bd.batches))
		bd, re := o.bd, o.re
		h.closeLocked(o)
		_ = re.end()
		h.encoders.Put(re)
		h.finish(bd, LeftRefused)
		return
	}
	if h.o.RequestWait <= 0 || o.bd.items >= h.o.RequestItems || o.bd.buf.Len() >= maxKeptOut {
		h.endLocked(o)
	}
}

// beginLocked begins o's request of sig, for batches scraped or not; o.mu
// is held. On an error it logs it and returns false.
func (h *HTTP) beginLocked(o *openRequest, sig pipeline.Signal, scraped bool) bool {
	bd := h.bodies.Get()
	bd.sig = sig
	re := h.encoders.Get()
	re.enc.Shared = h.o.SharedAttrs
	if err := re.begin(h.comp, sig, scraped, &bd.buf); err != nil {
		h.encoders.Put(re)
		h.putBody(bd)
		h.log.Error("otlp/http exporter: encoding failed, batch left in the JSONL", "error", err)
		return false
	}
	o.bd, o.re = bd, re
	o.gen++
	if h.o.RequestWait > 0 {
		gen := o.gen
		o.timer = time.AfterFunc(h.o.RequestWait, func() { h.due(sig, gen) })
	}
	return true
}

// closeLocked forgets o's request; o.mu is held.
func (h *HTTP) closeLocked(o *openRequest) {
	o.bd, o.re = nil, nil
	if o.timer != nil {
		o.timer.Stop()
		o.timer = nil
	}
}

// endLocked ends o's request and queues it; o.mu is held.
func (h *HTTP) endLocked(o *openRequest) {
	bd, re := o.bd, o.re
	h.closeLocked(o)
	err := re.end()
	h.encoders.Put(re)
	if err != nil {
		h.log.Error("otlp/http exporter: encoding failed, batches left in the JSONL", "error", err, "batches", len(bd.batches))
		h.finish(bd, LeftRefused)
		return
	}
	// The compressor's writes grew the buffer by doubling: up to twice the
	// body.
	// A body too big to be kept for reuse (putBody) is held only until it
	// is sent, and the queue (while the backend is down or hung) and the
	// workers hold several: give it a buffer of its length.
	if c, n := bd.buf.Cap(), bd.buf.Len(); c > maxKeptOut && c-n > n/8 {
		bd.buf = *bytes.NewBuffer(bytes.Clone(bd.buf.Bytes()))
	}
	h.queue(bd)
}

// due ends the request of sig begun gen-th, if it is still open, at its
// RequestWait. Once stopping, Shutdown ends it.
func (h *HTTP) due(sig pipeline.Signal, gen uint64) {
	if !h.enter() {
		return
	}
	defer h.leave()
	o := &h.open[sig]
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.bd != nil && o.gen == gen {
		h.endLocked(o)
	}
}

// queue puts bd on the queue, dropping the oldest bodies to make room.
func (h *HTTP) queue(bd *body) {
	size := int64(bd.buf.Cap())
	var dropped []*body
	h.mu.Lock()
	for h.n > 0 && (h.n == len(h.ring) || h.bytes+size > h.o.QueueBytes) {
		dropped = append(dropped, h.popLocked())
	}
	h.ring[(h.head+h.n)%len(h.ring)] = bd
	h.n++
	h.bytes += size
	h.queueItems += bd.items
	h.queueBatches += len(bd.batches)
	h.mu.Unlock()
	if len(dropped) > 0 {
		for _, d := range dropped {
			h.finish(d, LeftQueueFull)
		}
		total := h.fateTotal(LeftQueueFull)
		now := time.Now().UnixNano()
		last := h.lastDropLog.Load()
		if now-last >= int64(time.Minute) && h.lastDropLog.CompareAndSwap(last, now) {
			h.log.Warn("otlp/http exporter: queue full, oldest batches left in the JSONL for the backfill",
				"left_batches_total", total.Batches, "left_items_total", total.Items,
				"queue_size", len(h.ring), "queue_bytes", h.o.QueueBytes)
		}
	}
	select {
	case h.avail <- struct{}{}:
	default:
	}
}

// popLocked takes the oldest body off the queue, which must not be empty;
// h.mu is held.
func (h *HTTP) popLocked() *body {
	b := h.ring[h.head]
	h.ring[h.head] = nil
	h.head = (h.head + 1) % len(h.ring)
	h.n--
	h.bytes -= int64(b.buf.Cap())
	h.queueItems -= b.items
	h.queueBatches -= len(b.batches)
	return b
}

func (h *HTTP) pop() (*body, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == 0 {
		return nil, false
	}
	b := h.popLocked()
	if h.n > 0 {
		select { // wake the other worker
		case h.avail <- struct{}{}:
		default:
		}
	}
	return b, true
}

// worker posts the queued request bodies until stopped (they were encoded
// at Enqueue).
func (h *HTTP) worker() {
	defer h.wg.Done()
	for {
		if h.runCtx.Err() != nil {
			return
		}
		if b, ok := h.pop(); ok {
			h.export(b)
			continue
		}
		select {
		case <-h.avail:
		case <-h.stopCh:
			// Stopping: send what is left, then exit.
			for h.runCtx.Err() == nil {
				b, ok := h.pop()
				if !ok {
					return
				}
				h.export(b)
			}
			return
		}
	}
}

// Shutdown stops taking batches and keeps sending the queued ones until the
// queue is empty or ctx is done; then the requests in flight are cut short,
// and they and the rest of the queue are counted unsent (and dropped), in
// Stats, in the telemetry and in one log line, and ctx's error is returned.
func (h *HTTP) Shutdown(ctx context.Context) error {
	h.mu.Lock()
	if h.stopping {
		h.mu.Unlock()
		return nil
	}
	h.stopping = true
	h.mu.Unlock()
	// The batches being encoded now are queued before the workers drain,
	// and then the open requests.
	h.enqueuing.Wait()
	for i := range h.open {
		o := &h.open[i]
		o.mu.Lock()
		if o.bd != nil {
			h.endLocked(o)
		}
		o.mu.Unlock()
	}
	h.mu.Lock()
	if !h.started {
		h.started = true
		for range httpWorkers {
			h.wg.Add(1)
			go h.worker()
		}
	}
	close(h.stopCh)
	h.mu.Unlock()

	done := make(chan struct{})
	go func() { h.wg.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		h.runCancel() // in-flight requests and retry waits end now
		<-done
	}
	h.runCancel()
	h.mu.Lock()
	var left []*body
	for h.n > 0 {
		left = append(left, h.popLocked())
	}
	h.mu.Unlock()
	for _, bd := range left {
		h.finish(bd, LeftAtStop)
	}
	h.unobserve()
	if n := h.fateTotal(LeftAtStop); n.Batches > 0 {
		h.log.Warn("otlp/http exporter stopped with batches unsent: its time at stop ran out", "unsent_batches", n.Batches, "unsent_items", n.Items)
	}
	return err
}

// body is one request, encoded: what the queue holds and a worker posts
// (again, on a retry).
type body struct {
	sig   pipeline.Signal
	items int
	buf   bytes.Buffer
	// batches are the batches the request holds, each settled with its
	// fate.
	batches []part
}

// part is one batch of a request: its items, and its ticket (nil when not
// tracked), told the request's fate.
type part struct {
	items int
	t     *ticket
}

// keptBodies bounds the bodies kept for reuse: about what the workers
// post and the encoders fill at once.
const keptBodies = 2 * httpWorkers

// putBody keeps bd for reuse, emptied, unless one huge batch grew its
// buffer.
func (h *HTTP) putBody(bd *body) {
	clear(bd.batches)
	bd.batches = bd.batches[:0]
	bd.items = 0
	if bd.buf.Cap() > maxKeptOut {
		return
	}
	bd.buf.Reset()
	h.bodies.Put(bd)
}

// export posts bd, retrying as configured, then settles its fate and gives
// it back. Each request's outcome is followed for the logs (observe); no
// batch is logged on its own.
func (h *HTTP) export(bd *body) {
	sig := bd.sig
	body := bd.buf.Bytes()
	bo := h.o.Retry.Backoff()
	for {
		res := h.post(sig, body)
		if res.OK() {
			h.answered()
			h.observe(sig, res)
			h.finish(bd, Delivered)
			return
		}
		if h.runCtx.Err() != nil {
			// Cut short by the end of the stop's time: not the
			// backend's answer.
			h.finish(bd, LeftAtStop)
			return
		}
		h.observe(sig, res)
		if !res.Retryable {
			h.finish(bd, LeftRefused)
			return
		}
		if !h.o.Retry.Enabled {
			h.finish(bd, LeftBackendDown)
			return
		}
		delay, ok := bo.Next(res.RetryAfter)
		if !ok {
			h.log.Debug("otlp/http exporter: retries exhausted, batch left in the JSONL for the backfill", "signal", sig.String(),
				"items", bd.items, "elapsed", bo.Elapsed().Round(time.Millisecond), "error", res.Err)
			h.finish(bd, LeftBackendDown)
			return
		}
		h.log.Debug("otlp/http exporter: retrying", "signal", sig.String(), "error", res.Err, "delay", delay)
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-h.runCtx.Done():
			t.Stop()
			h.finish(bd, LeftAtStop)
			return
		}
		h.retries.Add(1)
		h.tel.Retried()
	}
}

func (h *HTTP) post(sig pipeline.Signal, body []byte) Result {
	ctx, cancel := context.WithTimeout(h.runCtx, h.o.Timeout)
	defer cancel()
	start := time.Now()
	res := Post(ctx, h.client, Export{Signal: sig, URL: h.urls[sig], Headers: h.o.Headers, Encoding: h.comp.Encoding(), Body: body, Redact: h.red})
	h.tel.Requested(time.Since(start))
	if res.Err != nil && res.Status == 0 && h.runCtx.Err() != nil {
		// Shutting down past the deadline: not worth another attempt.
		res.Retryable = false
	}
	if res.OK() && (res.Rejected > 0 || res.PartialMessage != "") {
		h.log.Warn("otlp/http exporter: partial success", "signal", sig.String(), "rejected", res.Rejected, "message", res.PartialMessage)
	}
	return res
}
