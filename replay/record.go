package replay

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/otelstep/otelstep/sink"
)

// RecordOptions configures OpenRecord.
type RecordOptions struct {
	// File is the JSONL file (a regular file) a File sink appends to.
	File string
	// Endpoint is the exporter's base URL (its endpoint setting): the
	// record is replay's checkpoint of File for it, which `otelstep replay
	// --endpoint` with the same URL finds, however spelled (NormalizeEndpoint).
	Endpoint string
	Logger   *slog.Logger
	// Every bounds how often the record is written while lines are
	// recorded; default 5s. Close always writes it.
	Every time.Duration
	// LogEvery bounds how long a delivered line waits before it is in the
	// delivery log beside the record (deliverylog.go); default 200ms.
	LogEvery time.Duration
}

// Record is otelstep's delivery record of one JSONL file for one
// OTLP/HTTP exporter: which of the file's lines reached the exporter's
// backend (delivered live, or backfilled), and, in memory, which the
// exporter gave up on and the live backfill (package backfill) is to
// send. It is a sink.DeliveryRecord.
//
// On disk it is replay's checkpoint of the file for the exporter's
// endpoint, beside the file (.NAME.replay-KEY.json): every line in it is
// done, the rest never arrived, so `otelstep replay` to that endpoint
// afterwards sends exactly what is not in it. It holds byte ranges and
// line numbers, never a line's content or a header. It is written through a
// temporary file renamed over it at most every RecordOptions.Every (5 s)
// while lines are recorded, from a goroutine of its own, and at Close,
// synced; in between, each delivered range is appended to the delivery log
// beside it within RecordOptions.LogEvery (deliverylog.go). Lines the
// backend refused (sink.LeftRefused) are kept apart, in the checkpoint's
// live.refused: the backfill does not send them, replay does.
//
// OpenRecord resumes the record an earlier run left: the lines it wrote
// that the record does not hold (given up on, or unsent when it stopped or
// was killed) are the first the backfill sends. A line delivered in the
// last LogEvery before a kill -9 is not in the record yet and is sent
// again: delivery is at least once. The part of the file there was before
// the record began (a file written without one) is left to replay: its
// fate is unknown.
//
// The record assumes that otelstep is the only writer of the file while it
// runs and that the file is not replaced; a file whose first bytes changed
// since (another job's file copied over it) gets a new record.
type Record struct {
	o    RecordOptions
	in   input
	fi   os.FileInfo // the file at open: a backfill reads no other
	path string      // of the checkpoint
	log  *slog.Logger

	mu      sync.Mutex
	cp      checkpoint // all but Offset, Line and Done: those are done's
	arrived spanSet    // delivered, or reported and skipped
	failed  spanSet    // given up on, not yet backfilled (at or after Live.From)
	// refused: the backend refused them (401, 400, ...); the backfill
	// leaves them to `otelstep replay`, which sends what is not arrived.
	refused spanSet
	// items are the items of this run's lines not delivered, by their
	// Start, for the backlog's count.
	items  map[int64]int
	base   int // lines in the file at open
	timer  *time.Timer
	closed bool
	wake   chan struct{} // cap 1: failed grew

	writeMu sync.Mutex // one write at a time, each of a state no older than the last's
	err     error      // the first write error, under mu

	// The delivery log (deliverylog.go): logPend and logTimer under mu;
	// logF and logFailed under logMu, which a write takes before mu.
	logEvery  time.Duration
	logPend   []span
	logTimer  *time.Timer
	logMu     sync.Mutex
	logF      *os.File
	logFailed bool
}

const defaultRecordEvery = 5 * time.Second

