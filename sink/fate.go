package sink

import (
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/otelstep/otelstep/pipeline"
)

// Fate is what became of one batch the HTTP sink took: delivered, or left
// for the backfill (and `otelstep replay`) to send from the JSONL file, for
// one reason. Every batch the sink takes ends in exactly one fate, decided
// in one place (HTTP.settle), which counts it (HTTPStats, the telemetry)
// and tells its DeliveryRecord: the counts of the fates add up to what the
// sink took by construction.
type Fate uint8

// The fates.
const (
	// Delivered: the backend answered 2xx.
	Delivered Fate = iota
	// LeftQueueFull: dropped, the oldest, from a full queue.
	LeftQueueFull
	// LeftBackendDown: the backend did not take it (no answer, 5xx, 429)
	// before its retries ran out.
	LeftBackendDown
	// LeftRefused: the backend refused it with an answer that would be the
	// same again (400, 401, 403, 413, ...): a backfill does not send it
	// again by itself; `otelstep replay` does, once what was wrong is put
	// right (the token, say). A batch that could not be encoded is counted
	// here too.
	LeftRefused
	// LeftAtStop: still queued, in flight or waiting to be retried when
	// the exporter's time at stop ran out.
	LeftAtStop

	numFates
)

// String is the fate's name in logs and the stop line.
func (f Fate) String() string {
	switch f {
	case Delivered:
		return "delivered"
	case LeftQueueFull:
		return "queue_full"
	case LeftBackendDown:
		return "backend_down"
	case LeftRefused:
		return "backend_refused"
	case LeftAtStop:
		return "unsent_at_stop"
	}
	return fmt.Sprintf("fate(%d)", uint8(f))
}

// Fates lists every fate, Delivered first.
func Fates() []Fate {
	return []Fate{Delivered, LeftQueueFull, LeftBackendDown, LeftRefused, LeftAtStop}
}

// FateCount is the batches and items of one fate.
type FateCount struct {
	Batches, Items uint64
}

// Backlog is what waits in the JSONL files for an exporter's backend, in
// two parts: what the backfill will send by itself (the backend was down,
// the queue full, or the run stopped), and what the backend refused, which
// the backfill does not send again: it is left for `otelstep replay`, once
// what was wrong is put right.
type Backlog struct {
	ToBackfill, ForReplay Lines
}

// Lines is lines of a JSONL file (one a batch), their bytes, and their
// items where known (the lines an earlier run left are counted in Batches
// and Bytes only).
type Lines struct {
	Batches int
	Bytes   int64
	Items   int64
}

// Add is l and m together.
func (l Lines) Add(m Lines) Lines {
	return Lines{Batches: l.Batches + m.Batches, Bytes: l.Bytes + m.Bytes, Items: l.Items + m.Items}
}

// Add is b and c together.
func (b Backlog) Add(c Backlog) Backlog {
	return Backlog{ToBackfill: b.ToBackfill.Add(c.ToBackfill), ForReplay: b.ForReplay.Add(c.ForReplay)}
}

// Total is both parts together: all the backend has not got.
func (b Backlog) Total() Lines { return b.ToBackfill.Add(b.ForReplay) }

// The exporter's states in HTTPStatus.
const (
	StateOK      = "ok"
	StateFailing = "failing" // no answer, or one to retry (5xx, 429)
	StateRefused = "refused" // an answer that will not change (401, 400, ...)
)

// HTTPStatus is the exporter's state for the status document and the logs.
type HTTPStatus struct {
	// State is StateOK, StateFailing or StateRefused: the latest request's
	// outcome.
	State string
	// Since is when the state began: the first failure of the run of
	// failures, or the first 2xx after one (zero: ok since the start).
	Since time.Time
	// LastError is the latest failure (zero status: no answer), redacted
	// and cut, "" when none yet.
	LastError  string
	LastStatus int
	// LastSignal is the signal of the request LastError is of: one
	// exporter serves every pipeline that lists it, and its state is its
	// latest request's, whatever the signal.
	LastSignal pipeline.Signal
	// LastErrorAt is when LastError happened.
	LastErrorAt time.Time
	// QueueBatches, QueueItems and QueueBytes wait in the live queue.
	QueueBatches, QueueItems int
	QueueBytes               int64
	// Backlog is what waits in the JSONL files: to be backfilled, and left
	// for replay.
	Backlog Backlog
}

