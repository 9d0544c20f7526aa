// Package otlpin implements the OTLP receivers: OTLP/gRPC and OTLP/HTTP
// (binary protobuf and JSON), as the OTLP specification describes them
// (https://opentelemetry.io/docs/specs/otlp/).
//
// Each accepted export request becomes one pipeline.Batch handed to the
// signal's Consumer. Answers follow the specification:
//
//   - success: an empty Export*ServiceResponse (partial_success unset),
//     once the request's items are written to the JSONL files of the
//     pipelines it feeds (its pipeline.Ack; written with write(2), not
//     fsynced), so that a killed otelstep loses nothing it answered OK.
//     Scopes with no items (data points, spans, log records) and the
//     resources left with no scope are dropped: an export request of no
//     items succeeds without calling Consume.
//   - pipeline.ErrFull, pipeline.ErrStopped, no buffer room or no write
//     within ConsumeTimeout, a write to a JSONL file that failed (a full
//     disk), or a request the receiver's byte budget of requests in flight
//     has no room for (Options.AdmissionBytes): retryable, gRPC
//     UNAVAILABLE with a RetryInfo detail, HTTP 503 with "Retry-After: 1".
//
// The batch processor sends a batch whose senders wait a few milliseconds
// after the first came (batch.Options.AckLinger), not at its timeout:
// requests that arrive together share a batch, and no answer waits for
// the timeout.
//   - any other Consume error: non-retryable, gRPC INTERNAL, HTTP 500.
//   - undecodable request, a trace or span id of the wrong length among
//     them (otlpwire.ValidID): gRPC INVALID_ARGUMENT, HTTP 400 with a
//     google.rpc.Status body, both naming the problem and where it is;
//     nothing of the request is passed on.
//   - a signal with no pipeline (nil Consumer): gRPC UNIMPLEMENTED and HTTP
//     404 Not Found. Both are non-retryable, so a sender stops rather than
//     retrying forever; 404 is also what the OpenTelemetry Collector answers
//     for an OTLP path with no pipeline (the path does not exist there).
//   - HTTP: wrong method 405 (with Allow: POST), unsupported Content-Type or
//     Content-Encoding 415, body (compressed or decompressed) larger than
//     MaxRequestBytes 413, unknown path 404.
//   - gRPC: a message (decompressed) larger than GRPCMaxRecvBytes
//     RESOURCE_EXHAUSTED.
//
// HTTP error bodies are google.rpc.Status messages encoded in the request's
// content type (protobuf or JSON); when the content type itself is not
// supported the body is plain text.
//
// Every refused request is counted by signal, transport and reason
// (Reason), and logged: the first of each reason at WARN with the peer and
// the error, then at most once a period a count (refusals.go). Status
// shows the listeners, the accepted and the refused requests.
package otlpin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/otelstep/otelstep/pipeline"
	"github.com/otelstep/otelstep/telemetry"
)

// DefaultMaxRequestBytes is the OTLP/HTTP request size limit used when
// Options.MaxRequestBytes is 0: the collector's max_request_body_size.
const DefaultMaxRequestBytes = 20 << 20

// DefaultGRPCMaxRecvBytes is the OTLP/gRPC message size limit used when
// Options.GRPCMaxRecvBytes is 0: gRPC's default, so the collector's when
// max_recv_msg_size_mib is not set.
const DefaultGRPCMaxRecvBytes = 4 << 20

// DefaultConsumeTimeout is used when Options.ConsumeTimeout is 0.
const DefaultConsumeTimeout = 5 * time.Second

// DefaultDrainTimeout is Options.DrainTimeout unset: long enough for a
// request of the largest size allowed to arrive over a slow link and be
// handed on, short beside the 30 s a job script allows a whole stop, of
// which the final scrape and the flushes need the most.
const DefaultDrainTimeout = 3 * time.Second

// retryAfter is the delay suggested to senders told to retry later.
const retryAfter = time.Second

