package otlpin

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/otelstep/otelstep/pipeline"
	"github.com/otelstep/otelstep/telemetry"
)

// Refused requests: counted, logged and shown, in one place.
//
// Every request the receiver answers with an error goes through
// Receiver.refuse, whatever refused it (the path, the method, the content
// type or encoding, the size, the body's decoding, the byte budget, the
// pipeline) and over either transport. It counts the request by signal,
// transport and reason (otelstep_receiver_refused_requests; the items of
// a batch the pipeline refused are counted by deliver as
// otelcol_receiver_refused_*, since only a decoded request's items are
// known), keeps the reason's last refusal for Status, and logs: the first
// refusal of each reason at WARN, with the peer and the error; after that
// at most once a report period (Options.RefusalReportPeriod), counted from
// the reason's own last line (its first WARN, then its last report), a WARN per
// reason with the count since the last line; nothing while none comes; at
// Shutdown, the count not yet reported. A client that sends one bad request
// a second thus costs a line a minute, and the first line says what is
// wrong.
//
// A request is counted before it is answered, except a gRPC message gRPC
// itself refuses as it reads it (over its size, not decompressed): gRPC
// writes that answer in RecvMsg and only then hands the error to the
// export handler, which counts it. The count then follows the answer by a
// moment.

// Reason is why a request was refused: the reason attribute of
// otelstep_receiver_refused_requests, and the key of the log lines and of
// Status.
type Reason string

// The reasons, with the answers they go with.
const (
	ReasonUnknownPath     Reason = "unknown_path"     // HTTP 404: not an OTLP path
	ReasonNoPipeline      Reason = "no_pipeline"      // HTTP 404, gRPC UNIMPLEMENTED: the signal has no pipeline
	ReasonMethod          Reason = "method"           // HTTP 405
	ReasonContentType     Reason = "content_type"     // HTTP 415
	ReasonContentEncoding Reason = "content_encoding" // HTTP 415
	ReasonTooLarge        Reason = "too_large"        // HTTP 413, gRPC RESOURCE_EXHAUSTED
	ReasonDecompress      Reason = "decompress"       // HTTP 400, gRPC INTERNAL: the body does not decompress
	ReasonDecode          Reason = "decode"           // HTTP 400, gRPC INVALID_ARGUMENT: not an export request
	ReasonOverBudget      Reason = "over_budget"      // HTTP 503, gRPC UNAVAILABLE: the byte budget of requests in flight is spent
	ReasonRetryLater      Reason = "retry_later"      // HTTP 503, gRPC UNAVAILABLE: the pipeline is full, stopping, or a JSONL file cannot be written
	ReasonPipelineFailed  Reason = "pipeline_failed"  // HTTP 500, gRPC INTERNAL
	ReasonPeerConnections Reason = "peer_connections" // a connection closed at once: its peer holds its share of the listener, all busy (limit.go)
)

// Why a listener closed an idle connection to make room (limit.go): not a
// refused request, logged as one.
const (
	evictedListenerFull Reason = "listener_full"
	evictedPeerShare    Reason = "peer_share"
)

// DefaultRefusalReportPeriod is Options.RefusalReportPeriod unset.
const DefaultRefusalReportPeriod = time.Minute

// maxErrorText bounds an error's text as logged and shown: a decoder's
// error can quote much of a request.
const maxErrorText = 512

// refusal is one refused request.
type refusal struct {
	signal string // a pipeline.Signal's name, "unknown" when not known
	tr     telemetry.Transport
	reason Reason
	remote string // the peer's address
	answer string // "HTTP 415", "gRPC InvalidArgument"
	err    string // what the sender was told, or why
}

// signalName is sig's name for a refusal.
func signalName(sig pipeline.Signal, known bool) string {
	if !known {
		return "unknown"
	}
	return sig.String()
}

func transportName(tr telemetry.Transport) string {
	if tr == telemetry.GRPC {
		return "grpc"
	}
	return "http"
}

// refuse counts, keeps and logs f (see above).
func (r *Receiver) refuse(f refusal) {
	f.err = cut(r.redact(f.err), maxErrorText)
	r.opts.Telemetry.RefusedRequest(f.signal, f.tr, string(f.reason))
	r.refusals.add(f, time.Now())
}

// redact hides the secrets in s (Options.Redact).
func (r *Receiver) redact(s string) string {
	if r.opts.Redact == nil {
		return s
	}
	return r.opts.Redact(s)
}

// cut shortens s to at most n bytes, at a rune boundary, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// refusals is a receiver's record of its refused requests, by reason.
// The connections its listeners close to make room (limit.go) are kept
// in one of their own, logged the same way with messages of their own.
type refusals struct {
	log          *slog.Logger
	first, still string // the messages of the first line of a reason, and of the reports
	mu           sync.Mutex
	by           map[Reason]*refusalCount
	// period and wake are set by runReports: wake is told when a reason
	// has a refusal to report and had none, so the reporter can time its
	// line a period after the reason's last one.
	period time.Duration
	wake   chan struct{}
}

