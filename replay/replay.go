// Package replay resends a job's JSONL files (one OTLP/JSON export request
// per line, as otelstep and the collector's file exporter write them) to an
// OTLP/HTTP backend, as what the backend would have received live: protobuf,
// gzip, the Authorization header and the Authorization resource attribute
// on every resource, stamped from the token given now.
//
// Lines are grouped into requests of one signal up to a size limit and sent
// by a few workers; retryable failures (429, 5xx, timeouts) back off and
// honour Retry-After, a request the backend calls bad (400, 413) is split
// into its lines so that only the bad ones are skipped and reported as
// FILE:LINE. Progress is checkpointed per file (see checkpoint), so a
// replay that is stopped continues where it was and never sends a line
// twice; one that crashed resends at most the last moments' requests.
//
// The running otelstep keeps the same checkpoint as its delivery record
// (Record): which lines of a JSONL file its OTLP/HTTP exporter delivered.
// Its live backfill (package backfill) sends, from the file and as a
// replay does (Record.Resend), what the exporter did not deliver; a replay
// to the exporter's endpoint afterwards sends exactly what is not in the
// record.
package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/otelstep/otelstep/internal/pool"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/otelstep/otelstep/batch"
	"github.com/otelstep/otelstep/config"
	"github.com/otelstep/otelstep/otlpwire"
	"github.com/otelstep/otelstep/pipeline"
	"github.com/otelstep/otelstep/redact"
	"github.com/otelstep/otelstep/resource"
	"github.com/otelstep/otelstep/sink"
)

// Options configures one replay.
type Options struct {
	// Endpoint is the backend's base URL; signal S goes to Endpoint/v1/S.
	Endpoint string
	// Token is sent as "Authorization: Bearer <Token>" and stamped as the
	// Authorization resource attribute. It is never printed.
	Token string
	// Headers are added to every request; their values are never printed.
	Headers map[string]string
	Paths   []string
	// StateDir holds the checkpoints; "" puts each beside its file.
	StateDir  string
	FromStart bool // ignore (and then overwrite) existing checkpoints
	// AcceptSkipped acknowledges the lines earlier runs reported and
	// skipped: this run and later ones do not fail for them.
	AcceptSkipped bool
	DryRun        bool // decode and count, send nothing, write no checkpoint
	// Signals limits the replay; empty means all three.
	Signals []pipeline.Signal
	// Rate caps requests per second (retries included); 0 means no cap.
	Rate float64
	// BatchBytes bounds the JSON bytes of the lines in one request; default
	// 4 MiB, about 1.5 MiB of protobuf. A longer line is sent in requests
	// of about that much each, split by resource, scope and metric points
	// (otelstep's line of a scrape of a million series is over a hundred
	// megabytes, in one resource), one such line at a time; once begun, it
	// is sent whole even when the replay is stopping (a second signal cuts
	// it short: it is then sent again on resume).
	BatchBytes int
	// MaxLineBytes is the longest line read; longer ones are reported and
	// skipped without being held in memory. Default DefaultMaxLineBytes.
	MaxLineBytes int
	// Concurrency is the number of requests in flight (and of decoders);
	// default 4.
	Concurrency int
	// Timeout bounds one request; default 30s.
	Timeout time.Duration
	// Retry: InitialInterval default 1s, MaxInterval 30s, MaxElapsedTime
	// (per request, after which the replay stops as failed) 5m.
	Retry sink.RetryOptions
	// CheckpointEvery bounds how often a file's checkpoint is written while
	// it is being sent; default 250ms. It is always written at the end.
	CheckpointEvery time.Duration
	Client          *http.Client
	// Progress receives the progress display and the skipped lines as they
	// are found; nil discards them.
	Progress io.Writer
	// Terminal redraws one progress bar in place; otherwise a plain line is
	// written every ProgressEvery (default 10s).
	Terminal      bool
	ProgressEvery time.Duration
}

func (o *Options) selected(s pipeline.Signal) bool {
	if len(o.Signals) == 0 {
		return true
	}
	for _, x := range o.Signals {
		if x == s {
			return true
		}
	}
	return false
}

// DefaultMaxLineBytes is Options.MaxLineBytes unset: room for otelstep's
// own lines, which hold a whole scrape (over a hundred megabytes at a
// million series).
const DefaultMaxLineBytes = 1 << 30

