// Package fakebackend is the OTLP/HTTP backend of otelstep's tests: a real
// HTTP server on a loopback port that decodes what an exporter sends and
// answers as the test scripts it.
//
// It decodes every request independently of otelstep's own codec (the
// OTLP protobuf messages of go.opentelemetry.io/proto/otlp, or OTLP/JSON
// by protojson), whatever its Content-Encoding: gzip, zstd, snappy or
// none. Every request is recorded (Request: path, signal, headers, bytes
// on the wire, the decoded message, the status answered) and, when
// answered 200, its items counted: spans by id, log records, data points.
//
// The answer is 200 with an empty export response unless the test says
// otherwise: Answer decides each request's status (401, 403, 429 or 503
// with Retry-After, a body, a delay, or a connection closed without an
// answer); Down refuses connections on the same port until Up.
//
// Waits are on conditions: Wait blocks until a condition over what was
// recorded holds, woken by each request, failing the test after Patience.
// Nothing sleeps.
package fakebackend

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Patience is how long Wait waits for a condition before it fails the
// test: long, for a busy machine; a test that passes never waits it out.
const Patience = time.Minute

// Request is one request the backend received.
type Request struct {
	// N counts the backend's requests from 1, in the order their bodies
	// were read (Requests are in the order they were answered).
	N int
	// Method and Path are the request line's; Signal is "traces",
	// "metrics" or "logs" from the path (/v1/traces, ...), "" for another.
	Method, Path, Signal string
	Header               http.Header
	// WireBytes is the body's length as sent; Body is the body
	// decompressed.
	WireBytes int
	Body      []byte
	// DecodeErr says why the body is no export request of Signal (then
	// the backend answered 400 and the messages below are nil).
	DecodeErr error
	// One of these is set, by Signal.
	Traces  *coltracepb.ExportTraceServiceRequest
	Metrics *colmetricspb.ExportMetricsServiceRequest
	Logs    *collogspb.ExportLogsServiceRequest
	// Status is what the backend answered (0: the connection was closed
	// without an answer).
	Status int
	// At is when the request's body had been read.
	At time.Time
}

// Resources returns the request's resources, in order.
func (r *Request) Resources() []*resourcepb.Resource {
	var out []*resourcepb.Resource
	for _, x := range r.Traces.GetResourceSpans() {
		out = append(out, x.GetResource())
	}
	for _, x := range r.Metrics.GetResourceMetrics() {
		out = append(out, x.GetResource())
	}
	for _, x := range r.Logs.GetResourceLogs() {
		out = append(out, x.GetResource())
	}
	return out
}

// Items returns the request's spans, log records or data points.
func (r *Request) Items() int {
	return len(Spans(r.Traces.GetResourceSpans())) + len(LogRecords(r.Logs.GetResourceLogs())) + DataPoints(r.Metrics.GetResourceMetrics())
}

// Reply is the answer to one request.
type Reply struct {
	// Status is the HTTP status; 0 is 200.
	Status int
	// RetryAfter, when set, is the Retry-After header's value.
	RetryAfter string
	// ContentType and Body, when Body is set, are the answer's; a 200
	// without a body gets an empty export response.
	ContentType string
	Body        []byte
	// Delay holds the answer back this long (or until the client goes).
	Delay time.Duration
	// Hang holds the request until the client goes, ReleaseHung or the
	// backend closes, then closes the connection without an answer.
	Hang bool
	// Abort closes the connection at once, without an answer.
	Abort bool
}

// Backend is the fake backend. Its methods are safe for concurrent use.
type Backend struct {
	addr string

	mu       sync.Mutex
	srv      *http.Server
	answer   func(*Request) Reply
	routes   map[string]string // path -> signal, besides /v1/{traces,metrics,logs}
	recorded func(*Request)
	reqs     []*Request
	arrived  int           // requests whose body was read, recorded or not yet
	changed  chan struct{} // closed and replaced at every request
	closed   chan struct{} // closed at Close: hung requests go
	release  chan struct{} // closed at ReleaseHung: the requests hung till then go
	isClosed bool
}

// New starts a backend on a free loopback port, answering 200 to all; it
// is closed at the test's end.
func New(t testing.TB) *Backend {
	t.Helper()
	b, err := Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// Start starts a backend on addr (host:port); the caller closes it.
func Start(addr string) (*Backend, error) {
	b := &Backend{changed: make(chan struct{}), closed: make(chan struct{}), release: make(chan struct{})}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fake backend on %s: %w", addr, err)
	}
	b.addr = ln.Addr().String()
	b.serve(ln)
	return b, nil
}

func (b *Backend) serve(ln net.Listener) {
	b.srv = &http.Server{Handler: http.HandlerFunc(b.handle)}
	go func(s *http.Server) { _ = s.Serve(ln) }(b.srv)
}

