package replay

import (
	"context"
	"io"
	"os"
	"time"

	"golang.org/x/time/rate"

	"github.com/otelstep/otelstep/pipeline"
	"github.com/otelstep/otelstep/redact"
	"github.com/otelstep/otelstep/sink"
)

// What otelstep's live backfill (package backfill) sends through: the
// ranges its delivery record holds as given up on, read back from the
// file and sent as a replay sends lines. The backfill decides when (its
// pauses, the live queue being empty) and posts each request through the
// live exporter; the reading, grouping, stamping and recording are
// replay's, in one place for both.

// ResendOptions configures Record.Resend.
type ResendOptions struct {
	// Token is stamped as the Authorization resource attribute of every
	// resource sent ("" stamps nothing).
	Token string
	// BatchBytes bounds the JSON bytes of the lines in one request (a
	// longer line is sent in pieces of about that much).
	BatchBytes int
	// Rate caps requests per second, retries included.
	Rate float64
	// Retry: how long a request is retried before the round ends with
	// its error.
	Retry sink.RetryOptions
	// Compression is how the requests are compressed.
	Compression sink.Compression
	// Post posts one request once. A Result that is neither OK nor
	// Retryable ends the round (a refused request is not skipped: its
	// lines stay undone, for the caller to decide).
	Post func(ctx context.Context, sig pipeline.Signal, body []byte) sink.Result
	// Report receives the lines skipped (FILE:LINE: reason), redacted
	// with Redact.
	Report io.Writer
	Redact *redact.Redactor
}

// Resend sends once through, oldest first, the lines of the record's
// file that the exporter gave up on (Pending), marking each chunk done in
// the record as it is sent, and returns the round's summary. One request
// is in flight at a time. A line that does not decode is reported and
// skipped, as replay does; a request the backend refuses (an answer
// neither OK nor retryable, 400 and 413 included: no line is skipped for
// it) ends the round, its lines left undone.
func (r *Record) Resend(ctx context.Context, o ResendOptions) *Summary {
	rn := &run{
		o: Options{Token: o.Token, BatchBytes: o.BatchBytes, MaxLineBytes: DefaultMaxLineBytes, Concurrency: 1,
			Timeout: 24 * time.Hour, Retry: o.Retry, Progress: o.Report},
		lim:         rate.NewLimiter(rate.Limit(o.Rate), 1),
		out:         &output{w: o.Report, redact: o.Redact},
		big:         make(chan struct{}, 1),
		comp:        o.Compression,
		send:        o.Post,
		quiet:       true,
		keepRefused: true,
	}
	for _, s := range r.pending() {
		rn.files = append(rn.files, &fileRun{in: r.in, start: checkpoint{Offset: s.Start, Line: s.FirstLine - 1}, end: s.End, tr: r})
	}
	return rn.run(ctx)
}

// Pending is how many lines are to backfill: the exporter gave up on them
// and no Resend has sent them yet.
func (r *Record) Pending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed.lines()
}

// Wake is told (it holds one value at most) when lines are added to those
// to backfill.
func (r *Record) Wake() <-chan struct{} { return r.wake }

// FileReplaced reports whether the record's file is no longer the one
// the record opened (moved, replaced or removed): nothing may be read
// back from it then.
func (r *Record) FileReplaced() bool {
	fi, err := os.Stat(r.in.abs)
	return err != nil || !os.SameFile(fi, r.fi)
}

// RefusePending moves every range to backfill to those the backend
// refused with status, left to `otelstep replay`, and returns how many
// lines and bytes they are.
func (r *Record) RefusePending(status int) (lines int, bytes int64) {
	left := r.pending()
	r.refuse(left, status)
	var ls spanSet
	for _, s := range left {
		ls.add(s)
	}
	return ls.lines(), ls.bytes()
}

// Requests is how many requests the run sent.
func (s *Summary) Requests() int64 {
	var n int64
	for _, ss := range s.Signals {
		n += ss.Requests
	}
	return n
}

// Items is how many items the run sent.
func (s *Summary) Items() int64 {
	var n int64
	for _, ss := range s.Signals {
		n += ss.Items
	}
	return n
}