// OpenRecord opens the delivery record of o.File for o.Endpoint, resuming
// the one an earlier run left, before the File sink appends to the file.
// It reads the part of the file the record does not cover to count its
// lines: nothing after a clean stop, the whole file when it begins a
// record for a file that has none.
func OpenRecord(o RecordOptions) (*Record, error) {
	if o.Every <= 0 {
		o.Every = defaultRecordEvery
	}
	if o.LogEvery <= 0 {
		o.LogEvery = defaultLogEvery
	}
	lg := o.Logger
	if lg == nil {
		lg = slog.Default()
	}
	abs, err := filepath.Abs(o.File)
	if err != nil {
		return nil, fmt.Errorf("delivery record of %s: %w", o.File, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("delivery record of %s: %w", o.File, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("delivery record of %s: not a regular file", o.File)
	}
	endpoint, err := NormalizeEndpoint(o.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("delivery record of %s: endpoint %w", o.File, err)
	}
	in := input{path: o.File, abs: abs, size: fi.Size()}
	r := &Record{o: o, in: in, fi: fi, path: statePath(in, "", stateKey(endpoint)), wake: make(chan struct{}, 1), logEvery: o.LogEvery}
	r.log = lg.With("file", o.File, "record", r.path)

	cp, err := loadCheckpoint(r.path, in)
	if err == nil && cp != nil {
		err = checkCovered(cp, in.size)
	}
	if err != nil {
		r.log.Warn("delivery record: the record there does not match the file; beginning a new one", "error", err)
		cp = nil
	}
	size := in.size
	if cp == nil {
		n, err := countLines(abs, 0, size)
		if err != nil {
			return nil, fmt.Errorf("delivery record of %s: %w", o.File, err)
		}
		r.cp = checkpoint{Version: stateVersion, File: abs, Endpoint: endpoint,
			Live: &liveState{From: size, FromLine: n, Size: size, Lines: n}}
		r.base = n
		// A log of an earlier record is not this one's.
		r.logMu.Lock()
		r.emptyLog(true)
		r.logMu.Unlock()
		// Written now: killed before its first scheduled write, the next
		// run still knows where this one's lines begin.
		r.write(false)
		if err := r.flush(); err != nil {
			return nil, err
		}
		return r, nil
	}
	r.cp = *cp
	r.cp.File, r.cp.Endpoint = abs, endpoint
	r.cp.Offset, r.cp.Line, r.cp.Done = 0, 0, nil
	if cp.Offset > 0 {
		r.arrived.add(span{Start: 0, End: cp.Offset, FirstLine: 1, Lines: cp.Line})
	}
	for _, s := range cp.Done {
		r.arrived.add(s)
	}
	// How far the file's lines are known: the furthest of the record's
	// own account and its ranges; the rest is counted.
	pos, lines := int64(0), 0
	if cp.Live != nil {
		live := *cp.Live
		r.cp.Live = &live
		pos, lines = live.Size, live.Lines
	}
	for _, s := range r.arrived.spans {
		if s.End > pos {
			pos, lines = s.End, s.FirstLine+s.Lines-1
		}
	}
	n, err := countLines(abs, pos, size)
	if err != nil {
		return nil, fmt.Errorf("delivery record of %s: %w", o.File, err)
	}
	r.base = lines + n
	if r.cp.Live == nil {
		// A replay's checkpoint: what it did not send is left to it.
		r.cp.Live = &liveState{From: size, FromLine: r.base}
	}
	r.cp.Live.Size, r.cp.Live.Lines = size, r.base
	r.failed = r.arrived.gaps(r.cp.Live.From, r.cp.Live.FromLine, size, r.base)
	// What the backend refused in an earlier run stays left to replay
	// (which may have sent part of it since).
	for _, x := range r.cp.Live.Refused {
		left := spanSet{spans: []span{x}}
		for _, a := range r.arrived.spans {
			left.sub(a)
		}
		for _, y := range left.spans {
			r.failed.sub(y)
			r.refused.add(y)
		}
	}
	r.cp.Live.Refused = nil
	if n := r.failed.bytes(); n > 0 {
		r.log.Info("delivery record: an earlier run did not deliver part of the file; backfilling it",
			"bytes", n, "lines", r.failed.lines())
	}
	// The earlier run's log, read with the checkpoint, folded into it.
	r.write(false)
	return r, nil
}

// checkCovered refuses a checkpoint that says more of the file than there
// is: the file was replaced by a shorter one.
func checkCovered(cp *checkpoint, size int64) error {
	end := cp.Offset
	for _, s := range cp.Done {
		end = max(end, s.End)
	}
	if cp.Live != nil {
		end = max(end, cp.Live.Size, cp.Live.From)
	}
	if end > size {
		return fmt.Errorf("it covers %d bytes but the file has %d: %w", end, size, errShrunk)
	}
	return nil
}

// countLines counts the newlines in bytes [from, to) of the file at path.
func countLines(path string, from, to int64) (int, error) {
	if to <= from {
		return 0, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 256<<10)
	n := 0
	rd := io.NewSectionReader(f, from, to-from)
	for {
		k, err := rd.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// File is the JSONL file the record is of, as RecordOptions named it.
func (r *Record) File() string { return r.o.File }

// Endpoint is the endpoint the record is for, without userinfo: what
// `otelstep replay --endpoint` is given to find it.
func (r *Record) Endpoint() string { return r.cp.Endpoint }

// Path is where the record is written.
func (r *Record) Path() string { return r.path }

// Delivered records that l reached the backend (sink.DeliveryRecord).
func (r *Record) Delivered(l sink.Line) { r.mark(l, sink.Delivered) }

// Undelivered records that the exporter gave up on l, and why: the backfill
// sends it, unless the backend refused it (sink.LeftRefused): that is left
// to `otelstep replay` (sink.DeliveryRecord).
func (r *Record) Undelivered(l sink.Line, f sink.Fate) { r.mark(l, f) }

func (r *Record) mark(l sink.Line, f sink.Fate) {
	delivered := f == sink.Delivered
	s := span{Start: l.Start, End: l.End, FirstLine: r.base + l.Index + 1, Lines: 1}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	if live := r.cp.Live; s.End > live.Size {
		live.Size, live.Lines = s.End, s.FirstLine
	}
	switch {
	case delivered:
		r.arrived.add(s)
		r.logLocked(s)
	case f == sink.LeftRefused:
		r.refused.add(s)
		r.cp.Live.RefusedReason = "the backend refused it"
	default:
		r.failed.add(s)
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
	if !delivered && l.Items > 0 {
		if r.items == nil {
			r.items = map[int64]int{}
		}
		r.items[l.Start] = l.Items
	}
	r.dirtyLocked()
}

// refuse moves the ranges a backfill was sending, which the backend
// refused with status, from those to backfill to those left to replay.
func (r *Record) refuse(spans []span, status int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range spans {
		r.failed.sub(s)
		r.refused.add(s)
	}
	r.cp.Live.RefusedReason = fmt.Sprintf("the backend refused it (HTTP %d)", status)
	r.dirtyLocked()
}

// Backlog is what the record's file holds that the backend has not got:
// to backfill, and (refused) left to replay (sink.Backlog).
func (r *Record) Backlog() sink.Backlog {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := sink.Backlog{
		ToBackfill: sink.Lines{Batches: r.failed.lines(), Bytes: r.failed.bytes()},
		ForReplay:  sink.Lines{Batches: r.refused.lines(), Bytes: r.refused.bytes()},
	}
	for at, n := range r.items {
		if r.refused.has(at) {
			b.ForReplay.Items += int64(n)
		} else {
			b.ToBackfill.Items += int64(n)
		}
	}
	return b
}

// done records a backfilled chunk (marker).
func (r *Record) done(s span, skipped int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cp.Skipped += skipped
	if s.End > s.Start {
		r.arrived.add(s)
		r.logLocked(s)
		r.failed.sub(s)
		r.refused.sub(s)
		for at := range r.items {
			if at >= s.Start && at < s.End {
				delete(r.items, at)
			}
		}
	}
	r.dirtyLocked()
}

// flush reports the first error writing the record (marker): it is written
// on its own schedule.
func (r *Record) flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// pending returns the ranges to backfill, oldest first.
func (r *Record) pending() []span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]span(nil), r.failed.spans...)
}

// dirtyLocked has the record written within Every.
func (r *Record) dirtyLocked() {
	if r.timer == nil {
		r.timer = time.AfterFunc(r.o.Every, func() {
			r.mu.Lock()
			r.timer = nil
			r.mu.Unlock()
			r.write(false)
		})
	}
}

// Close writes the record, synced, and stops recording: call it once the
// sinks that report to it are shut down. It returns the first error
// writing the record.
func (r *Record) Close() error {
	r.mu.Lock()
	if r.closed {
		err := r.err
		r.mu.Unlock()
		return err
	}
	r.closed = true
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	if r.logTimer != nil {
		r.logTimer.Stop()
		r.logTimer = nil
	}
	r.mu.Unlock()
	r.write(true)
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// write writes the record as it is now, and empties the delivery log,
// which it holds (removes it, when sync: at Close).
func (r *Record) write(sync bool) {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	r.logMu.Lock()
	defer r.logMu.Unlock()
	r.mu.Lock()
	cp := r.snapshotLocked()
	r.logPend = r.logPend[:0] // in cp
	r.mu.Unlock()
	if n := min(cp.Live.Size, prefixLen); n > cp.PrefixLen {
		if h, err := prefixHash(r.in.abs, n); err == nil {
			cp.PrefixLen, cp.PrefixHash = n, h
			r.mu.Lock()
			r.cp.PrefixLen, r.cp.PrefixHash = n, h
			r.mu.Unlock()
		}
	}
	if err := writeAtomic(r.path, &cp, sync); err != nil {
		r.mu.Lock()
		if r.err == nil {
			r.err = err
			r.log.Error("delivery record: cannot write it", "error", err)
		}
		r.mu.Unlock()
		return
	}
	r.emptyLog(sync)
}

// snapshotLocked is the checkpoint as it is now.
func (r *Record) snapshotLocked() checkpoint {
	cp := r.cp
	live := *r.cp.Live
	live.Refused = append([]span(nil), r.refused.spans...)
	if len(live.Refused) == 0 {
		live.RefusedReason = ""
	}
	cp.Live = &live
	spans := r.arrived.spans
	if len(spans) > 0 && spans[0].Start == 0 {
		cp.Offset, cp.Line = spans[0].End, spans[0].FirstLine+spans[0].Lines-1
		spans = spans[1:]
	}
	cp.Done = append([]span(nil), spans...)
	cp.Updated = time.Now().UTC()
	return cp
}

// spanSet is a set of byte ranges of whole lines, sorted, disjoint, and
// adjacent ones merged: the lines delivered in order are one range.
type spanSet struct {
	spans []span
}

// last is the number of the last line of s.
func (s span) last() int { return s.FirstLine + s.Lines - 1 }

// add adds x, merging it with the ranges it touches.
func (ss *spanSet) add(x span) {
	if x.End <= x.Start {
		return
	}
	i := sort.Search(len(ss.spans), func(i int) bool { return ss.spans[i].End >= x.Start })
	j := i
	for j < len(ss.spans) && ss.spans[j].Start <= x.End {
		s := ss.spans[j]
		if s.Start < x.Start {
			x.Start, x.FirstLine, x.Lines = s.Start, s.FirstLine, x.last()-s.FirstLine+1
		}
		if s.End > x.End {
			x.End, x.Lines = s.End, s.last()-x.FirstLine+1
		}
		j++
	}
	ss.spans = append(ss.spans[:i], append([]span{x}, ss.spans[j:]...)...)
}

// sub removes x from the set, splitting a range x is in the middle of.
func (ss *spanSet) sub(x span) {
	var out []span
	for _, s := range ss.spans {
		if s.End <= x.Start || s.Start >= x.End {
			out = append(out, s)
			continue
		}
		if s.Start < x.Start {
			out = append(out, span{Start: s.Start, End: x.Start, FirstLine: s.FirstLine, Lines: x.FirstLine - s.FirstLine})
		}
		if s.End > x.End {
			out = append(out, span{Start: x.End, End: s.End, FirstLine: x.last() + 1, Lines: s.last() - x.last()})
		}
	}
	ss.spans = out
}

// gaps returns what the set leaves of [from, to), where from is after
// fromLine lines and to after toLine.
func (ss *spanSet) gaps(from int64, fromLine int, to int64, toLine int) spanSet {
	var out spanSet
	at, atLine := from, fromLine
	for _, s := range ss.spans {
		if s.End <= at {
			continue
		}
		if s.Start >= to {
			break
		}
		if s.Start > at {
			out.spans = append(out.spans, span{Start: at, End: s.Start, FirstLine: atLine + 1, Lines: s.FirstLine - 1 - atLine})
		}
		at, atLine = s.End, s.last()
	}
	if at < to {
		out.spans = append(out.spans, span{Start: at, End: to, FirstLine: atLine + 1, Lines: toLine - atLine})
	}
	return out
}

// has says whether offset at is in the set.
func (ss *spanSet) has(at int64) bool {
	for _, s := range ss.spans {
		if at >= s.Start && at < s.End {
			return true
		}
	}
	return false
}

func (ss *spanSet) bytes() int64 {
	var n int64
	for _, s := range ss.spans {
		n += s.End - s.Start
	}
	return n
}

func (ss *spanSet) lines() int {
	n := 0
	for _, s := range ss.spans {
		n += s.Lines
	}
	return n
}
