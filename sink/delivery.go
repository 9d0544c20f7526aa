package sink

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/otelstep/otelstep/pipeline"
)

// This file joins the two sinks a batch goes to: for each batch a Fanout
// gives both a File and an HTTP sink it tracks (Fanout.Track), the
// DeliveryRecord is told where the File sink wrote the batch's line and
// whether the HTTP sink delivered the batch. What it was not delivered can
// then be sent again from the file (package backfill).

// Line is where one batch's line lies in a JSONL file: bytes [Start, End),
// End just past its newline, and Index, its place among the lines the File
// sink wrote since it opened the file (0 for the first).
type Line struct {
	Start, End int64
	Index      int
	// Items is the batch's items (points, spans or log records), as the
	// HTTP sink counted them.
	Items int
}

// DeliveryRecord is told, for each line a File sink wrote of a batch that
// an HTTP sink was given too, whether the HTTP sink delivered the batch (a
// 2xx answer) or not, and why not (its Fate: dropped from a full queue,
// refused, retries exhausted, unsent at stop). A line is reported once both are known and
// only once it is in the file (written out, not only buffered); a line the
// File sink never wrote (lost at a stop past its deadline) is not reported.
// Calls come from the sinks' goroutines in no particular order and must
// not block.
type DeliveryRecord interface {
	Delivered(Line)
	Undelivered(Line, Fate)
}

// ticket joins one batch's two fates for one DeliveryRecord: where its line
// was written and whether the HTTP sink delivered it. Whichever comes second
// tells the record.
type ticket struct {
	rec   DeliveryRecord
	line  Line // set by written, before its bit
	fate  Fate // set by settle, before its bit
	items int  // set by settle, before its bit
	state atomic.Int32
}

const (
	ticketWritten = 1 << iota
	ticketSettled
)

// written says the line is in the file.
func (t *ticket) written(l Line) {
	t.line = l
	t.finish(ticketWritten)
}

// settle says what became of the batch of items items at the HTTP sink.
func (t *ticket) settle(f Fate, items int) {
	t.fate, t.items = f, items
	t.finish(ticketSettled)
}

func (t *ticket) finish(bit int32) {
	other := int32(ticketWritten|ticketSettled) &^ bit
	if t.state.Or(bit) != other {
		return // the other fate is not known yet (or this one was told twice)
	}
	l := t.line
	l.Items = t.items
	if t.fate == Delivered {
		t.rec.Delivered(l)
	} else {
		t.rec.Undelivered(l, t.fate)
	}
}

// track is one File and HTTP sink pair of a Fanout whose batches are
// recorded.
type track struct {
	file *File
	http *HTTP
	rec  DeliveryRecord
}

// Track has rec told, for every batch f and h both take from this Fanout,
// where f wrote its line and whether h delivered it. f and h must be sinks
// of the Fanout; call Track before the first Consume.
func (f *Fanout) Track(file *File, h *HTTP, rec DeliveryRecord) {
	f.tracks = append(f.tracks, track{file, h, rec})
}

// tickets returns a ticket per tracked pair for one batch, nil when none.
func (f *Fanout) tickets() []*ticket {
	if len(f.tracks) == 0 {
		return nil
	}
	ts := make([]*ticket, len(f.tracks))
	for i, tr := range f.tracks {
		ts[i] = &ticket{rec: tr.rec}
	}
	return ts
}

// fileTickets returns the tickets of ts (one per track) of the pairs with
// the File sink s.
func (f *Fanout) fileTickets(s *File, ts []*ticket) []*ticket {
	var out []*ticket
	for i, tr := range f.tracks {
		if tr.file == s {
			out = append(out, ts[i])
		}
	}
	return out
}

// httpTicket returns the ticket of ts of the pair with the HTTP sink h.
func (f *Fanout) httpTicket(h *HTTP, ts []*ticket) *ticket {
	for i, tr := range f.tracks {
		if tr.http == h {
			return ts[i]
		}
	}
	return nil
}

// writtenLine is a line in the File sink's buffer, not yet in the file,
// with the tickets of its batch.
type writtenLine struct {
	line    Line
	tickets []*ticket
}

// offset is where the next byte appended to the buffer will be in the file.
func (s *File) offset() int64 { return s.size + int64(len(s.buf)) }