// ErrNoToken is returned when Options.Token is empty on a replay that sends.
var ErrNoToken = errors.New("no ingest token")

// ErrBadToken is returned when Options.Token holds what no HTTP header may
// (a line feed, say): every request would fail.
var ErrBadToken = errors.New("the ingest token is not a valid header value")

// fileRun is one file's replay: where it starts, where it ends (0: at
// the end of the file) and what records its progress.
type fileRun struct {
	in    input
	start checkpoint
	end   int64
	tr    marker
}

// marker records the chunks of a file that are done: a replay's tracker,
// or otelstep's delivery record when it backfills (Record).
type marker interface {
	// done records that s is done (sent, or reported and skipped), of
	// which skipped lines were skipped.
	done(s span, skipped int)
	// flush saves what is recorded, and reports the first error saving.
	flush() error
}

// run is the state of one Run.
type run struct {
	o       Options
	urls    [3]string
	headers map[string]string
	files   []*fileRun
	lim     *rate.Limiter

	ctx    context.Context // cancelled on a stop or a fatal error
	cancel context.CancelCauseFunc
	// failed is cancelled on a fatal error only: the rest of a line sent
	// in pieces goes on under it when the replay is stopping.
	failed     context.Context
	failCancel context.CancelCauseFunc
	// big is held by the one line longer than BatchBytes being sent (and
	// the one read next, waiting): such lines are decoded one at a time.
	big chan struct{}

	stats progressStats
	sum   summaryBuilder
	out   *output
	// pending counts the last lines of files that have no newline yet
	// (readFile), left for the next run; only the reader writes it.
	pending int
	// send posts one request once: sink.Post to r.urls with r.headers
	// unless a backfill sends through the live exporter.
	send func(ctx context.Context, sig pipeline.Signal, body []byte) sink.Result
	// comp: how the requests are compressed (sink.DefaultCompression, as
	// the exporter's default; a backfill's, as its exporter's).
	comp sink.Compression
	// quiet: no progress display and no retry notes (a backfill logs
	// what it did instead).
	quiet bool
	// keepRefused: a line the backend refuses (400, 413) is not skipped;
	// the run fails and it stays undone (a backfill leaves it to replay).
	keepRefused bool
}

// Run replays o.Paths. The error is for what stops a replay before it
// starts (bad options, a path that names nothing, a checkpoint that does not
// match its file): nothing has been sent then. Everything after is in the
// Summary: cancelling ctx is a clean stop (requests in flight finish,
// checkpoints are written, Summary.Stopped is set).
func Run(ctx context.Context, o Options) (*Summary, error) {
	r, err := prepare(o)
	if err != nil {
		return nil, err
	}
	return r.run(ctx), nil
}