// URL is the backend's base URL (http://host:port), the same whether up
// or down.
func (b *Backend) URL() string { return "http://" + b.addr }

// Addr is the backend's host:port.
func (b *Backend) Addr() string { return b.addr }

// Answer sets how the backend answers from now on: f is called for each
// request, decoded, before it is recorded; nil answers 200.
func (b *Backend) Answer(f func(*Request) Reply) {
	b.mu.Lock()
	b.answer = f
	b.mu.Unlock()
}

// Route makes requests to path (an endpoint's own path) decode as signal's
// ("traces", "metrics", "logs").
func (b *Backend) Route(path, signal string) {
	b.mu.Lock()
	if b.routes == nil {
		b.routes = map[string]string{}
	}
	b.routes[path] = signal
	b.mu.Unlock()
}

// AnswerAll answers every request from now on with r.
func (b *Backend) AnswerAll(r Reply) { b.Answer(func(*Request) Reply { return r }) }

// Recorded sets f to be called with each request answered, after it is
// recorded and before its answer is written (nil: none).
func (b *Backend) Recorded(f func(*Request)) {
	b.mu.Lock()
	b.recorded = f
	b.mu.Unlock()
}

// Down stops the backend as a server stops: the listener closes at once
// (a new connection is refused until Up), the requests being handled are
// answered (hung ones let go, unanswered) and then every connection
// closes. Cutting them instead would record requests whose answer never
// reached the client, which then rightly sends them again.
func (b *Backend) Down() {
	b.mu.Lock()
	srv := b.srv
	b.srv = nil
	b.mu.Unlock()
	if srv == nil {
		return
	}
	b.ReleaseHung()
	ctx, cancel := context.WithTimeout(context.Background(), Patience)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		_ = srv.Close()
	}
}

// Up listens again on the backend's port after Down; it fails only if
// another process took the port meanwhile.
func (b *Backend) Up() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.srv != nil || b.isClosed {
		return nil
	}
	ln, err := net.Listen("tcp", b.addr)
	if err != nil {
		return fmt.Errorf("fake backend up again on %s: %w", b.addr, err)
	}
	b.serve(ln)
	return nil
}

// ReleaseHung lets the requests held by a Hang answer go, their
// connections closed without an answer.
func (b *Backend) ReleaseHung() {
	b.mu.Lock()
	close(b.release)
	b.release = make(chan struct{})
	b.mu.Unlock()
}

// Close stops the backend and lets hung requests go.
func (b *Backend) Close() {
	b.Down()
	b.mu.Lock()
	if !b.isClosed {
		b.isClosed = true
		close(b.closed)
	}
	b.mu.Unlock()
}

func signalOf(path string) string {
	switch path {
	case "/v1/traces":
		return "traces"
	case "/v1/metrics":
		return "metrics"
	case "/v1/logs":
		return "logs"
	}
	return ""
}

func (b *Backend) handle(w http.ResponseWriter, r *http.Request) {
	wire, err := io.ReadAll(r.Body)
	req := &Request{Method: r.Method, Path: r.URL.Path, Signal: signalOf(r.URL.Path), Header: r.Header.Clone(), WireBytes: len(wire), At: time.Now()}
	b.mu.Lock()
	if sig, ok := b.routes[r.URL.Path]; ok {
		req.Signal = sig
	}
	b.mu.Unlock()
	if err == nil {
		req.Body, err = Decompress(r.Header.Get("Content-Encoding"), wire)
	}
	if err == nil {
		err = req.decode(r.Header.Get("Content-Type"))
	}
	req.DecodeErr = err

	b.mu.Lock()
	b.arrived++
	req.N = b.arrived
	answer, closed, release := b.answer, b.closed, b.release
	b.mu.Unlock()
	var rep Reply
	if err != nil {
		rep = Reply{Status: http.StatusBadRequest, ContentType: "text/plain", Body: []byte(err.Error())}
	} else if answer != nil {
		rep = answer(req)
	}
	if rep.Status == 0 {
		rep.Status = http.StatusOK
	}
	if rep.Abort {
		req.Status = 0
		b.record(req)
		panic(http.ErrAbortHandler)
	}
	if rep.Hang {
		req.Status = 0
		b.record(req)
		select {
		case <-r.Context().Done():
		case <-closed:
		case <-release:
		}
		panic(http.ErrAbortHandler) // the connection goes without an answer
	}
	if rep.Delay > 0 {
		t := time.NewTimer(rep.Delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			req.Status = 0
			b.record(req)
			return
		}
	}
	req.Status = rep.Status
	b.record(req)
	b.mu.Lock()
	recorded := b.recorded
	b.mu.Unlock()
	if recorded != nil {
		recorded(req)
	}
	if rep.RetryAfter != "" {
		w.Header().Set("Retry-After", rep.RetryAfter)
	}
	body, ct := rep.Body, rep.ContentType
	if body == nil && rep.Status == http.StatusOK {
		body, ct = req.emptyResponse()
	}
	if ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	w.WriteHeader(rep.Status)
	_, _ = w.Write(body)
}

