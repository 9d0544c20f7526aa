package sink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/otelstep/otelstep/otlpwire"
	"github.com/otelstep/otelstep/pipeline"
	"github.com/otelstep/otelstep/telemetry"
)

// FileOptions configures the JSONL sink.
type FileOptions struct {
	Name   string // component id, e.g. "file/metrics"
	Path   string
	Signal pipeline.Signal
	// QueueSize is the number of batches buffered; default 1000.
	QueueSize int
	Logger    *slog.Logger
	// RedactResourceKeys are resource attribute keys never written;
	// default {"Authorization"}.
	RedactResourceKeys []string
	// Telemetry records the items written, the bytes written and the
	// queue's length; nil records nothing.
	Telemetry *telemetry.Sink
	// SharedAttrs finds the producers' attribute sets whose OTLP/JSON the
	// sink stores and reuses (otlpwire.MetricsEncoder.Shared); nil encodes
	// every point afresh.
	SharedAttrs *pipeline.SharedAttrs
	// Secrets (the ingest token) are never written: wherever their bytes
	// appear in a line (a span attribute, a log body, a bytes value's
	// base64), they are overwritten (scrubber).
	Secrets []string
	// PlainScrub is the off switch of the scrubber's sampled-word search:
	// each secret's forms are searched for over the whole write-out.
	PlainScrub bool
}

const (
	fileFlushInterval = 200 * time.Millisecond
	fileBufSize       = 256 << 10
	// fileBufKeptTimes bounds the buffer kept after one huge resource
	// grew it: this many times its size.
	fileBufKeptTimes = 4
	fileRetryMin     = 100 * time.Millisecond
	fileRetryMax     = 5 * time.Second
)

// File is the JSONL sink: one OTLP/JSON export request per line, appended to
// Path, which is opened with O_APPEND and written with plain write calls
// (job folders are on NFS, Lustre or GPFS as often as on a local disk, and
// other processes may append to the same file). It never drops: Enqueue
// blocks while the queue is full. Lines are built in a buffer of 256 KiB
// that is written out when the queue is idle, at least every 200 ms, and
// on shutdown (followed by fsync), and when it fills: every write-out but
// those in the middle of a line longer than the buffer (see write) ends
// with a whole line, so the file holds whole lines except after a crash in
// the middle of a long one (NewFile then ends that line, and replay skips
// it).
//
// A write that fails (a full file system, a quota, the file size limit, an
// I/O error) keeps the bytes not written, and the sink is failing until a
// write succeeds (Failing says why): the bytes a failed write call appended
// are cut off again (so the file holds whole lines, not the first part of
// one), the write is retried with a backoff of up to 5 s until it succeeds
// or the shutdown deadline passes, and meanwhile the queue takes no more
// batches: Enqueue waits until writing works again, so what waits is
// bounded by the queue as it was when writing began to fail. Writing, and
// taking batches, resume by themselves when a write succeeds.
//
// The acks of a batch (pipeline.Ack) are resolved once the write-out
// holding its line's end returns, and failed by the first write that
// fails (their senders are told to retry later; the bytes stay buffered
// and are written once writing works). Since the buffer is written out
// whenever the queue is empty, an ack waits for the batches queued before
// it, not for the 200 ms. At a stop past its deadline, a line of which a
// part was written out is cut off again, so the file ends with a whole
// line. Secrets (FileOptions.Secrets) are overwritten wherever they
// appear in what is written (scrubber).
type File struct {
	o      FileOptions
	log    *slog.Logger
	w      io.Writer // *os.File normally; injectable in tests
	f      *os.File
	q      chan queued
	sem    chan struct{} // queue slots: reserved before sending on q
	stopCh chan struct{}
	done   chan struct{}

	mu          sync.RWMutex
	closed      bool
	started     bool
	shutdownCtx context.Context // set before stopCh is closed

	// buf holds the bytes not yet written to the file.
	buf       []byte
	lostLines int
	// maxRes is about the most one resource's OTLP/JSON added to the buffer
	// lately between two write-outs (write): a metrics resource bigger than
	// the buffer is written out while it is encoded (flushMidResource).
	maxRes int
	// metricsEnc reuses the JSON stored with attribute sets, and writes
	// out a metrics resource bigger than the buffer while encoding it
	// (flushMidResource).
	metricsEnc otlpwire.MetricsEncoder
	// While write encodes a resource: its ctx, where in the buffer the
	// resource's bytes not yet written out start, and whether a write-out
	// in the middle of it failed.
	wctx   context.Context
	resAt  int
	midErr bool

	tel       *telemetry.Sink
	unobserve func() // stops the queue's observation
	scrub     *scrubber

	// size is the file's size as this sink's writes left it, to cut off
	// what a failed write call appended (undo).
	size int64

	// failMu guards failing and writable: failing is why writes fail
	// (nil while they work); writable is closed while they work.
	failMu   sync.Mutex
	failing  error
	writable chan struct{}

	// For the delivery records (delivery.go): the lines written since the
	// file was opened, the tickets of the batch being written and the
	// lines in the buffer whose batches have tickets.
	lines     int
	cur       []*ticket
	unwritten []writtenLine

	// The senders waiting until their items are written (pipeline.Ack):
	// acks of the whole lines in the buffer, resolved once it is written
	// out, and curAcks of the batch being written.
	acks, curAcks []*pipeline.Ack
	// lineAt is where in the file the line being built starts: a line
	// cut short at a stop past its deadline is cut off back to it.
	lineAt int64

	// The items of the whole lines in the buffer and of the line being
	// built; at a stop past its deadline, the lines and items not written
	// (Unwritten).
	bufItems, curItems             int
	unwrittenLines, unwrittenItems int
	// drainCh is closed by Drain.
	drainCh   chan struct{}
	drainOnce sync.Once
}