func prepare(o Options) (*run, error) {
	if o.BatchBytes <= 0 {
		o.BatchBytes = 4 << 20
	}
	if o.MaxLineBytes <= 0 {
		o.MaxLineBytes = DefaultMaxLineBytes
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.Retry.InitialInterval <= 0 {
		o.Retry.InitialInterval = time.Second
	}
	if o.Retry.MaxInterval <= 0 {
		o.Retry.MaxInterval = 30 * time.Second
	}
	if o.Retry.MaxElapsedTime <= 0 {
		o.Retry.MaxElapsedTime = 5 * time.Minute
	}
	if o.CheckpointEvery <= 0 {
		o.CheckpointEvery = 250 * time.Millisecond
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = 10 * time.Second
		if o.Terminal {
			o.ProgressEvery = 200 * time.Millisecond
		}
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Client == nil {
		o.Client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	// One request at a time at o.Rate (a burst of one: a sender that was
	// idle gets no backlog of them); rate.Inf when no cap.
	lim := rate.NewLimiter(rate.Inf, 1)
	if o.Rate > 0 {
		lim.SetLimit(rate.Limit(o.Rate))
	}
	r := &run{o: o, lim: lim, out: &output{w: o.Progress, terminal: o.Terminal}, big: make(chan struct{}, 1), comp: sink.DefaultCompression}
	r.send = r.postExport
	secrets := []string{o.Token}
	for _, v := range o.Headers {
		secrets = append(secrets, v)
	}
	r.out.redact = redact.New(secrets...)
	safeEndpoint := ""
	if !o.DryRun || o.Endpoint != "" {
		var err error
		safeEndpoint, err = NormalizeEndpoint(o.Endpoint)
		if err != nil {
			return nil, fmt.Errorf("--endpoint: %w", err)
		}
		base := strings.TrimRight(o.Endpoint, "/")
		for _, s := range []pipeline.Signal{pipeline.Metrics, pipeline.Traces, pipeline.Logs} {
			r.urls[s] = base + "/v1/" + s.String()
		}
	}
	if !o.DryRun && o.Token == "" {
		return nil, ErrNoToken
	}
	if c := config.DescribeInvalidHeader(o.Token); c != "" {
		return nil, fmt.Errorf("%w: it holds %s, which no HTTP header may hold (its value is not shown)", ErrBadToken, c)
	}
	r.headers = make(map[string]string, len(o.Headers)+1)
	for k, v := range o.Headers {
		if strings.EqualFold(k, "Authorization") {
			return nil, fmt.Errorf("--header %s: the Authorization header is made from the token; do not pass it", k)
		}
		if c := config.DescribeInvalidHeader(v); c != "" {
			return nil, fmt.Errorf("--header %s: the value holds %s, which no HTTP header may hold (the value is not shown)", k, c)
		}
		r.headers[k] = v
	}
	r.headers["Authorization"] = "Bearer " + o.Token

	ins, err := resolve(o.Paths)
	if err != nil {
		return nil, err
	}
	key := stateKey(safeEndpoint)
	for _, in := range ins {
		fr := &fileRun{in: in}
		path := statePath(in, o.StateDir, key)
		if !o.FromStart {
			cp, err := loadCheckpoint(path, in)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", in.path, err)
			}
			if cp != nil {
				fr.start = *cp
			}
		}
		if fr.start.PrefixLen == 0 || o.FromStart {
			n := min(in.size, prefixLen)
			h, err := prefixHash(in.abs, n)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", in.path, unwrapPathError(err))
			}
			skipped := 0
			if !o.FromStart {
				skipped = fr.start.Skipped
			}
			fr.start = checkpoint{Version: stateVersion, File: in.abs, Endpoint: safeEndpoint,
				PrefixLen: n, PrefixHash: h, Offset: fr.start.Offset, Line: fr.start.Line, Done: fr.start.Done, Skipped: skipped}
			if o.FromStart {
				fr.start.Offset, fr.start.Line, fr.start.Done = 0, 0, nil
			}
		}
		if o.DryRun {
			path = ""
		}
		fr.tr = newTracker(path, fr.start, o.CheckpointEvery)
		if o.AcceptSkipped {
			if t, ok := fr.tr.(*tracker); ok {
				t.accept()
			}
		}
		r.files = append(r.files, fr)
		left := in.size - fr.start.Offset
		// Lines done by earlier runs: sent, or skipped (start.Skipped of
		// them), which are counted apart.
		r.stats.alreadyLines.Add(int64(fr.start.Line - fr.start.Skipped))
		for _, s := range fr.start.Done {
			left -= s.End - s.Start
			r.stats.alreadyLines.Add(int64(s.Lines))
		}
		r.stats.total.Add(max(left, 0))
	}
	if o.StateDir != "" && !o.DryRun {
		if err := ensureDir(o.StateDir); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (r *run) run(parent context.Context) *Summary {
	r.ctx, r.cancel = context.WithCancelCause(parent)
	defer r.cancel(nil)
	r.failed, r.failCancel = context.WithCancelCause(context.WithoutCancel(parent))
	defer r.failCancel(nil)
	r.sum.init()
	r.stats.started = time.Now()

	chunks := make(chan *chunk, r.o.Concurrency)
	var wg sync.WaitGroup
	for range r.o.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range chunks {
				if r.ctx.Err() == nil {
					r.process(c)
				} // else stopping: not done, a resume sends it
				if c.big {
					<-r.big
				}
			}
		}()
	}
	progressDone, progressExited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(progressExited)
		if !r.quiet {
			r.progress(progressDone)
		}
	}()

	emit := func(c *chunk) bool {
		select {
		case chunks <- c:
			return true
		case <-r.ctx.Done():
			return false
		}
	}
	for _, fr := range r.files {
		if r.ctx.Err() != nil {
			break
		}
		if err := r.readFile(fr, emit); err != nil {
			r.fail(err)
		}
	}
	close(chunks)
	wg.Wait()
	close(progressDone)
	<-progressExited // nothing may write to Progress after Run returns

	s := r.sum.finish()
	s.Files = len(r.files)
	s.DryRun = r.o.DryRun
	s.AlreadySent = r.stats.alreadyLines.Load()
	s.Elapsed = time.Since(r.stats.started)
	s.Bytes = r.stats.bytes.Load()
	for _, fr := range r.files {
		if err := fr.tr.flush(); err != nil && s.Err == nil {
			s.Err = err
		}
		if r.o.AcceptSkipped {
			s.AcceptedEarlier += fr.start.Skipped
			s.AcceptedNow += fr.start.Skipped - fr.start.Accepted
		} else {
			s.SkippedEarlier += fr.start.Skipped - fr.start.Accepted
			s.AcceptedEarlier += fr.start.Accepted
		}
	}
	if cause := context.Cause(r.ctx); cause != nil && !errors.Is(cause, context.Canceled) && s.Err == nil {
		s.Err = cause
	}
	s.Stopped = parent.Err() != nil
	s.redact = r.out.redact
	s.Pending = r.pending
	r.out.clearBar()
	return s
}