func (b *Backend) record(req *Request) {
	b.mu.Lock()
	b.reqs = append(b.reqs, req)
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}

// Decompress returns body decoded by its Content-Encoding: gzip, zstd,
// snappy (the block format, as the collector's exporters send it) or none
// ("" or "identity"). An empty body is empty whatever its encoding (a
// request of no items).
func Decompress(encoding string, body []byte) ([]byte, error) {
	if len(body) == 0 {
		return body, nil
	}
	switch strings.ToLower(strings.TrimSpace(encoding)) {
	case "", "identity":
		return body, nil
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("gzip body: %w", err)
		}
		out, err := io.ReadAll(zr)
		if err != nil {
			return nil, fmt.Errorf("gzip body: %w", err)
		}
		return out, nil
	case "zstd":
		zr, err := zstd.NewReader(nil)
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		out, err := zr.DecodeAll(body, nil)
		if err != nil {
			return nil, fmt.Errorf("zstd body: %w", err)
		}
		return out, nil
	case "snappy":
		out, err := snappy.Decode(nil, body)
		if err != nil {
			return nil, fmt.Errorf("snappy body: %w", err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown Content-Encoding %q", encoding)
}

// decode unmarshals r.Body as its signal's export request, protobuf or
// (by the content type) OTLP/JSON.
func (r *Request) decode(contentType string) error {
	var m proto.Message
	switch r.Signal {
	case "traces":
		r.Traces = &coltracepb.ExportTraceServiceRequest{}
		m = r.Traces
	case "metrics":
		r.Metrics = &colmetricspb.ExportMetricsServiceRequest{}
		m = r.Metrics
	case "logs":
		r.Logs = &collogspb.ExportLogsServiceRequest{}
		m = r.Logs
	default:
		return fmt.Errorf("no OTLP signal at path %q", r.Path)
	}
	var err error
	if strings.HasPrefix(contentType, "application/json") {
		err = protojson.Unmarshal(r.Body, m)
	} else {
		err = proto.Unmarshal(r.Body, m)
	}
	if err != nil {
		r.Traces, r.Metrics, r.Logs = nil, nil, nil
		return fmt.Errorf("%s request (%s): %w", r.Signal, contentType, err)
	}
	return nil
}

// emptyResponse is the signal's empty export response, in the request's
// format.
func (r *Request) emptyResponse() ([]byte, string) {
	var m proto.Message
	switch r.Signal {
	case "traces":
		m = &coltracepb.ExportTraceServiceResponse{}
	case "metrics":
		m = &colmetricspb.ExportMetricsServiceResponse{}
	default:
		m = &collogspb.ExportLogsServiceResponse{}
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		out, _ := protojson.Marshal(m)
		return out, "application/json"
	}
	out, _ := proto.Marshal(m)
	return out, "application/x-protobuf"
}

// Requests returns every request received so far, answered or not, in
// order. The requests are shared: read them, do not change them.
func (b *Backend) Requests() []*Request {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*Request(nil), b.reqs...)
}

// Accepted returns the requests answered 200, in order.
func (b *Backend) Accepted() []*Request {
	var out []*Request
	for _, r := range b.Requests() {
		if r.Status == http.StatusOK {
			out = append(out, r)
		}
	}
	return out
}

// Count returns how many requests received so far satisfy keep (nil: all).
func (b *Backend) Count(keep func(*Request) bool) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, r := range b.reqs {
		if keep == nil || keep(r) {
			n++
		}
	}
	return n
}

// Spans returns the spans of the accepted requests, by span id (hex); a
// span sent twice is there once (Requests has every copy).
func (b *Backend) Spans() map[string]*tracepb.Span {
	out := map[string]*tracepb.Span{}
	for _, r := range b.Accepted() {
		for _, s := range Spans(r.Traces.GetResourceSpans()) {
			out[hex.EncodeToString(s.SpanId)] = s
		}
	}
	return out
}

// LogRecords returns the log records of the accepted requests, in order.
func (b *Backend) LogRecords() []*logspb.LogRecord {
	var out []*logspb.LogRecord
	for _, r := range b.Accepted() {
		out = append(out, LogRecords(r.Logs.GetResourceLogs())...)
	}
	return out
}

// Metrics returns the resource metrics of the accepted requests, in order.
func (b *Backend) Metrics() []*metricspb.ResourceMetrics {
	var out []*metricspb.ResourceMetrics
	for _, r := range b.Accepted() {
		out = append(out, r.Metrics.GetResourceMetrics()...)
	}
	return out
}