// Options configures a Receiver.
type Options struct {
	GRPCEndpoint string // "" = no gRPC listener; e.g. "0.0.0.0:4317"
	HTTPEndpoint string // "" = no HTTP listener

	// Consumers per signal. nil = that signal has no pipeline: requests for
	// it are refused (gRPC UNIMPLEMENTED, HTTP 404).
	Metrics, Traces, Logs pipeline.Consumer

	Logger *slog.Logger // nil = discard

	// MaxRequestBytes limits an OTLP/HTTP request body both as received
	// (compressed) and after decompression. 0 = DefaultMaxRequestBytes.
	MaxRequestBytes int64

	// GRPCMaxRecvBytes limits an OTLP/gRPC message, after decompression.
	// 0 = DefaultGRPCMaxRecvBytes.
	GRPCMaxRecvBytes int64

	// DrainTimeout bounds how long Shutdown waits for the requests in
	// flight to finish (a client sending its body at a byte a second, an
	// idle gRPC stream) before it closes every connection. 0 =
	// DefaultDrainTimeout.
	DrainTimeout time.Duration

	// AdmissionBytes bounds the bytes (decompressed) of the requests in
	// flight, over gRPC and HTTP together, from their reading until the
	// last stage downstream lets go of their batches (admission.go);
	// 0 = DefaultAdmissionBytes. A request past it is answered "retry
	// later" unread.
	AdmissionBytes int64

	// ConsumeTimeout is how long a request may wait for buffer room and
	// for its items to be written before the sender is told to retry
	// later. 0 = 5s.
	ConsumeTimeout time.Duration

	// Telemetry counts the items of each request, accepted or refused by
	// the pipelines, by signal and transport; nil counts nothing.
	Telemetry *telemetry.Receiver

	// MaxConnections bounds the connections open at once on each listener
	// (LimitListener). 0 = DefaultMaxConnections; negative = no bound.
	MaxConnections int
	// MaxConnectionsPerPeer bounds the connections of one peer (IP
	// address) on each listener: past it, a peer's new connection replaces
	// its own longest-idle one (limit.go). 0 = half of MaxConnections;
	// negative = no bound. Unused without MaxConnections.
	MaxConnectionsPerPeer int

	// GRPCKeepalive and GRPCKeepalivePolicy are the gRPC server's keepalive
	// (zero: gRPC's defaults, which keep an idle connection for ever).
	GRPCKeepalive       keepalive.ServerParameters
	GRPCKeepalivePolicy keepalive.EnforcementPolicy

	// The OTLP/HTTP server's timeouts, as net/http has them; 0 = the
	// defaults of newHTTPServer (ReadHeaderTimeout 10s, ReadTimeout 1m,
	// WriteTimeout 1m plus ConsumeTimeout, IdleTimeout 2m).
	HTTPReadTimeout, HTTPReadHeaderTimeout, HTTPWriteTimeout, HTTPIdleTimeout time.Duration
	// HTTPDisableKeepAlives closes each connection after its request.
	HTTPDisableKeepAlives bool

	// RefusalReportPeriod is how often, at most, the refused requests of a
	// reason are reported in the log after the first (refusals.go). 0 =
	// DefaultRefusalReportPeriod.
	RefusalReportPeriod time.Duration

	// Redact hides secrets in the text of an error before it is logged or
	// shown (Status); nil = shown as it is. An error is cut to a few
	// hundred bytes after Redact, so a cut never leaves a secret's head.
	Redact func(string) string
}

// Receiver serves OTLP over gRPC and/or HTTP.
type Receiver struct {
	opts    Options
	log     *slog.Logger
	maxBody int64 // OTLP/HTTP
	maxMsg  int64 // OTLP/gRPC
	timeout time.Duration
	// bodies are the pooled bodies of protobuf requests, lent to their
	// batches (grpcreq.go).
	bodies bodyPool
	// admit is the byte budget of requests in flight (admission.go).
	admit *admission
	// refusals is the record of refused requests (refusals.go), accepted
	// that of accepted ones, by signal and transport.
	refusals  *refusals
	evictions *refusals
	accepted  [3][2]acceptedCount
	// stopReports ends the refusals' reports; reported is closed once the
	// last is logged.
	stopReports context.CancelFunc
	reported    chan struct{}

	// forceCtx is cancelled when Shutdown gives up waiting, so in-flight
	// Consume calls are abandoned.
	forceCtx    context.Context
	forceCancel context.CancelFunc

	mu       sync.Mutex
	started  bool
	stopped  bool
	grpcSrv  *grpc.Server
	grpcLn   net.Listener // limited (LimitListener) unless MaxConnections < 0
	httpSrv  *http.Server
	httpLn   net.Listener
	serveWG  sync.WaitGroup
	shutOnce sync.Once
	shutErr  error
}