// fail stops the replay for a reason that would fail every later request
// too (the backend refuses the token, stays down past the retry budget).
func (r *run) fail(err error) { r.cancel(err); r.failCancel(err) }

// process decodes one chunk, sends it and marks it done, unless the replay
// is stopping or failed (then the chunk stays undone for a resume).
func (r *run) process(c *chunk) {
	skipped := 0
	for i, p := range c.notes {
		r.sum.skip(c.noteSigs[i], p, !p.silent, r.out)
		if !p.silent {
			skipped++
		}
	}
	lineBytes := c.bytes // of the lines' JSON, which decode lets go of
	b, ranges, bad := r.decode(c)
	skipped += bad
	if len(ranges) > 0 {
		if r.o.Token != "" { // always, but for a backfill with no token to stamp
			resource.Stamp(b, "Authorization", r.o.Token)
		}
		delivered := false
		if !r.o.DryRun && len(c.lines) == 1 && lineBytes > int64(r.o.BatchBytes) && b.Items > 1 {
			delivered = r.deliverPieces(c, b, ranges[0].no, int(lineBytes), &skipped)
		} else {
			delivered = r.deliver(r.ctx, c, b, ranges, &skipped)
		}
		if !delivered {
			return
		}
	}
	c.file.tr.done(c.span, skipped)
	// Counted once done, so that a stopped run's count and the resumed
	// run's "sent by earlier runs" add up to the file.
	r.sum.lines(c.sig, int64(len(c.lines)))
}

// deliverPieces sends b, the one line no of lineBytes bytes of JSON, in
// requests of about BatchBytes of it each, and reports whether it is done
// (sent, or reported and skipped): false means the replay failed, or was
// stopped before the first piece went. Once a piece is sent the rest
// follow, stopping or not, so that a resume need not send the line again.
// Pieces the backend calls bad are reported, the line skipped once.
func (r *run) deliverPieces(c *chunk, b *pipeline.Batch, no, lineBytes int, skipped *int) bool {
	items := b.Items
	per := max(1, int(int64(items)*int64(r.o.BatchBytes)/int64(lineBytes)))
	n := (items + per - 1) / per
	buf := bufPool.Get()
	defer bufPool.Put(buf)
	ctx := r.ctx
	var bad []string
	for i, rest := 1, b; rest != nil; i++ {
		var p *pipeline.Batch
		p, rest = batch.Split(rest, per)
		if err := sink.EncodeRequest(p, r.comp, buf); err != nil {
			r.fail(fmt.Errorf("%s:%d: encoding: %w", c.file.in.path, no, err))
			return false
		}
		res, ok := r.post(ctx, p.Signal, buf.Bytes())
		if !ok {
			return false
		}
		ctx = r.failed // a piece went: the rest follow
		switch {
		case res.OK():
			r.sum.sent(p, res.Rejected)
			r.stats.items.Add(int64(p.Items))
			if res.Rejected > 0 {
				r.out.line(fmt.Sprintf("%s:%d (part %d of %d): the backend took the request but rejected %d items: %s",
					c.file.in.path, no, i, n, res.Rejected, res.PartialMessage))
			}
		case !r.keepRefused && (res.Status == http.StatusBadRequest || res.Status == http.StatusRequestEntityTooLarge):
			bad = append(bad, fmt.Sprintf("part %d of %d: %v", i, n, res.Err))
		default:
			r.fail(fmt.Errorf("the backend refused a request (%s:%d part %d of %d, %s): %w; check --endpoint and the token",
				c.file.in.path, no, i, n, b.Signal, res.Err))
			return false
		}
	}
	if len(bad) > 0 {
		detail := fmt.Sprintf("%d of the %d requests it was sent in: %s", len(bad), n, bad[0])
		r.sum.skip(b.Signal, problem{file: c.file.in.path, line: no, reason: reasonRejected, detail: detail, hasSig: true}, true, r.out)
		*skipped++
	}
	return true
}