// lineBuilt is called when a line from start to the buffer's end is whole
// in the buffer: its tickets (s.cur) are told once it is written out.
func (s *File) lineBuilt(start int64) {
	idx := s.lines
	s.lines++
	if len(s.cur) == 0 {
		return
	}
	s.unwritten = append(s.unwritten, writtenLine{Line{Start: start, End: s.offset(), Index: idx}, s.cur})
	s.cur = nil
}

// wroteOut tells the tickets of the lines written out.
func (s *File) wroteOut() {
	for i, w := range s.unwritten {
		for _, t := range w.tickets {
			t.written(w.line)
		}
		s.unwritten[i] = writtenLine{}
	}
	s.unwritten = s.unwritten[:0]
}

// linesLost forgets the whole lines in the buffer, dropped unwritten.
func (s *File) linesLost(n int) {
	s.lines -= n
	clear(s.unwritten)
	s.unwritten = s.unwritten[:0]
}

// answered is called after every 2xx answer to a live request: it wakes
// whoever waits in Answered.
func (h *HTTP) answered() {
	h.okMu.Lock()
	if h.okCh != nil {
		close(h.okCh)
		h.okCh = nil
	}
	h.okMu.Unlock()
}

// Answered returns a channel closed at the next 2xx answer to a live
// request: the backend is up. A backfill waits on it after a failure.
func (h *HTTP) Answered() <-chan struct{} {
	h.okMu.Lock()
	defer h.okMu.Unlock()
	if h.okCh == nil {
		h.okCh = make(chan struct{})
	}
	return h.okCh
}

// Compression is how the sink's requests are compressed.
func (h *HTTP) Compression() Compression { return h.comp }

// backfillPoll is how often WaitIdle looks whether the live queue has
// emptied.
const backfillPoll = 100 * time.Millisecond

// WaitIdle waits until the live queue is empty, or ctx is done (its
// error). A backfill waits so before each request: what waits for the
// backend now goes before what waited in the file.
func (h *HTTP) WaitIdle(ctx context.Context) error {
	var t *time.Timer
	for h.queued() > 0 {
		if t == nil {
			t = time.NewTimer(backfillPoll)
			defer t.Stop()
		} else {
			t.Reset(backfillPoll)
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return ctx.Err()
}

// PostBackfill posts body, an export request of sig built from what the
// JSONL file holds, once, as the sink posts its own: the signal's URL, the
// headers, the per-request timeout, the answer's message redacted. It does
// not touch the live queue or its bound. At the sink's shutdown deadline
// the request is cut short.
func (h *HTTP) PostBackfill(ctx context.Context, sig pipeline.Signal, body []byte) Result {
	if sig > pipeline.Logs {
		return Result{Err: errUnknownSignal}
	}
	ctx, cancel := context.WithTimeout(ctx, h.o.Timeout)
	defer cancel()
	stop := context.AfterFunc(h.runCtx, cancel)
	defer stop()
	res := Post(ctx, h.client, Export{Signal: sig, URL: h.urls[sig], Headers: h.o.Headers, Encoding: h.comp.Encoding(), Body: body, Redact: h.red})
	if res.OK() || ctx.Err() == nil {
		// The backend's state, as a live request's answer says it;
		// not a request cut short by a stop.
		h.observe(sig, res)
	}
	return res
}

var errUnknownSignal = errors.New("unknown signal")

// Backfilled counts items of sig the backfill sent through PostBackfill.
func (h *HTTP) Backfilled(sig pipeline.Signal, items int) {
	if items <= 0 {
		return
	}
	h.backfilled.Add(uint64(items))
	h.tel.Backfilled(sig, items)
}

// BearerToken returns the token of an "Authorization: Bearer <token>"
// header among headers (the name and the scheme in any case), "" when there
// is none: what a backfill stamps as the Authorization resource attribute,
// as replay stamps its token.
func BearerToken(headers map[string]string) string {
	for k, v := range headers {
		if !strings.EqualFold(k, "Authorization") {
			continue
		}
		scheme, tok, ok := strings.Cut(strings.TrimSpace(v), " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(tok)
		}
	}
	return ""
}

// okState is the HTTP sink's part of Answered.
type okState struct {
	okMu sync.Mutex
	okCh chan struct{}
}