// Items returns the spans, log records and data points of the accepted
// requests.
func (b *Backend) Items() int {
	n := 0
	for _, r := range b.Accepted() {
		n += r.Items()
	}
	return n
}

// Wait blocks until cond holds of the requests received so far (called
// again after each new one), or fails the test after Patience saying what
// it waited for.
func (b *Backend) Wait(t testing.TB, what string, cond func(reqs []*Request) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Patience)
	defer cancel()
	if err := b.WaitContext(ctx, cond); err != nil {
		n := b.Count(nil)
		t.Fatalf("fake backend: %s: not within %v (%d requests)", what, Patience, n)
	}
}

// WaitContext blocks until cond holds of the requests received so far, or
// ctx ends (its error).
func (b *Backend) WaitContext(ctx context.Context, cond func(reqs []*Request) bool) error {
	for {
		b.mu.Lock()
		reqs := append([]*Request(nil), b.reqs...)
		changed := b.changed
		b.mu.Unlock()
		if cond(reqs) {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// WaitRequests waits until n requests have been received.
func (b *Backend) WaitRequests(t testing.TB, n int) {
	t.Helper()
	b.Wait(t, fmt.Sprintf("%d requests", n), func(r []*Request) bool { return len(r) >= n })
}

// WaitItems waits until the accepted requests hold n items (spans, log
// records, data points).
func (b *Backend) WaitItems(t testing.TB, n int) {
	t.Helper()
	b.Wait(t, fmt.Sprintf("%d items", n), func(reqs []*Request) bool {
		got := 0
		for _, r := range reqs {
			if r.Status == http.StatusOK {
				got += r.Items()
			}
		}
		return got >= n
	})
}

// Spans returns the spans of rss, in order.
func Spans(rss []*tracepb.ResourceSpans) []*tracepb.Span {
	var out []*tracepb.Span
	for _, rs := range rss {
		for _, ss := range rs.GetScopeSpans() {
			out = append(out, ss.GetSpans()...)
		}
	}
	return out
}

// LogRecords returns the log records of rls, in order.
func LogRecords(rls []*logspb.ResourceLogs) []*logspb.LogRecord {
	var out []*logspb.LogRecord
	for _, rl := range rls {
		for _, sl := range rl.GetScopeLogs() {
			out = append(out, sl.GetLogRecords()...)
		}
	}
	return out
}

// DataPoints counts the data points of rms, of every kind.
func DataPoints(rms []*metricspb.ResourceMetrics) int {
	n := 0
	for _, rm := range rms {
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				n += len(m.GetGauge().GetDataPoints()) + len(m.GetSum().GetDataPoints()) + len(m.GetHistogram().GetDataPoints()) +
					len(m.GetExponentialHistogram().GetDataPoints()) + len(m.GetSummary().GetDataPoints())
			}
		}
	}
	return n
}

// LastValues returns the last value of every sum and gauge point in rms
// (of a histogram point, its count), by metric name and then by the
// point's attributes rendered "k=v,k=v" in the order sent.
func LastValues(rms []*metricspb.ResourceMetrics) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	key := func(kvs []*commonpb.KeyValue) string {
		var s []string
		for _, a := range kvs {
			s = append(s, a.Key+"="+a.Value.GetStringValue())
		}
		return strings.Join(s, ",")
	}
	for _, rm := range rms {
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				if out[m.Name] == nil {
					out[m.Name] = map[string]float64{}
				}
				for _, p := range append(m.GetSum().GetDataPoints(), m.GetGauge().GetDataPoints()...) {
					v := p.GetAsDouble()
					if x, ok := p.Value.(*metricspb.NumberDataPoint_AsInt); ok {
						v = float64(x.AsInt)
					}
					out[m.Name][key(p.Attributes)] = v
				}
				for _, p := range m.GetHistogram().GetDataPoints() {
					out[m.Name][key(p.Attributes)] = float64(p.Count)
				}
			}
		}
	}
	return out
}

// StampedOnce reports whether res holds the Authorization attribute once,
// spelled so and valued token, and under no other spelling: the resource
// processor's stamp as the backend must get it.
func StampedOnce(res *resourcepb.Resource, token string) bool {
	n := 0
	for _, kv := range res.GetAttributes() {
		if strings.EqualFold(kv.Key, "Authorization") {
			if kv.Key != "Authorization" || kv.Value.GetStringValue() != token {
				return false
			}
			n++
		}
	}
	return n == 1
}

// Attrs returns kvs' string values by key.
func Attrs(kvs []*commonpb.KeyValue) map[string]string {
	out := map[string]string{}
	for _, a := range kvs {
		out[a.Key] = a.Value.GetStringValue()
	}
	return out
}
