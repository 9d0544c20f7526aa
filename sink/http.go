package sink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/otelstep/otelstep/pipeline"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
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
	// Compression is "gzip" (default) or "none".
	Compression string
	// Timeout is per request; default 30s.
	Timeout time.Duration
	Retry   RetryOptions
	// QueueSize is the number of batches buffered; default 1000. When full
	// the oldest batch is dropped.
	QueueSize int
	Logger    *slog.Logger
	Client    *http.Client
}

// HTTPStats counts what the HTTP sink did. Failed and Dropped count batches.
type HTTPStats struct {
	SentBatches uint64
	SentItems   uint64
	Failed      uint64 // rejected (non-retryable) or retries exhausted
	Dropped     uint64 // oldest dropped when the queue was full, or left at shutdown
	Retries     uint64
}

const httpWorkers = 2

// HTTP is the OTLP/HTTP exporter sink (protobuf, gzip). One queue is shared
// by every signal; two workers send. Enqueue never blocks: when the queue is
// full the oldest batch is dropped and counted.
type HTTP struct {
	o       HTTPOptions
	log     *slog.Logger
	client  *http.Client
	urls    [3]string
	safeURL [3]string // userinfo redacted, for logs
	gzip    bool

	mu       sync.Mutex
	ring     []*pipeline.Batch
	head, n  int
	stopping bool
	started  bool
	avail    chan struct{}
	stopCh   chan struct{}
	wg       sync.WaitGroup

	runCtx    context.Context
	runCancel context.CancelFunc

	lastDropLog                                      atomic.Int64 // unix nanos
	sentBatches, sentItems, failed, dropped, retries atomic.Uint64
}