// New validates opts and returns a Receiver that is not yet listening.
func New(opts Options) (*Receiver, error) {
	if opts.GRPCEndpoint == "" && opts.HTTPEndpoint == "" {
		return nil, errors.New("otlpin: neither a gRPC nor an HTTP endpoint is configured")
	}
	if opts.MaxRequestBytes < 0 {
		return nil, fmt.Errorf("otlpin: MaxRequestBytes must not be negative, got %d", opts.MaxRequestBytes)
	}
	if opts.GRPCMaxRecvBytes < 0 {
		return nil, fmt.Errorf("otlpin: GRPCMaxRecvBytes must not be negative, got %d", opts.GRPCMaxRecvBytes)
	}
	if opts.DrainTimeout < 0 {
		return nil, fmt.Errorf("otlpin: DrainTimeout must not be negative, got %s", opts.DrainTimeout)
	}
	if opts.AdmissionBytes < 0 {
		return nil, fmt.Errorf("otlpin: AdmissionBytes must not be negative, got %d", opts.AdmissionBytes)
	}
	if opts.ConsumeTimeout < 0 {
		return nil, fmt.Errorf("otlpin: ConsumeTimeout must not be negative, got %s", opts.ConsumeTimeout)
	}
	r := &Receiver{opts: opts, log: opts.Logger, maxBody: opts.MaxRequestBytes, maxMsg: opts.GRPCMaxRecvBytes, timeout: opts.ConsumeTimeout}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.maxBody == 0 {
		r.maxBody = DefaultMaxRequestBytes
	}
	if r.maxMsg == 0 {
		r.maxMsg = DefaultGRPCMaxRecvBytes
	}
	if r.opts.DrainTimeout == 0 {
		r.opts.DrainTimeout = DefaultDrainTimeout
	}
	if r.timeout == 0 {
		r.timeout = DefaultConsumeTimeout
	}
	r.admit = &admission{limit: opts.AdmissionBytes}
	if r.admit.limit == 0 {
		r.admit.limit = DefaultAdmissionBytes
	}
	if r.opts.RefusalReportPeriod <= 0 {
		r.opts.RefusalReportPeriod = DefaultRefusalReportPeriod
	}
	r.refusals = newRefusals(r.log, msgFirstRefusal, msgStillRefused)
	r.evictions = newRefusals(r.log, msgFirstEviction, msgStillEvicting)
	r.forceCtx, r.forceCancel = context.WithCancel(context.Background())
	return r, nil
}

// Start binds the configured listeners and serves them in the background.
// If a listener cannot be bound, nothing stays bound and the error names the
// endpoint. ctx only bounds the binding; serving continues until Shutdown.
func (r *Receiver) Start(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		return errors.New("otlpin: receiver already started")
	}
	if r.stopped {
		return errors.New("otlpin: receiver already shut down")
	}
	var lc net.ListenConfig
	var grpcLn, httpLn net.Listener
	var err error
	if ep := r.opts.GRPCEndpoint; ep != "" {
		if grpcLn, err = lc.Listen(ctx, "tcp", ep); err != nil {
			return fmt.Errorf("otlpin: cannot listen for OTLP/gRPC on %q: %w", ep, err)
		}
	}
	if ep := r.opts.HTTPEndpoint; ep != "" {
		if httpLn, err = lc.Listen(ctx, "tcp", ep); err != nil {
			if grpcLn != nil {
				grpcLn.Close()
			}
			return fmt.Errorf("otlpin: cannot listen for OTLP/HTTP on %q: %w", ep, err)
		}
	}
	r.started = true
	reportCtx, stopReports := context.WithCancel(context.WithoutCancel(ctx))
	r.stopReports, r.reported = stopReports, make(chan struct{})
	go func() {
		defer close(r.reported)
		runReports(reportCtx, r.opts.RefusalReportPeriod, r.refusals, r.evictions)
	}()
	if n := r.opts.MaxConnections; n >= 0 {
		if n == 0 {
			n = DefaultMaxConnections
		}
		perPeer := r.opts.MaxConnectionsPerPeer
		if perPeer == 0 {
			perPeer = max(n/2, 1)
		}
		if grpcLn != nil {
			l := LimitListener(grpcLn, n)
			r.shed(l, telemetry.GRPC, perPeer)
			grpcLn = l
		}
		if httpLn != nil {
			l := LimitListener(httpLn, n)
			r.shed(l, telemetry.HTTP, perPeer)
			httpLn = l
		}
	}
	if grpcLn != nil {
		r.grpcLn = grpcLn
		r.grpcSrv = r.newGRPCServer()
		r.serveWG.Add(1)
		go func() {
			defer r.serveWG.Done()
			if err := r.grpcSrv.Serve(grpcLn); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
				r.log.Error("OTLP/gRPC server stopped", "endpoint", grpcLn.Addr().String(), "error", err)
			}
		}()
		r.log.Info("OTLP/gRPC receiver listening", "endpoint", grpcLn.Addr().String())
	}
	if httpLn != nil {
		r.httpLn = httpLn
		r.httpSrv = r.newHTTPServer()
		r.serveWG.Add(1)
		go func() {
			defer r.serveWG.Done()
			if err := r.httpSrv.Serve(httpLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				r.log.Error("OTLP/HTTP server stopped", "endpoint", httpLn.Addr().String(), "error", err)
			}
		}()
		r.log.Info("OTLP/HTTP receiver listening", "endpoint", httpLn.Addr().String())
	}
	return nil
}