// refusalCount is one reason's record.
type refusalCount struct {
	total      uint64
	unreported uint64 // since the last line logged
	// due is when unreported may be logged: a period after the reason's
	// last line, or, when it had been quiet longer than that, a period
	// after the refusal that ended the quiet.
	due      time.Time
	lastLine time.Time // the reason's last line logged
	first    time.Time
	last     refusal
	lastAt   time.Time
}

// The messages of refused requests' lines.
const (
	msgFirstRefusal = "OTLP request refused; more of this reason are counted and reported at most once a period"
	msgStillRefused = "OTLP requests still refused"
)

func newRefusals(log *slog.Logger, first, still string) *refusals {
	return &refusals{log: log, first: first, still: still, by: map[Reason]*refusalCount{}}
}

// add records f, refused at now; the first of its reason is logged.
func (t *refusals) add(f refusal, now time.Time) {
	t.mu.Lock()
	c := t.by[f.reason]
	first := c == nil
	wake := false
	if first {
		c = &refusalCount{first: now, lastLine: now}
		t.by[f.reason] = c
	} else {
		if c.unreported == 0 {
			c.due = c.lastLine.Add(t.period)
			if c.due.Before(now) {
				c.due = now.Add(t.period)
			}
			wake = t.wake != nil
		}
		c.unreported++
	}
	c.total++
	c.last, c.lastAt = f, now
	w := t.wake
	t.mu.Unlock()
	if wake {
		select {
		case w <- struct{}{}:
		default:
		}
	}
	if first {
		t.log.Warn(t.first,
			"reason", string(f.reason), "signal", f.signal, "transport", transportName(f.tr), "remote", f.remote, "answer", f.answer, "error", f.err)
	}
}

// report logs, for each reason refused since its last line whose report
// is due at now (every one when all), how many, within how long, and the
// last one. It returns when the next report is due, zero when none waits.
func (t *refusals) report(now time.Time, all bool) (next time.Time) {
	type line struct {
		reason Reason
		n      uint64
		within time.Duration
		total  uint64
		last   refusal
	}
	var lines []line
	t.mu.Lock()
	for reason, c := range t.by {
		if c.unreported == 0 {
			continue
		}
		if !all && now.Before(c.due) {
			if next.IsZero() || c.due.Before(next) {
				next = c.due
			}
			continue
		}
		lines = append(lines, line{reason, c.unreported, now.Sub(c.lastLine), c.total, c.last})
		c.unreported, c.lastLine = 0, now
	}
	t.mu.Unlock()
	slices.SortFunc(lines, func(a, b line) int { return strings.Compare(string(a.reason), string(b.reason)) })
	for _, l := range lines {
		t.log.Warn(t.still, "reason", string(l.reason), "count", l.n, "within", l.within.Round(time.Millisecond).String(), "total", l.total,
			"last_signal", l.last.signal, "last_transport", transportName(l.last.tr), "last_remote", l.last.remote, "last_answer", l.last.answer, "last_error", l.last.err)
	}
	return next
}

// runReports reports each of ts's reasons a period after its last line
// (see report) until ctx ends, then once more for what came after the
// last reports.
func runReports(ctx context.Context, period time.Duration, ts ...*refusals) {
	wake := make(chan struct{}, 1)
	for _, t := range ts {
		t.mu.Lock()
		t.period, t.wake = period, wake
		for _, c := range t.by {
			c.due = c.lastLine.Add(period) // refused before the period was known
		}
		t.mu.Unlock()
	}
	timer := time.NewTimer(period)
	defer timer.Stop()
	for {
		now := time.Now()
		var next time.Time
		for _, t := range ts {
			if d := t.report(now, false); !d.IsZero() && (next.IsZero() || d.Before(next)) {
				next = d
			}
		}
		timer.Stop()
		var fire <-chan time.Time
		if !next.IsZero() {
			timer.Reset(next.Sub(now))
			fire = timer.C
		}
		select {
		case <-ctx.Done():
			for _, t := range ts {
				t.report(time.Now(), true)
			}
			return
		case <-fire:
		case <-wake:
		}
	}
}

// RefusalStatus is one reason's refusals, for a status document.
type RefusalStatus struct {
	Reason    Reason    `json:"reason"`
	Count     uint64    `json:"count"`
	First     time.Time `json:"first"`
	Last      time.Time `json:"last"`
	Signal    string    `json:"last_signal"`
	Transport string    `json:"last_transport"`
	Remote    string    `json:"last_remote"`
	Answer    string    `json:"last_answer"`
	Error     string    `json:"last_error"`
}

// status is the record, by reason.
func (t *refusals) status() []RefusalStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]RefusalStatus, 0, len(t.by))
	for reason, c := range t.by {
		out = append(out, RefusalStatus{Reason: reason, Count: c.total, First: c.first, Last: c.lastAt,
			Signal: c.last.signal, Transport: transportName(c.last.tr), Remote: c.last.remote, Answer: c.last.answer, Error: c.last.err})
	}
	slices.SortFunc(out, func(a, b RefusalStatus) int { return strings.Compare(string(a.Reason), string(b.Reason)) })
	return out
}