var gzipPool = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return w
}}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// NewHTTP validates o and returns the sink. Call Start to begin sending.
func NewHTTP(o HTTPOptions) (*HTTP, error) {
	if o.QueueSize <= 0 {
		o.QueueSize = 1000
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
	h := &HTTP{o: o, client: o.Client}
	switch strings.ToLower(o.Compression) {
	case "", "gzip":
		h.gzip = true
	case "none":
	default:
		return nil, fmt.Errorf("%s: unsupported compression %q", o.Name, o.Compression)
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
	h.ring = make([]*pipeline.Batch, o.QueueSize)
	h.avail = make(chan struct{}, 1)
	h.stopCh = make(chan struct{})
	h.runCtx, h.runCancel = context.WithCancel(context.Background())
	return h, nil
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
	return HTTPStats{
		SentBatches: h.sentBatches.Load(),
		SentItems:   h.sentItems.Load(),
		Failed:      h.failed.Load(),
		Dropped:     h.dropped.Load(),
		Retries:     h.retries.Load(),
	}
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
		"header_names", names, "gzip", h.gzip)
	for range httpWorkers {
		h.wg.Add(1)
		go h.worker()
	}
	return nil
}

// Enqueue queues b and never blocks. When the queue is full the oldest batch
// is dropped. After Shutdown it returns pipeline.ErrStopped.
func (h *HTTP) Enqueue(_ context.Context, b *pipeline.Batch) error {
	h.mu.Lock()
	if h.stopping {
		h.mu.Unlock()
		return pipeline.ErrStopped
	}
	dropped := false
	if h.n == len(h.ring) {
		h.ring[h.head] = nil
		h.head = (h.head + 1) % len(h.ring)
		h.n--
		dropped = true
	}
	h.ring[(h.head+h.n)%len(h.ring)] = b
	h.n++
	h.mu.Unlock()
	if dropped {
		total := h.dropped.Add(1)
		now := time.Now().UnixNano()
		last := h.lastDropLog.Load()
		if now-last >= int64(10*time.Second) && h.lastDropLog.CompareAndSwap(last, now) {
			h.log.Warn("otlp/http exporter queue full, dropped oldest batch", "dropped_total", total, "queue_size", len(h.ring))
		}
	}
	select {
	case h.avail <- struct{}{}:
	default:
	}
	return nil
}

func (h *HTTP) pop() (*pipeline.Batch, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == 0 {
		return nil, false
	}
	b := h.ring[h.head]
	h.ring[h.head] = nil
	h.head = (h.head + 1) % len(h.ring)
	h.n--
	if h.n > 0 {
		select { // wake the other worker
		case h.avail <- struct{}{}:
		default:
		}
	}
	return b, true
}

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
// queue is empty or ctx is done; then the rest are counted dropped.
func (h *HTTP) Shutdown(ctx context.Context) error {
	h.mu.Lock()
	if h.stopping {
		h.mu.Unlock()
		return nil
	}
	h.stopping = true
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
	left := h.n
	for h.n > 0 {
		h.ring[h.head] = nil
		h.head = (h.head + 1) % len(h.ring)
		h.n--
	}
	h.mu.Unlock()
	if left > 0 {
		h.dropped.Add(uint64(left))
		h.log.Warn("otlp/http exporter shut down with unsent batches", "dropped", left)
	}
	return err
}

// encode marshals b's export request and (optionally) gzips it into out.
func (h *HTTP) encode(b *pipeline.Batch, out *bytes.Buffer) error {
	var msg proto.Message
	switch b.Signal {
	case pipeline.Metrics:
		return encodeMetrics(b, h.gzip, out)
	case pipeline.Traces:
		msg = &coltracepb.ExportTraceServiceRequest{ResourceSpans: b.Traces}
	case pipeline.Logs:
		msg = &collogspb.ExportLogsServiceRequest{ResourceLogs: b.Logs}
	default:
		return fmt.Errorf("unknown signal %d", b.Signal)
	}
	return encodeProto(msg, h.gzip, out)
}

var metricsEncPool = sync.Pool{New: func() any { return new(MetricsProtoEncoder) }}

// encodeMetrics is encodeProto with the reflection-free metrics encoder:
// metrics are the bulk of a job's data (every scrape of every target).
func encodeMetrics(b *pipeline.Batch, gz bool, out *bytes.Buffer) error {
	out.Reset()
	enc := metricsEncPool.Get().(*MetricsProtoEncoder)
	defer metricsEncPool.Put(enc)
	if !gz {
		out.Write(enc.AppendRequest(out.AvailableBuffer(), b.Metrics))
		return nil
	}
	bp := marshalPool.Get().(*[]byte)
	defer marshalPool.Put(bp)
	*bp = enc.AppendRequest((*bp)[:0], b.Metrics)
	zw := gzipPool.Get().(*gzip.Writer)
	defer gzipPool.Put(zw)
	zw.Reset(out)
	if _, err := zw.Write(*bp); err != nil {
		return err
	}
	return zw.Close()
}

var marshalPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

func encodeProto(msg proto.Message, gz bool, out *bytes.Buffer) error {
	out.Reset()
	if !gz {
		raw, err := proto.MarshalOptions{}.MarshalAppend(out.AvailableBuffer(), msg)
		if err != nil {
			return err
		}
		out.Write(raw)
		return nil
	}
	bp := marshalPool.Get().(*[]byte)
	defer marshalPool.Put(bp)
	raw, err := proto.MarshalOptions{}.MarshalAppend((*bp)[:0], msg)
	if err != nil {
		return err
	}
	*bp = raw
	zw := gzipPool.Get().(*gzip.Writer)
	defer gzipPool.Put(zw)
	zw.Reset(out)
	if _, err := zw.Write(raw); err != nil {
		return err
	}
	return zw.Close()
}

// attemptResult classifies one POST.
type attemptResult struct {
	ok         bool
	retryable  bool
	retryAfter time.Duration
	err        error
}

func (h *HTTP) export(b *pipeline.Batch) {
	if b.Signal > pipeline.Logs {
		h.failed.Add(1)
		h.log.Error("otlp/http exporter: unknown signal, batch dropped", "signal", int(b.Signal))
		return
	}
	buf := bufPool.Get().(*bytes.Buffer)
	defer bufPool.Put(buf)
	if err := h.encode(b, buf); err != nil {
		h.failed.Add(1)
		h.log.Error("otlp/http exporter: encoding failed", "error", err)
		return
	}
	items := b.Items()
	body := buf.Bytes()
	start := time.Now()
	interval := h.o.Retry.InitialInterval
	for {
		res := h.post(b.Signal, body)
		if res.ok {
			h.sentBatches.Add(1)
			h.sentItems.Add(uint64(items))
			return
		}
		if !res.retryable || !h.o.Retry.Enabled {
			h.failed.Add(1)
			h.log.Error("otlp/http exporter: export failed, batch dropped", "signal", b.Signal.String(),
				"url", h.safeURL[b.Signal], "items", items, "error", res.err)
			return
		}
		delay := jitter(interval)
		if res.retryAfter > 0 {
			delay = res.retryAfter
		}
		if time.Since(start)+delay > h.o.Retry.MaxElapsedTime {
			h.failed.Add(1)
			h.log.Error("otlp/http exporter: retries exhausted, batch dropped", "signal", b.Signal.String(),
				"url", h.safeURL[b.Signal], "items", items, "elapsed", time.Since(start).Round(time.Millisecond), "error", res.err)
			return
		}
		h.log.Debug("otlp/http exporter: retrying", "signal", b.Signal.String(), "error", res.err, "delay", delay)
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-h.runCtx.Done():
			t.Stop()
			h.dropped.Add(1)
			h.log.Warn("otlp/http exporter: shutdown during retry, batch dropped", "signal", b.Signal.String(), "items", items)
			return
		}
		h.retries.Add(1)
		interval = min(interval*2, h.o.Retry.MaxInterval)
	}
}