// lineRange is the resources [from, to) of b that line no decoded to.
type lineRange struct {
	no       int
	from, to int
}

// decode turns the chunk's lines into one batch, reporting the lines that
// do not decode. It lets go of each line's JSON once decoded (the batch
// holds copies): a line of many megabytes is sent in pieces for as long
// as the backend takes them, and holding it too would double what the
// line costs.
func (r *run) decode(c *chunk) (*pipeline.Batch, []lineRange, int) {
	b := &pipeline.Batch{Signal: c.sig}
	var ranges []lineRange
	bad := 0
	for i := range c.lines {
		l := c.lines[i]
		c.lines[i].data = nil
		from := b.Len()
		var err error
		switch c.sig {
		case pipeline.Metrics:
			req, derr := otlpwire.DecodeMetrics(l.data)
			if err = derr; err == nil {
				b.Metrics = append(b.Metrics, req.ResourceMetrics...)
			}
		case pipeline.Traces:
			req, derr := otlpwire.DecodeTraces(l.data)
			if err = derr; err == nil {
				b.Traces = append(b.Traces, pipeline.TracesFromProto(req.ResourceSpans)...)
			}
		case pipeline.Logs:
			req, derr := otlpwire.DecodeLogs(l.data)
			if err = derr; err == nil {
				b.Logs = append(b.Logs, pipeline.LogsFromProto(req.ResourceLogs)...)
			}
		}
		if err != nil {
			p := problem{file: c.file.in.path, line: l.no, reason: reasonCorrupt, detail: err.Error(), hasSig: true}
			r.sum.skip(c.sig, p, true, r.out)
			bad++
			continue
		}
		if b.Len() > from {
			ranges = append(ranges, lineRange{no: l.no, from: from, to: b.Len()})
		}
	}
	b.Items = pipeline.CountItems(b) // messages: the lengths of their slices
	return b, ranges, bad
}

// sub is the part of b that ranges cover (contiguous: ranges are in order).
func sub(b *pipeline.Batch, from, to int) *pipeline.Batch {
	s := &pipeline.Batch{Signal: b.Signal}
	switch b.Signal {
	case pipeline.Metrics:
		s.Metrics = b.Metrics[from:to]
	case pipeline.Traces:
		s.Traces = b.Traces[from:to]
	case pipeline.Logs:
		s.Logs = b.Logs[from:to]
	}
	s.Items = pipeline.CountItems(s)
	return s
}

// bufPool holds the request bodies being encoded and sent.
var bufPool pool.Pool[bytes.Buffer]