// fileFlushRoom is the room a metrics resource's encoding leaves in the
// buffer when it is written out in the middle (flushMidResource): more
// than one data point's JSON, so that the next point does not regrow it.
const fileFlushRoom = 64 << 10

// NewFile opens (creating) the file and returns the sink. Call Start to begin
// writing.
func NewFile(o FileOptions) (*File, error) {
	if o.Path == "" {
		return nil, errors.New("file sink: empty path")
	}
	if err := os.MkdirAll(filepath.Dir(o.Path), 0o755); err != nil {
		return nil, fmt.Errorf("file sink %s: %w", o.Path, err)
	}
	f, err := os.OpenFile(o.Path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("file sink: %w", err)
	}
	s := newFile(o, f)
	s.f = f
	if err := s.endLine(); err != nil {
		f.Close()
		return nil, fmt.Errorf("file sink %s: %w", o.Path, err)
	}
	if fi, err := f.Stat(); err == nil {
		s.size = fi.Size()
	}
	return s, nil
}

// pending is how many bytes in the buffer are not in the file yet.
func (s *File) pending() int { return len(s.buf) }

// endLine ends the file's last line if it is cut short (a run killed while
// writing a long line, or stopped past its deadline), so that the lines
// appended now each stay whole: the cut line is then one bad line a reader
// can skip, not a bad line glued to a good one.
func (s *File) endLine() error {
	fi, err := s.f.Stat()
	if err != nil || fi.Size() == 0 || !fi.Mode().IsRegular() {
		return err
	}
	// A handle of its own to read from: the sink's is write-only, as a
	// path like /dev/stdout may only be opened for writing.
	// Where it cannot be read (a write-only file), appending goes on
	// unchecked, as it did before the check.
	r, err := os.Open(s.o.Path)
	if err != nil {
		s.log.Warn("file sink: cannot check that the file ends with a whole line", "error", err)
		return nil
	}
	defer r.Close()
	var last [1]byte
	if _, err := r.ReadAt(last[:], fi.Size()-1); err != nil {
		return fmt.Errorf("read last byte: %w", err)
	}
	if last[0] == '\n' {
		return nil
	}
	s.log.Warn("file sink: the file ends inside a line (an earlier run stopped while writing it); appending from a new line")
	_, err = s.f.Write([]byte{'\n'})
	return err
}