// jitter returns d randomised by ±50%.
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d+1)
}

func (h *HTTP) post(sig pipeline.Signal, body []byte) attemptResult {
	ctx, cancel := context.WithTimeout(h.runCtx, h.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.urls[sig], bytes.NewReader(body))
	if err != nil {
		return attemptResult{err: redactErr(err)}
	}
	req.Header.Set("User-Agent", "otelstep")
	for k, v := range h.o.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if h.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := h.client.Do(req)
	if err != nil {
		// Network errors and timeouts are retryable, unless we are
		// shutting down past the deadline.
		return attemptResult{retryable: h.runCtx.Err() == nil, err: redactErr(err)}
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // allow connection reuse
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		h.checkPartial(sig, resp, data)
		return attemptResult{ok: true}
	}
	msg := statusMessage(resp, data)
	err = fmt.Errorf("HTTP %d%s", resp.StatusCode, msg)
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return attemptResult{retryable: true, retryAfter: parseRetryAfter(resp.Header.Get("Retry-After")), err: err}
	case http.StatusBadGateway, http.StatusGatewayTimeout:
		return attemptResult{retryable: true, err: err}
	}
	return attemptResult{err: err}
}

func isProto(resp *http.Response) bool {
	ct := resp.Header.Get("Content-Type")
	return strings.HasPrefix(ct, "application/x-protobuf") || strings.HasPrefix(ct, "application/protobuf")
}

// statusMessage returns ": <message>" from a google.rpc.Status body, or a
// truncated plain-text body, or "".
func statusMessage(resp *http.Response, data []byte) string {
	if len(data) == 0 {
		return ""
	}
	var msg string
	if isProto(resp) {
		msg = decodeStatusMessage(data)
	} else if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/") {
		msg = strings.TrimSpace(string(data))
	}
	if msg == "" {
		return ""
	}
	return ": " + truncate(msg, 256)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// decodeStatusMessage extracts field 2 (message) of a google.rpc.Status.
func decodeStatusMessage(b []byte) string {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return ""
		}
		b = b[n:]
		if num == 2 && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return ""
			}
			return string(v)
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return ""
		}
		b = b[n:]
	}
	return ""
}

// checkPartial logs a warning when a 2xx response reports rejected items.
func (h *HTTP) checkPartial(sig pipeline.Signal, resp *http.Response, data []byte) {
	if len(data) == 0 || !isProto(resp) {
		return
	}
	var rejected int64
	var msg string
	switch sig {
	case pipeline.Metrics:
		var r colmetricspb.ExportMetricsServiceResponse
		if proto.Unmarshal(data, &r) != nil {
			return
		}
		rejected, msg = r.GetPartialSuccess().GetRejectedDataPoints(), r.GetPartialSuccess().GetErrorMessage()
	case pipeline.Traces:
		var r coltracepb.ExportTraceServiceResponse
		if proto.Unmarshal(data, &r) != nil {
			return
		}
		rejected, msg = r.GetPartialSuccess().GetRejectedSpans(), r.GetPartialSuccess().GetErrorMessage()
	case pipeline.Logs:
		var r collogspb.ExportLogsServiceResponse
		if proto.Unmarshal(data, &r) != nil {
			return
		}
		rejected, msg = r.GetPartialSuccess().GetRejectedLogRecords(), r.GetPartialSuccess().GetErrorMessage()
	}
	if rejected > 0 || msg != "" {
		h.log.Warn("otlp/http exporter: partial success", "signal", sig.String(), "rejected", rejected, "message", truncate(msg, 256))
	}
}

// parseRetryAfter parses delay-seconds or an HTTP date; 0 if absent/invalid.
func parseRetryAfter(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil {
		if s < 0 {
			return 0
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}