// GRPCAddr returns the bound gRPC address, or nil if there is none.
func (r *Receiver) GRPCAddr() net.Addr {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.grpcLn == nil {
		return nil
	}
	return r.grpcLn.Addr()
}

// HTTPAddr returns the bound HTTP address, or nil if there is none.
func (r *Receiver) HTTPAddr() net.Addr {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.httpLn == nil {
		return nil
	}
	return r.httpLn.Addr()
}

// Shutdown stops accepting connections and requests, then waits for the
// requests in flight to finish delivering their batches, at most
// Options.DrainTimeout: then the requests left are aborted (their Consume
// context is cancelled, their connections closed), which is no error: a
// request aborted was not answered, so its sender still has its data, and
// a client that holds a stream open or trickles its body cannot hold up the
// stop. If ctx ends before either, the requests left are aborted as well
// and ctx's error is returned. Calling Shutdown again returns the first
// call's result.
func (r *Receiver) Shutdown(ctx context.Context) error {
	r.mu.Lock()
	r.stopped = true
	grpcSrv, httpSrv := r.grpcSrv, r.httpSrv
	r.mu.Unlock()

	r.shutOnce.Do(func() {
		// Connections that never sent a byte carry no request: closed now,
		// not at the end of the drain (an idle flood's would hold it up:
		// gRPC waits for a handshake to time out, net/http for a new
		// connection to be 5 s old).
		r.closeConns(true)
		done := make(chan struct{})
		go func() {
			defer close(done)
			var wg sync.WaitGroup
			if grpcSrv != nil {
				wg.Go(grpcSrv.GracefulStop)
			}
			if httpSrv != nil {
				wg.Go(func() {
					// Shutdown's own context never ends: forcing is done below.
					_ = httpSrv.Shutdown(context.Background())
				})
			}
			wg.Wait()
		}()
		drain := time.NewTimer(r.opts.DrainTimeout)
		defer drain.Stop()
		force := func() {
			open := r.openConns()
			r.forceCancel()
			r.closeConns(false)
			if grpcSrv != nil {
				grpcSrv.Stop()
			}
			if httpSrv != nil {
				_ = httpSrv.Close()
			}
			<-done
			r.log.Warn("OTLP receiver: requests still in flight at the end of the drain time were cut short, unanswered (their senders keep the data)",
				"drain_timeout", r.opts.DrainTimeout, "connections_open", open)
		}
		select {
		case <-done:
		case <-drain.C:
			force()
		case <-ctx.Done():
			r.shutErr = fmt.Errorf("otlpin: shutdown forced before in-flight requests finished: %w", ctx.Err())
			force()
		}
		r.forceCancel()
		r.serveWG.Wait()
		if r.stopReports != nil { // started: the refusals not yet reported
			r.stopReports()
			<-r.reported
		}
	})
	return r.shutErr
}

// closeConns closes every connection the listeners hold, or only those
// that never read a byte (Limited.closeAll).
func (r *Receiver) closeConns(unusedOnly bool) {
	r.mu.Lock()
	lns := []net.Listener{r.grpcLn, r.httpLn}
	r.mu.Unlock()
	for _, ln := range lns {
		if l, ok := ln.(*Limited); ok {
			l.closeAll(unusedOnly)
		}
	}
}