func newFile(o FileOptions, w io.Writer) *File {
	if o.QueueSize <= 0 {
		o.QueueSize = 1000
	}
	if o.RedactResourceKeys == nil {
		o.RedactResourceKeys = []string{"Authorization"}
	}
	if o.Name == "" {
		o.Name = "file/" + o.Signal.String()
	}
	lg := o.Logger
	if lg == nil {
		lg = slog.Default()
	}
	s := &File{
		o:      o,
		log:    lg.With("component", o.Name, "path", o.Path),
		w:      w,
		q:      make(chan queued, o.QueueSize),
		sem:    make(chan struct{}, o.QueueSize),
		stopCh: make(chan struct{}),
		done:   make(chan struct{}),
	}
	s.writable = make(chan struct{})
	close(s.writable)
	s.drainCh = make(chan struct{})
	s.metricsEnc.Flush = s.flushMidResource
	s.metricsEnc.Shared = o.SharedAttrs
	s.tel = o.Telemetry
	s.scrub = newScrubber(o.Secrets, o.PlainScrub)
	s.unobserve = s.tel.ObserveQueue(func() int { return len(s.q) }, o.QueueSize)
	return s
}

// Name returns the component id.
func (s *File) Name() string { return s.o.Name }

// Start starts the writer goroutine.
func (s *File) Start(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return nil
	}
	if s.closed {
		return pipeline.ErrStopped
	}
	s.started = true
	go s.run()
	return nil
}

// Enqueue queues b, blocking while the queue is full. It returns
// pipeline.ErrFull when ctx is done first and ErrStopped after Shutdown.
func (s *File) Enqueue(ctx context.Context, b *pipeline.Batch) error {
	if err := s.reserve(ctx); err != nil {
		return err
	}
	return s.enqueueReserved(b)
}

// queued is a batch in the queue.
type queued struct {
	b       *pipeline.Batch
	tickets []*ticket
}

func (s *File) reserve(ctx context.Context) error {
	select {
	case <-s.stopCh:
		return pipeline.ErrStopped
	default:
	}
	// While writes fail the queue takes nothing: wait until they work,
	// unless the stop drains the pipeline (Drain).
	for {
		w, failing := s.writableCh()
		if failing == nil || s.draining() {
			break
		}
		select {
		case <-w:
		case <-s.drainCh:
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", pipeline.ErrFull, failing)
		case <-s.stopCh:
			return pipeline.ErrStopped
		}
	}
	select {
	case s.sem <- struct{}{}:
		return nil
	default:
	}
	select {
	case s.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return pipeline.ErrFull
	case <-s.stopCh:
		return pipeline.ErrStopped
	}
}

// Drain says the stop has begun: from now on the sink takes what the
// pipeline still holds even while its writes fail, so that the other sinks
// of the fan-out (the backend) get it too; what it cannot write by its
// shutdown deadline is counted (Unwritten). Refusing it would lose it
// everywhere.
func (s *File) Drain() { s.drainOnce.Do(func() { close(s.drainCh) }) }

func (s *File) draining() bool {
	select {
	case <-s.drainCh:
		return true
	default:
		return false
	}
}

// Unwritten is what a Shutdown past its deadline did not write: lines and
// their items (spans, log records, data points). ok is false when the
// writer has not finished within wait of asking (stuck in a write call):
// the counts are then unknown.
func (s *File) Unwritten(wait time.Duration) (lines, items int, ok bool) {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-s.done:
		return s.unwrittenLines, s.unwrittenItems, true
	case <-t.C:
		return 0, 0, false
	}
}

// Failing is nil while the sink's writes succeed; after a write failed and
// until one succeeds, it is the error, naming the file.
func (s *File) Failing() error {
	s.failMu.Lock()
	defer s.failMu.Unlock()
	return s.failing
}

// writableCh is the channel closed once writes work again, and why they
// fail (nil: they work).
func (s *File) writableCh() (<-chan struct{}, error) {
	s.failMu.Lock()
	defer s.failMu.Unlock()
	return s.writable, s.failing
}

// setFailing records that writes fail with err (nil: they work again).
func (s *File) setFailing(err error) {
	s.failMu.Lock()
	defer s.failMu.Unlock()
	switch {
	case err != nil && s.failing == nil:
		s.writable = make(chan struct{})
	case err == nil && s.failing != nil:
		close(s.writable)
	}
	if err != nil {
		err = fmt.Errorf("writing %s: %w", s.o.Path, err)
	}
	s.failing = err
}

func (s *File) release() { <-s.sem }

func (s *File) enqueueReserved(b *pipeline.Batch) error {
	return s.enqueueTracked(b, nil)
}

// enqueueTracked is enqueueReserved of a batch whose line's place in the
// file the tickets are told once it is written.
func (s *File) enqueueTracked(b *pipeline.Batch, tickets []*ticket) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		<-s.sem
		return pipeline.ErrStopped
	}
	s.q <- queued{b, tickets} // never blocks: a slot is reserved
	return nil
}