// deliver sends b (the lines in ranges) and reports whether it is done:
// sent, or rejected as bad and skipped line by line. false means the replay
// is stopping or failed, and the lines stay unsent.
func (r *run) deliver(ctx context.Context, c *chunk, b *pipeline.Batch, ranges []lineRange, skipped *int) bool {
	if r.o.DryRun {
		r.sum.sent(b, 0)
		return true
	}
	buf := bufPool.Get()
	defer bufPool.Put(buf)
	if err := sink.EncodeRequest(b, r.comp, buf); err != nil {
		// Cannot happen for a decoded request; do not hide it if it does.
		r.fail(fmt.Errorf("%s:%d: encoding: %w", c.file.in.path, ranges[0].no, err))
		return false
	}
	res, ok := r.post(ctx, b.Signal, buf.Bytes())
	if !ok {
		return false
	}
	if res.OK() {
		r.sum.sent(b, res.Rejected)
		r.stats.items.Add(int64(b.Items))
		if res.Rejected > 0 {
			r.out.line(fmt.Sprintf("%s:%d-%d: the backend took the request but rejected %d items: %s",
				c.file.in.path, ranges[0].no, ranges[len(ranges)-1].no, res.Rejected, res.PartialMessage))
		}
		return true
	}
	if r.keepRefused || res.Status != http.StatusBadRequest && res.Status != http.StatusRequestEntityTooLarge {
		r.fail(fmt.Errorf("the backend refused a request (%s:%d, %s): %w; check --endpoint and the token",
			c.file.in.path, ranges[0].no, b.Signal, res.Err))
		return false
	}
	if len(ranges) == 1 {
		r.sum.skip(b.Signal, problem{file: c.file.in.path, line: ranges[0].no, reason: reasonRejected, detail: res.Err.Error(), hasSig: true}, true, r.out)
		*skipped++
		return true
	}
	// Find the bad lines: send each line on its own.
	for _, lr := range ranges {
		if !r.deliver(ctx, c, sub(b, lr.from, lr.to), []lineRange{{no: lr.no, from: 0, to: lr.to - lr.from}}, skipped) {
			return false
		}
	}
	return true
}

// post sends one body with retries. ok is false when ctx is done (the
// replay is stopping or failed) or the replay failed (retries exhausted:
// then it fails the replay). A stop does not cut a request in flight: it
// may have reached the backend, and only its answer says whether its lines
// are done.
func (r *run) post(ctx context.Context, sig pipeline.Signal, body []byte) (sink.Result, bool) {
	bo := r.o.Retry.Backoff()
	for {
		if err := r.lim.Wait(ctx); err != nil {
			return sink.Result{}, false
		}
		reqCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.o.Timeout)
		res := r.send(reqCtx, sig, body)
		cancel()
		r.stats.requests.Add(1)
		r.sum.request(sig)
		if res.OK() || !res.Retryable {
			return res, true
		}
		delay, ok := bo.Next(res.RetryAfter)
		if !ok {
			r.fail(fmt.Errorf("the backend did not take a %s request for %s: %w", sig, bo.Elapsed().Round(time.Second), res.Err))
			return res, false
		}
		r.sum.retry(sig)
		if !r.quiet {
			r.out.note(fmt.Sprintf("retrying a %s request in %s: %v", sig, delay.Round(time.Millisecond), res.Err))
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return res, false
		}
	}
}

// postExport posts body to the signal's URL with the replay's headers.
func (r *run) postExport(ctx context.Context, sig pipeline.Signal, body []byte) sink.Result {
	return sink.Post(ctx, r.o.Client, sink.Export{Signal: sig, URL: r.urls[sig], Headers: r.headers, Encoding: r.comp.Encoding(), Body: body, Redact: r.out.redact})
}

// progressStats are the progress display's counters.
type progressStats struct {
	started                       time.Time
	total                         atomic.Int64 // bytes to read
	bytes, lines, items, requests atomic.Int64
	alreadyLines                  atomic.Int64
}

// NormalizeEndpoint is the one spelling of a backend's base URL that names
// its delivery record and replay checkpoints: the exporter's endpoint and
// a replay's --endpoint find the same record however each is written.
// Scheme and host are lower-cased, a default port (80, 443) and trailing
// slashes dropped; the userinfo, query and fragment are left out (they
// may hold credentials, and do not change where requests go).
func NormalizeEndpoint(s string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("%q: want an http:// or https:// URL", redactedURL(s))
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("%q: want an http:// or https:// URL", redactedURL(s))
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	n := url.URL{Scheme: u.Scheme, Host: host, Path: strings.TrimRight(u.Path, "/")}
	if u.RawPath != "" {
		n.RawPath = strings.TrimRight(u.RawPath, "/")
	}
	return n.String(), nil
}

func redactedURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User = nil
	return u.String()
}