// openConns is how many connections the listeners have open, -1 when
// they are not counted (no connection limit).
func (r *Receiver) openConns() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, counted := 0, false
	for _, ln := range []net.Listener{r.grpcLn, r.httpLn} {
		if l, ok := ln.(*Limited); ok {
			n += l.Open()
			counted = true
		}
	}
	if !counted {
		return -1
	}
	return n
}

// consumeCtx derives the context a Consume call runs under: the request's,
// bounded by ConsumeTimeout and cancelled by a forced shutdown.
func (r *Receiver) consumeCtx(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(parent, r.timeout)
	stop := context.AfterFunc(r.forceCtx, cancel)
	return ctx, func() { stop(); cancel() }
}

// consumer returns the consumer of a signal, nil if it has no pipeline.
func (r *Receiver) consumer(s pipeline.Signal) pipeline.Consumer {
	switch s {
	case pipeline.Metrics:
		return r.opts.Metrics
	case pipeline.Traces:
		return r.opts.Traces
	case pipeline.Logs:
		return r.opts.Logs
	}
	return nil
}

// outcome classifies a Consume error.
type outcome int

const (
	outcomeOK outcome = iota
	outcomeRetry
	outcomeFail
)

func classify(err error) outcome {
	switch {
	case err == nil:
		return outcomeOK
	case errors.Is(err, pipeline.ErrFull), errors.Is(err, pipeline.ErrStopped),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return outcomeRetry
	}
	return outcomeFail
}

// transportOf tells which server a request's context comes from: gRPC
// puts its stream in its handlers' contexts.
func transportOf(ctx context.Context) telemetry.Transport {
	if grpc.ServerTransportStreamFromContext(ctx) != nil {
		return telemetry.GRPC
	}
	return telemetry.HTTP
}

// deliver hands b, a request's own batch, to the signal's consumer (which
// must not be nil), without its empty scopes and resources
// (dropEmpty); a batch of nothing is not delivered. A batch
// not taken is released here (its leases, pipeline.Lease): the caller must
// not touch it afterwards.
//
// A batch taken is waited for until its items are written to the JSONL
// files of the pipelines it feeds (its pipeline.Ack): only then is the
// request answered OK. A write that fails, or no write within
// ConsumeTimeout, is "retry later" (pipeline.ErrFull): the sender keeps
// the request, and what was written meanwhile is written twice.
func (r *Receiver) deliver(ctx context.Context, c pipeline.Consumer, b *pipeline.Batch) error {
	sig, tr := b.Signal, transportOf(ctx)
	dropEmpty(b)
	if b.Len() == 0 {
		b.Release()
		r.countAccepted(sig, tr, 0)
		return nil
	}
	cctx, cancel := r.consumeCtx(ctx)
	defer cancel()
	items := b.Items // before the batch is downstream's
	ack := pipeline.NewAck()
	b.Acks = append(b.Acks, ack)
	err := c.Consume(cctx, b)
	if err == nil {
		// Taken: accepted once written.
		if err = awaitAck(cctx, ack); err == nil {
			r.opts.Telemetry.Record(sig, tr, items, nil)
			r.countAccepted(sig, tr, items)
			return nil
		}
		r.opts.Telemetry.Record(sig, tr, items, err)
		return err
	}
	r.opts.Telemetry.Record(sig, tr, items, err)
	b.Release()
	if cctx.Err() != nil && !errors.Is(err, cctx.Err()) && classify(err) == outcomeFail {
		// The consumer gave up because of our deadline but wrapped it oddly;
		// still a "retry later".
		return fmt.Errorf("%w: %w", pipeline.ErrFull, err)
	}
	return err
}

// awaitAck waits until the items of a request taken by the pipelines are
// written (nil), cannot be, or ctx ends first (both pipeline.ErrFull: the
// sender is told to retry later).
func awaitAck(ctx context.Context, ack *pipeline.Ack) error {
	select {
	case <-ack.Wait():
		if err := ack.Err(); err != nil {
			return fmt.Errorf("%w: %w", pipeline.ErrFull, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: not written to the JSONL in time: %w", pipeline.ErrFull, context.Cause(ctx))
	}
}