// Shutdown stops taking batches, writes everything queued, flushes, fsyncs
// and closes the file. If ctx ends first the unwritten batches are logged as
// lost and ctx's error is returned.
func (s *File) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.shutdownCtx = ctx
	if !s.started {
		s.started = true
		go s.run()
	}
	close(s.stopCh)
	s.mu.Unlock()
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		// The writer gives up promptly once ctx is done (unless stuck in
		// a Write call) and logs what was lost.
		return ctx.Err()
	}
}

func (s *File) run() {
	defer close(s.done)
	// The flush timer runs only while lines wait in the buffer: an idle
	// sink does not wake the process (each wake-up costs the scheduler
	// more than the flush).
	t := time.NewTimer(fileFlushInterval)
	t.Stop()
	defer t.Stop()
	var flushDue <-chan time.Time
	runCtx := context.Background()
	for {
		if s.pending() > 0 && flushDue == nil {
			t.Reset(fileFlushInterval)
			flushDue = t.C
		}
		select {
		case q := <-s.q:
			<-s.sem
			s.cur = q.tickets
			s.writeQueued(runCtx, q)
			if len(s.q) == 0 {
				// Idle: write out now. Senders wait for their acks
				// (pipeline.Ack) until the line is in the file.
				s.flush(runCtx)
			}
		case <-flushDue:
			flushDue = nil
			s.flush(runCtx)
		case <-s.stopCh:
			s.drain()
			return
		}
	}
}

// drain writes what is queued after Shutdown, within the shutdown ctx.
func (s *File) drain() {
	ctx := s.shutdownCtx
	for ctx.Err() == nil && len(s.q) > 0 {
		q := <-s.q
		<-s.sem
		s.cur = q.tickets
		s.writeQueued(ctx, q)
	}
	s.flush(ctx)
	lost := s.pending() > 0 || s.lostLines > 0 || len(s.q) > 0
	s.failAcks(errLostAtStop) // what is left is not written, and never will be
	if s.pending() > 0 {
		s.unwrittenLines += bytes.Count(s.buf, []byte{'\n'})
		s.unwrittenItems += s.bufItems
	}
	for len(s.q) > 0 {
		q := <-s.q
		<-s.sem
		s.unwrittenLines++
		s.unwrittenItems += q.b.Items
		q.b.Release()
		q.b.ResolveAcks(errLostAtStop)
	}
	if lost {
		s.log.Error("file sink: shutdown deadline reached, data not written",
			"buffered_bytes", s.pending(), "lost_lines", s.lostLines, "queued_batches", len(s.q))
	}
	s.unobserve()
	if s.f != nil {
		if !lost {
			if err := s.f.Sync(); err != nil {
				s.log.Error("file sink: fsync failed", "error", err)
			}
		}
		if err := s.f.Close(); err != nil {
			s.log.Error("file sink: close failed", "error", err)
		}
	}
}

// errLostAtStop fails the acks of what a stop past its deadline did not
// write.
var errLostAtStop = errors.New("file sink: not written by the stop's deadline")

// writeQueued writes q's batch into the buffer and lets go of its memory;
// its acks wait for the line to be written out.
func (s *File) writeQueued(ctx context.Context, q queued) {
	s.curAcks = q.b.Acks
	s.write(ctx, q.b)
	q.b.Release() // the line is in the buffer: nothing points into it
	if len(s.curAcks) > 0 {
		// No line (a batch of nothing): nothing to wait for.
		for _, a := range s.curAcks {
			a.Resolve(nil)
		}
		s.curAcks = nil
	}
}

// acksWritten resolves the acks of the lines just written out.
func (s *File) acksWritten() {
	for i, a := range s.acks {
		a.Resolve(nil)
		s.acks[i] = nil
	}
	s.acks = s.acks[:0]
}

// failAcks tells the senders waiting for the buffer's lines, and for the
// line being built, that they cannot be written now (err): they are told
// to retry later. The bytes stay in the buffer and are written once
// writing works again (a sender's retry is then a duplicate, not a loss).
func (s *File) failAcks(err error) {
	for _, acks := range [][]*pipeline.Ack{s.acks, s.curAcks} {
		for _, a := range acks {
			a.Resolve(err)
		}
	}
	clear(s.acks)
	s.acks, s.curAcks = s.acks[:0], nil
}

