package backfill

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/otelstep/otelstep/pipeline"
	"github.com/otelstep/otelstep/redact"
	"github.com/otelstep/otelstep/replay"
	"github.com/otelstep/otelstep/sink"
)

// Exporter is the live OTLP/HTTP exporter a backfill sends through
// (*sink.HTTP).
type Exporter interface {
	// WaitIdle waits until nothing waits in the live queue, or ctx is done.
	WaitIdle(ctx context.Context) error
	// PostBackfill posts one export request once, as the exporter posts
	// its own.
	PostBackfill(ctx context.Context, sig pipeline.Signal, body []byte) sink.Result
	// Compression is how its requests are compressed; a backfill
	// compresses as it does.
	Compression() sink.Compression
	// Answered is closed at the next 2xx answer to a live request.
	Answered() <-chan struct{}
}

// Options configures Run.
type Options struct {
	Record   *replay.Record
	Exporter Exporter
	// Token is stamped as the Authorization resource attribute of every
	// resource sent, as replay stamps its token ("" stamps nothing). It is
	// never logged.
	Token string
	// Secrets are hidden, with Token, in what is logged.
	Secrets []string
	// Rate caps requests per second, retries included; default 4.
	Rate float64
	// BatchBytes bounds the JSON bytes of the lines in one request (a
	// longer line is sent in pieces of about that much, as replay sends
	// it); default 1 MiB. With one request at a time, it bounds the
	// backfill's memory beside the live queue's.
	BatchBytes int
	// Retry: how long one round keeps retrying a request before it
	// pauses; InitialInterval default 1s, MaxInterval 30s, MaxElapsedTime
	// 1m.
	Retry sink.RetryOptions
	// Pause is the first wait after a round failed, doubled after each
	// failure up to 5 minutes, unless the live exporter is answered
	// first; default 30s.
	Pause  time.Duration
	Logger *slog.Logger
}

const maxPause = 5 * time.Minute

// Run sends what the exporter did not deliver of the record's file
// until ctx is done: each range it gave up on, oldest first, read back
// from the file and sent as replay sends it (stamped from Token, grouped
// into requests of BatchBytes, a line that does not decode reported and
// skipped), one request at a time at most Rate a second, each once the
// live queue is empty. Each range sent is marked done in the record.
//
// A request the backend does not take is retried for Retry.MaxElapsedTime;
// then the backfill pauses until the live exporter's next 2xx answer (the
// backend is back) or Pause, whichever is first. A request the backend
// refuses (401, 400: an answer that would be the same again) is not sent
// again: what the round had left is recorded as refused, left to
// `otelstep replay`, and no line is skipped. When ctx is done, the
// request in flight is cut short and its lines stay in the record as not
// delivered (at least once: the backend may have taken them).
func Run(ctx context.Context, o Options) {
	if o.Rate <= 0 {
		o.Rate = 4
	}
	if o.BatchBytes <= 0 {
		o.BatchBytes = 1 << 20
	}
	if o.Retry.InitialInterval <= 0 {
		o.Retry.InitialInterval = time.Second
	}
	if o.Retry.MaxInterval <= 0 {
		o.Retry.MaxInterval = 30 * time.Second
	}
	if o.Retry.MaxElapsedTime <= 0 {
		o.Retry.MaxElapsedTime = time.Minute
	}
	if o.Pause <= 0 {
		o.Pause = 30 * time.Second
	}
	lg := o.Logger
	if lg == nil {
		lg = slog.Default()
	}
	rec := o.Record
	lg = lg.With("file", rec.File())
	red := redact.New(append([]string{o.Token}, o.Secrets...)...)
	pause := o.Pause
	paused := false
	for ctx.Err() == nil {
		if rec.Pending() == 0 {
			select {
			case <-rec.Wake():
				continue
			case <-ctx.Done():
				return
			}
		}
		if rec.FileReplaced() {
			lg.Error("backfill: the file is not the one otelstep opened (moved, replaced or removed); not backfilling it: `otelstep replay` sends what never arrived")
			return
		}
		answered := o.Exporter.Answered()
		sum, refused := round(ctx, o, lg, red)
		if c, ok := o.Exporter.(interface{ Backfilled(pipeline.Signal, int) }); ok {
			for sig, ss := range sum.Signals {
				c.Backfilled(pipeline.Signal(sig), int(ss.Items))
			}
		}
		if ctx.Err() != nil {
			return
		}
		sent := sum.Signals[0].Lines + sum.Signals[1].Lines + sum.Signals[2].Lines
		if refused != 0 {
			lines, bytes := rec.RefusePending(refused)
			lg.Warn("backfill: the backend refuses what it sends; the rest is left in the file for `otelstep replay`",
				"status", refused, "sent_lines", sent, "left_lines", lines, "left_bytes", bytes, "error", red.Replace(sum.Err.Error()))
			pause, paused = o.Pause, false
			continue
		}
		if sum.Err == nil {
			if sent > 0 {
				lg.Info("backfill: sent what the exporter had not delivered", "lines", sent, "requests", sum.Requests(),
					"items", sum.Items(), "skipped", sum.Failures(), "elapsed", sum.Elapsed.Round(time.Millisecond))
			}
			pause, paused = o.Pause, false
			continue
		}
		if !paused {
			lg.Debug("backfill: paused; it resumes when the backend answers the exporter again",
				"sent_lines", sent, "error", red.Replace(sum.Err.Error()))
			paused = true
		}
		t := time.NewTimer(pause/2 + rand.N(pause+1)) // ±50%: the files' backfills apart
		select {
		case <-answered:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
		t.Stop()
		pause = min(2*pause, maxPause)
	}
}

// round sends what the record holds to backfill once through, as one
// replay run (replay.Record.Resend). refused is the status of an answer
// that refused a request (it ended the round), 0 when none did.
func round(ctx context.Context, o Options, lg *slog.Logger, red *redact.Redactor) (sum *replay.Summary, refused int) {
	exp := o.Exporter
	// Each attempt first waits for the live queue to empty (not counted
	// against the request's retries), and ends when ctx does: at a stop
	// a request in flight is not waited for.
	post := func(reqCtx context.Context, sig pipeline.Signal, body []byte) sink.Result {
		if err := exp.WaitIdle(ctx); err != nil {
			return sink.Result{Err: err} // stopping: not retried
		}
		reqCtx, cancel := context.WithCancel(reqCtx)
		defer cancel()
		stop := context.AfterFunc(ctx, cancel)
		defer stop()
		res := exp.PostBackfill(reqCtx, sig, body)
		switch {
		case !res.OK() && ctx.Err() != nil:
			res.Retryable = false // stopping: not retried, and not done
		case !res.OK() && !res.Retryable && res.Status != 0:
			refused = res.Status
		}
		return res
	}
	sum = o.Record.Resend(ctx, replay.ResendOptions{Token: o.Token, BatchBytes: o.BatchBytes, Rate: o.Rate, Retry: o.Retry,
		Compression: exp.Compression(), Post: post, Report: logWriter{lg}, Redact: red})
	return sum, refused
}

// logWriter logs what a replay run reports (a skipped line, as
// FILE:LINE: reason), a line at a time.
type logWriter struct{ log *slog.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	for _, l := range strings.Split(string(bytes.TrimRight(p, "\n")), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			w.log.Warn(fmt.Sprintf("backfill: %s", l))
		}
	}
	return len(p), nil
}