// outage follows the exporter's requests: a run of failures is logged once
// at its start (WARN), once when what fails changes (down, then refused),
// in a summary every period while it lasts, and at its end (INFO). A run
// that starts less than a period after the last failure (a backend that
// flaps) is not logged at its start nor its end: the period's summary
// tells of it (the failed requests and runs of failures since the last
// summary), one line a period while the backend flaps, and once a whole
// period passes without a failure, an INFO says delivery works again.
type outage struct {
	// began has a value when a run of failures begins with a WARN, so
	// that the reporter's periods start at it, not at the exporter's
	// start.
	began    chan struct{}
	mu       sync.Mutex
	state    string
	since    time.Time
	lastErr  string
	lastCode int
	lastSig  pipeline.Signal
	lastAt   time.Time
	failures uint64 // requests failed in this run of failures
	warned   bool   // this run's start (or change) was logged
	// Since the last summary: requests failed and runs of failures
	// begun, over every run; periodFrom is the first of those failures.
	periodFailures, periodRuns uint64
	periodFrom                 time.Time
	// untold: a run of failures ended without its INFO (it was not
	// WARNed: the backend flaps); the INFO comes once a period passes
	// without a failure.
	untold bool
}

// failureState is the state a failed result puts the exporter in.
func failureState(res Result) string {
	if res.Retryable {
		return StateFailing
	}
	return StateRefused
}

// observe follows the result of one request to the backend, logging the
// changes of state.
func (h *HTTP) observe(sig pipeline.Signal, res Result) {
	o := &h.out
	now := time.Now()
	o.mu.Lock()
	if res.OK() {
		if o.state == StateOK || o.state == "" {
			o.state = StateOK
			o.mu.Unlock()
			return
		}
		was, since, failures, warned := o.state, o.since, o.failures, o.warned
		o.state, o.since, o.failures, o.warned = StateOK, now, 0, false
		if !warned {
			o.untold = true
			o.mu.Unlock()
			return
		}
		if o.periodRuns == 1 {
			// This run alone failed since the last summary, and this
			// INFO tells all of it.
			o.periodFailures, o.periodRuns, o.periodFrom = 0, 0, time.Time{}
		}
		o.mu.Unlock()
		bl := h.backlog()
		h.log.Info("otlp/http exporter: delivery works again", "endpoint", h.safeURL[sig], "was", was,
			"down_for", now.Sub(since).Round(time.Millisecond).String(), "failed_requests", failures,
			"to_backfill_batches", bl.ToBackfill.Batches, "to_backfill_bytes", bl.ToBackfill.Bytes,
			"left_for_replay_batches", bl.ForReplay.Batches, "left_for_replay_bytes", bl.ForReplay.Bytes)
		return
	}
	st := failureState(res)
	msg := res.Err.Error()
	changed := st != o.state || (st == StateRefused && res.Status != o.lastCode)
	first := o.state == StateOK || o.state == ""
	// A run that begins less than a period after the last failure (a
	// backend that flaps) is told by the summaries, not by its own WARN.
	flap := first && !o.lastAt.IsZero() && now.Sub(o.lastAt) < h.o.ReportEvery
	if first {
		o.since, o.failures, o.warned = now, 0, false
	}
	o.state, o.lastErr, o.lastCode, o.lastSig, o.lastAt = st, msg, res.Status, sig, now
	o.failures++
	if o.periodFailures == 0 {
		o.periodFrom = now
	}
	o.periodFailures++
	if first {
		o.periodRuns++
	}
	if changed && flap {
		changed = false
	}
	if changed {
		o.warned = true
		if first {
			o.untold = false // this run's INFO tells the end of the earlier ones
		}
	}
	o.mu.Unlock()
	if first && changed {
		select {
		case o.began <- struct{}{}:
		default:
		}
	}
	if !changed {
		return
	}
	args := []any{"endpoint", h.safeURL[sig], "signal", sig.String(), "status", res.Status, "error", msg}
	if hint := h.hint(res.Status); hint != "" {
		args = append(args, "check", hint)
	}
	switch {
	case first && st == StateRefused:
		h.log.Warn("otlp/http exporter: the backend refuses the export; what it refuses is left in the JSONL for `otelstep replay`", args...)
	case first:
		h.log.Warn("otlp/http exporter: export failed; retrying, and what cannot wait is left in the JSONL for the backfill", args...)
	case st == StateRefused:
		h.log.Warn("otlp/http exporter: the backend now refuses the export; what it refuses is left in the JSONL for `otelstep replay`", args...)
	default:
		h.log.Warn("otlp/http exporter: the backend now fails the export; retrying", args...)
	}
}

// hint says what to check for an answer of status, "" when nothing
// particular.
func (h *HTTP) hint(status int) string {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden:
		if v := h.o.TokenEnv; v != "" {
			return fmt.Sprintf("the ingest token: the environment variable %s (the exporter's headers) must hold a token the backend takes", v)
		}
		return "the ingest token in the exporter's headers: the backend does not take it"
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		return "the exporter's endpoint: the backend has no OTLP/HTTP path there"
	case http.StatusRequestEntityTooLarge:
		return "the backend's request size limit: send_batch_max_size may be lowered"
	}
	return ""
}