// write appends b's line to the buffer. The line is built in place, one
// resource at a time, and when the buffer passes fileBufSize mid-line the
// part built so far is written out: the sink's memory is the buffer plus
// one resource's encoding, not the batch's (a whole batch's line runs to
// megabytes, and would be held in a buffer grown for each).
// The flush timer runs in this goroutine, so it only ever writes whole
// lines.
func (s *File) write(ctx context.Context, b *pipeline.Batch) {
	b.CheckLive()       // what it is about to read was not given back (pipeline.Lease)
	defer b.CheckLive() // nor while it read
	n := b.Len()
	start := otlpwire.RequestStart(b.Signal)
	if n == 0 || start == "" {
		return
	}
	lineStart := s.offset()
	s.lineAt = lineStart
	s.curItems = b.Items // what a stop that cannot write it counts
	if s.buf == nil {
		// At the first batch: a job's pipelines often have a signal that
		// never comes (traces and logs beside a scrape), whose file then
		// holds no buffer.
		s.buf = make([]byte, 0, fileBufSize)
	}
	s.buf = append(s.buf, start...)
	s.maxRes -= s.maxRes / 4 // forget a one-off big resource
	for i := range n {
		if i > 0 {
			s.buf = append(s.buf, ',')
		}
		// Write out first where the resource, if as big as the
		// biggest lately, would not fit: append would regrow the
		// buffer, leaving the old one as garbage and the new one kept.
		if len(s.buf)+s.maxRes > cap(s.buf) && s.pending() > 0 && !s.writeOutMidLine(ctx) {
			return
		}
		s.wctx, s.resAt = ctx, len(s.buf)
		s.metricsEnc.FlushAt = max(cap(s.buf)-fileFlushRoom, cap(s.buf)/2)
		s.buf = s.appendResource(s.buf, b, i)
		s.wctx = nil
		if s.midErr {
			s.midErr = false
			s.loseLine()
			return
		}
		s.maxRes = max(s.maxRes, len(s.buf)-s.resAt)
		if len(s.buf) >= fileBufSize && i < n-1 && !s.writeOutMidLine(ctx) {
			return
		}
	}
	s.buf = append(s.buf, otlpwire.RequestEnd...)
	s.buf = append(s.buf, '\n')
	s.lineBuilt(lineStart)
	s.acks = append(s.acks, s.curAcks...)
	s.curAcks = nil
	s.bufItems += s.curItems
	s.curItems = 0
	if s.tel.Enabled() { // a whole line
		s.tel.Sent(b.Signal, b.Items)
	}
	if len(s.buf) >= fileBufSize {
		s.flush(ctx)
	}
}

// writeOutMidLine writes out the buffer while a line is being built. It
// fails only at shutdown, past its deadline: then the line is cut short
// (the next run starts a new one, NewFile), and the whole lines before it
// in the buffer are lost with it.
func (s *File) writeOutMidLine(ctx context.Context) bool {
	if s.writeOut(ctx) {
		return true
	}
	s.loseLine()
	return false
}

// loseLine drops the pending bytes, the line being built and the whole
// lines before it, after a write-out failed at shutdown.
func (s *File) loseLine() {
	whole := bytes.Count(s.buf, []byte{'\n'})
	s.lostLines += 1 + whole
	s.unwrittenLines += 1 + whole
	s.unwrittenItems += s.bufItems + s.curItems
	s.bufItems, s.curItems = 0, 0
	s.linesLost(whole)
	s.buf = s.buf[:0]
	s.failAcks(errLostAtStop)
	if s.size > s.lineAt {
		// The line's first part was written out (a line longer than the
		// buffer): cut it off, so that the file ends with a whole line.
		s.cutBack(s.lineAt)
	}
}

// cutBack truncates the file to size, where the sink's writes left a whole
// line, if no other process appended since.
func (s *File) cutBack(size int64) {
	if s.f == nil || s.w != io.Writer(s.f) {
		return
	}
	fi, err := s.f.Stat()
	if err == nil && fi.Size() == s.size {
		err = s.f.Truncate(size)
	}
	if err != nil {
		s.log.Warn("file sink: cannot cut off the part of a line written before the stop's deadline; the next run ends it", "error", err)
		return
	}
	if fi.Size() == s.size {
		s.size = size
	}
}

// flushMidResource is the metrics encoder's Flush: called between two data
// points of a resource once the buffer nears its capacity, it writes the
// buffer out, so that one resource of a 20,000-series page (megabytes of
// JSON) does not grow the buffer for every scrape. After a failed write-out
// the encoder goes on appending, and write drops the line (loseLine).
func (s *File) flushMidResource(b []byte) []byte {
	s.buf = b
	if s.midErr || s.wctx == nil || s.pending() == 0 {
		return s.buf
	}
	if !s.writeOut(s.wctx) {
		s.midErr = true
		return s.buf
	}
	s.resAt = len(s.buf)
	return s.buf
}

// appendResource appends the OTLP/JSON of b's i-th resource.
func (s *File) appendResource(dst []byte, b *pipeline.Batch, i int) []byte {
	keys := s.o.RedactResourceKeys
	switch b.Signal {
	case pipeline.Metrics:
		return s.metricsEnc.AppendResourceMetrics(dst, b.Metrics[i], keys...)
	case pipeline.Traces:
		return otlpwire.AppendResourceSpans(dst, b.Traces[i], keys...)
	case pipeline.Logs:
		return otlpwire.AppendResourceLogs(dst, b.Logs[i], keys...)
	}
	return dst
}

func (s *File) flush(ctx context.Context) {
	if s.pending() == 0 {
		return
	}
	if !s.writeOut(ctx) {
		return
	}
	if cap(s.buf) > fileBufKeptTimes*fileBufSize {
		// One huge resource grew it: do not keep that for life.
		s.buf = make([]byte, 0, fileBufSize)
	}
}

// writeOut writes the buffer's pending bytes and empties it. It reports
// success, as writeAll does.
func (s *File) writeOut(ctx context.Context) bool {
	s.scrub.scrub(s.buf)
	if !s.writeAll(ctx, s.buf) {
		return false
	}
	s.buf = s.buf[:0]
	s.wroteOut()
	s.acksWritten()
	s.bufItems = 0
	return true
}

// writeAll writes p with one Write call, retrying after an error until it
// is written or ctx is done, and once Shutdown has begun no longer than its
// deadline. What a failed call appended is cut off again (undo), so the
// retry writes p whole; where it cannot be, the retry writes the rest. It
// reports success. The sink is failing from the first error until a write
// succeeds.
func (s *File) writeAll(ctx context.Context, p []byte) bool {
	delay := fileRetryMin
	stop := s.stopCh
	for {
		n, err := s.w.Write(p)
		if err == nil && n == len(p) {
			s.size += int64(n)
			s.tel.Wrote(n)
			if s.Failing() != nil {
				s.setFailing(nil)
				s.log.Info("file sink: writing again")
			}
			return true
		}
		if err == nil {
			err = io.ErrShortWrite
		}
		if !s.undo(n) {
			s.tel.Wrote(n)
			p = p[n:]
		}
		if s.Failing() == nil {
			s.log.Error("file sink: write failed: taking no more data until a write succeeds; retrying", "error", err, "retry_in", delay)
		} else {
			s.log.Warn("file sink: write failed again, retrying", "error", err, "retry_in", delay)
		}
		s.setFailing(err)
		// Those waiting are told now, not after the retries.
		s.failAcks(s.Failing())
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return false
		case <-stop:
			// Shutdown began: retry until its deadline, not forever
			// (shutdownCtx is set before stopCh is closed).
			ctx, stop = s.shutdownCtx, nil
			continue
		}
		delay = min(delay*2, fileRetryMax)
	}
}

// undo cuts off the n bytes a failed write call appended, so that the file
// ends where the sink's last whole write left it. It does so only when the
// file is as the sink left it plus those n bytes (no other process appended
// meanwhile), and reports whether the bytes are gone.
func (s *File) undo(n int) bool {
	if n == 0 {
		return true
	}
	if s.f == nil || s.w != io.Writer(s.f) {
		s.size += int64(n)
		return false
	}
	fi, err := s.f.Stat()
	if err == nil && fi.Size() == s.size+int64(n) {
		if err = s.f.Truncate(s.size); err == nil {
			return true
		}
	}
	if err != nil {
		s.log.Warn("file sink: cannot cut off a failed write's part of a line; it will be completed", "error", err)
	}
	s.size += int64(n)
	if err == nil {
		s.size = fi.Size()
	}
	return false
}