// report logs, every ReportEvery, the summary of what failed since the
// last one: while a run of failures goes on, or when runs of failures came
// and went (a backend that flaps). Once a whole period passes without a
// failure after runs that were not WARNed, it logs their recovery at INFO.
func (h *HTTP) report() {
	o := &h.out
	now := time.Now()
	o.mu.Lock()
	failing := o.state != StateOK && o.state != ""
	st, since, lastErr, code := o.state, o.since, o.lastErr, o.lastCode
	failures, runs, from := o.periodFailures, o.periodRuns, o.periodFrom
	if !failing && failures == 0 {
		untold := o.untold
		o.untold = false
		o.mu.Unlock()
		if untold {
			bl := h.backlog()
			h.log.Info("otlp/http exporter: delivery works again", "was", "flapping",
				"ok_for", h.o.ReportEvery.String(), "to_backfill_batches", bl.ToBackfill.Batches, "to_backfill_bytes", bl.ToBackfill.Bytes,
				"left_for_replay_batches", bl.ForReplay.Batches, "left_for_replay_bytes", bl.ForReplay.Bytes)
		}
		return
	}
	o.periodFailures, o.periodRuns, o.periodFrom = 0, 0, time.Time{}
	o.mu.Unlock()
	if failing && failures == 0 && now.Sub(since) < h.o.ReportEvery {
		return // its WARN was less than a period ago
	}
	s := h.Status()
	var left [numFates]uint64
	for _, f := range Fates() {
		left[f] = h.fateTotal(f).Items
	}
	msg := "otlp/http exporter: delivery still failing"
	args := []any{"state", st}
	if failing {
		args = append(args, "failing_since", since.UTC().Format(time.RFC3339),
			"for", now.Sub(since).Round(time.Second).String())
	} else {
		msg = "otlp/http exporter: delivery failing on and off"
		args = append(args, "first_failure_at", from.UTC().Format(time.RFC3339))
	}
	args = append(args, "failed_requests", failures, "failure_runs", runs,
		"queue_items", s.QueueItems, "queue_bytes", s.QueueBytes,
		"to_backfill_batches", s.Backlog.ToBackfill.Batches, "to_backfill_bytes", s.Backlog.ToBackfill.Bytes,
		"left_for_replay_batches", s.Backlog.ForReplay.Batches, "left_for_replay_bytes", s.Backlog.ForReplay.Bytes,
		"left_queue_full_items", left[LeftQueueFull], "left_backend_down_items", left[LeftBackendDown],
		"left_refused_items", left[LeftRefused],
		"last_status", code, "last_error", lastErr)
	if hint := h.hint(code); hint != "" {
		args = append(args, "check", hint)
	}
	h.log.Warn(msg, args...)
}

// Status returns the exporter's state: whether its latest request was
// delivered, since when, the last error, what waits in its queue and what
// waits in the JSONL files to be backfilled.
func (h *HTTP) Status() HTTPStatus {
	o := &h.out
	o.mu.Lock()
	s := HTTPStatus{State: o.state, Since: o.since, LastError: o.lastErr, LastStatus: o.lastCode, LastSignal: o.lastSig, LastErrorAt: o.lastAt}
	o.mu.Unlock()
	if s.State == "" {
		s.State = StateOK
	}
	h.mu.Lock()
	s.QueueBatches, s.QueueItems, s.QueueBytes = h.queueBatches, h.queueItems, h.bytes
	h.mu.Unlock()
	for i := range h.open {
		o := &h.open[i]
		o.mu.Lock()
		if o.bd != nil {
			s.QueueBatches += len(o.bd.batches)
			s.QueueItems += o.bd.items
			s.QueueBytes += int64(o.bd.buf.Cap())
		}
		o.mu.Unlock()
	}
	s.Backlog = h.backlog()
	return s
}

// AddBacklog has the exporter count what backlog returns (a delivery
// record's lines left to send) in its status and logs. Call it before
// Start.
func (h *HTTP) AddBacklog(backlog func() Backlog) {
	h.backlogMu.Lock()
	h.backlogs = append(h.backlogs, backlog)
	h.backlogMu.Unlock()
}

// backlog is what waits to be backfilled, over every record.
func (h *HTTP) backlog() Backlog {
	h.backlogMu.Lock()
	fns := h.backlogs
	h.backlogMu.Unlock()
	var b Backlog
	for _, fn := range fns {
		b = b.Add(fn())
	}
	return b
}

// reporter logs report every ReportEvery until the sink stops, the
// periods counted from the start of each run of failures: the first
// summary comes a period after its WARN, not up to two.
func (h *HTTP) reporter() {
	defer h.wg.Done()
	t := time.NewTimer(h.o.ReportEvery)
	defer t.Stop()
	for {
		select {
		case <-h.out.began:
			t.Reset(h.o.ReportEvery)
		case <-t.C:
			h.report()
			t.Reset(h.o.ReportEvery)
		case <-h.stopCh:
			return
		}
	}
}
