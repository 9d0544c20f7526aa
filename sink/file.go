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

	"github.com/otelstep/otelstep/otlpjson"
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
}

const (
	fileFlushInterval = 200 * time.Millisecond
	fileBufSize       = 256 << 10
	// fileBufKeptTimes bounds the buffer kept after one huge resource
	// grew it: this many times its size, in either mode.
	fileBufKeptTimes = 4
	fileRetryMin     = 100 * time.Millisecond
	fileRetryMax     = 5 * time.Second
)

// File is the JSONL sink: one OTLP/JSON export request per line, appended to
// Path. It never drops: Enqueue blocks while the queue is full. Lines are
// built in a buffer of 256 KiB (where the file takes direct writes, 512 KiB
// to 2 MiB by the rate it is written at, see direct.go) that is flushed
// when it is idle, at least every 200 ms, and on shutdown (followed by fsync), and when it fills (a line longer
// than the buffer goes out in pieces, see write). A write error
// is logged with the path and retried until it succeeds (or the shutdown
// deadline passes), so the queue fills and backpressure reaches the senders.
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

	buf []byte
	// kept is how many bytes at buf's start are in the file already: in
	// direct mode the part block after the last whole one, which the next
	// direct write writes again (direct.go).
	kept      int
	lostLines int
	// written counts the bytes written to the file, directly or not: the
	// rate the direct-mode buffer is sized by.
	written int64
	// maxRes is about the most one resource's OTLP/JSON added to the buffer
	// lately between two write-outs (write): a metrics resource bigger than
	// the buffer is written out while it is encoded (flushMidResource).
	maxRes int
	wb     *writeback  // nil unless w is a regular file
	dio    *directFile // nil unless the file takes O_DIRECT writes
	// now is the clock resize reads (time.Now; tests set their own).
	now func() time.Time
	// metricsEnc reuses the JSON of shared point attributes, and writes
	// out a metrics resource bigger than the buffer while encoding it
	// (flushMidResource).
	metricsEnc otlpjson.MetricsEncoder
	// While write encodes a resource: its ctx, where in the buffer the
	// resource's bytes not yet written out start, and whether a write-out
	// in the middle of it failed.
	wctx   context.Context
	resAt  int
	midErr bool

	tel       *telemetry.Sink
	unobserve func() // stops the queue's observation
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
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		end := fi.Size()
		s.wb = &writeback{fd: f.Fd(), chunk: writebackChunk, off: end, started: end, last: end, dropped: alignDown(end)}
		s.dio = startDirect(o.Path, end)
	}
	return s, nil
}

// startDirect opens path for direct writes from end, or returns nil where
// the file system refuses them or the file's last part block cannot be
// read (the first direct write writes it again).
func startDirect(path string, end int64) *directFile {
	f := openDirect(path)
	if f == nil {
		return nil
	}
	d := &directFile{f: f, fd: int(f.Fd()), base: end &^ (directAlign - 1), size: directBufMin}
	if n := int(end - d.base); n > 0 {
		r, err := os.Open(path)
		if err == nil {
			d.part = make([]byte, n)
			_, err = r.ReadAt(d.part, d.base)
			r.Close()
		}
		if err != nil {
			f.Close()
			return nil
		}
	}
	return d
}

// pending is how many bytes in the buffer are not in the file yet.
func (s *File) pending() int { return len(s.buf) - s.kept }

// bufSize is the buffer's size: past it, lines are written out.
func (s *File) bufSize() int {
	if s.dio != nil {
		return s.dio.size
	}
	return fileBufSize
}

// newBuf returns an empty buffer for the mode the sink is in.
func (s *File) newBuf() []byte {
	if s.dio != nil {
		return alignedBuf(s.dio.size)
	}
	return make([]byte, 0, fileBufSize)
}

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
		now:    time.Now,
	}
	s.metricsEnc.Flush = s.flushMidResource
	s.tel = o.Telemetry
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
	return s.enqueueReserved(b, -1)
}

// queued is a batch in the queue, with its count of items when its sender
// knew it (-1 otherwise).
type queued struct {
	b     *pipeline.Batch
	items int
}

// wantsItems says whether the sink counts what it writes: the Fanout then
// counts a batch's items for it, once for all its sinks.
func (s *File) wantsItems() bool { return s.tel.Enabled() }

func (s *File) reserve(ctx context.Context) error {
	select {
	case <-s.stopCh:
		return pipeline.ErrStopped
	default:
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

func (s *File) release() { <-s.sem }

func (s *File) enqueueReserved(b *pipeline.Batch, items int) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		<-s.sem
		return pipeline.ErrStopped
	}
	s.q <- queued{b, items} // never blocks: a slot is reserved
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
			s.writeCounted(runCtx, q.b, q.items)
			q.b.Release() // the line is in the buffer: nothing points into it
			if len(s.q) == 0 {
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
		s.writeCounted(ctx, q.b, q.items)
		q.b.Release()
	}
	s.flush(ctx)
	lost := s.pending() > 0 || s.lostLines > 0 || len(s.q) > 0
	if lost {
		s.log.Error("file sink: shutdown deadline reached, data not written",
			"buffered_bytes", s.pending(), "lost_lines", s.lostLines, "queued_batches", len(s.q))
	}
	s.unobserve()
	if s.dio != nil {
		s.dio.f.Close()
	}
	if s.f != nil {
		if !lost {
			if err := s.f.Sync(); err != nil {
				s.log.Error("file sink: fsync failed", "error", err)
			} else {
				s.wb.synced()
			}
		}
		if err := s.f.Close(); err != nil {
			s.log.Error("file sink: close failed", "error", err)
		}
	}
}

// write appends b's line to the buffer. The line is built in place, one
// resource at a time, and when the buffer passes fileBufSize mid-line the
// part built so far is written out: the sink's memory is the buffer plus
// one resource's encoding, not the batch's (a batch of the job's default
// 8192 points made 2-4 MB lines, held in a buffer grown for each).
// The flush timer runs in this goroutine, so it only ever writes whole
// lines.
func (s *File) write(ctx context.Context, b *pipeline.Batch) { s.writeCounted(ctx, b, -1) }

// writeCounted is write of a batch of items items (-1: not counted), for
// the sink's count of what it wrote.
func (s *File) writeCounted(ctx context.Context, b *pipeline.Batch, items int) {
	n := b.Len()
	start := otlpjson.RequestStart(b.Signal)
	if n == 0 || start == "" {
		return
	}
	if s.buf == nil {
		// At the first batch: a job's pipelines often have a signal that
		// never comes (traces and logs beside a scrape), whose file then
		// holds no buffer.
		s.buf = s.newBuf()
		if s.dio != nil {
			s.buf = append(s.buf, s.dio.part...)
			s.kept, s.dio.part = len(s.buf), nil
		}
	}
	s.buf = append(s.buf, start...)
	s.maxRes -= s.maxRes / 4 // forget a one-off big resource
	for i := range n {
		if i > 0 {
			s.buf = append(s.buf, ',')
		}
		// Write out first where the resource, if as big as the
		// biggest lately, would not fit: append would regrow the
		// buffer (leaving the old one as garbage, the new one kept
		// and, in direct mode, not aligned), which at 84 targets made
		// the 2 MiB buffer 2.5 MB. Less than directMin pending stays
		// (a direct write of it costs more than the page cache).
		if len(s.buf)+s.maxRes > cap(s.buf) && s.pending() >= s.earlyMin() && !s.writeOutMidLine(ctx) {
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
		if len(s.buf) >= s.bufSize() && i < n-1 && !s.writeOutMidLine(ctx) {
			return
		}
	}
	s.buf = append(s.buf, otlpjson.RequestEnd...)
	s.buf = append(s.buf, '\n')
	if s.tel.Enabled() { // a whole line
		if items < 0 {
			items = b.Items()
		}
		s.tel.Sent(b.Signal, items)
	}
	if len(s.buf) >= s.bufSize() {
		s.flush(ctx)
	}
}

// writeOutMidLine writes out the buffer while a line is being built. It
// fails only at shutdown, past its deadline: then the line is cut short
// (the next run starts a new one, NewFile), and the whole lines before it
// in the buffer are lost with it.
func (s *File) writeOutMidLine(ctx context.Context) bool {
	if s.writeOut(ctx, false) {
		return true
	}
	s.loseLine()
	return false
}

// loseLine drops the pending bytes, the line being built and the whole
// lines before it, after a write-out failed at shutdown.
func (s *File) loseLine() {
	s.lostLines += 1 + bytes.Count(s.buf[s.kept:], []byte{'\n'})
	s.buf = s.buf[:s.kept]
}

// flushMidResource is the metrics encoder's Flush: called between two data
// points of a resource once the buffer nears its capacity, it writes the
// buffer out, so that one resource of a 20,000-series page (megabytes of
// JSON) does not grow the buffer for every scrape. After a failed write-out
// the encoder goes on appending, and write drops the line (loseLine).
func (s *File) flushMidResource(b []byte) []byte {
	s.buf = b
	if s.midErr || s.wctx == nil || s.pending() < s.earlyMin() {
		return s.buf
	}
	if !s.writeOut(s.wctx, false) {
		s.midErr = true
		return s.buf
	}
	s.resAt = len(s.buf)
	return s.buf
}

// earlyMin is the least pending that write writes out before a resource
// that may not fit.
func (s *File) earlyMin() int {
	if s.dio != nil {
		return directMin
	}
	return 1
}

// appendResource appends the OTLP/JSON of b's i-th resource.
func (s *File) appendResource(dst []byte, b *pipeline.Batch, i int) []byte {
	keys := s.o.RedactResourceKeys
	switch b.Signal {
	case pipeline.Metrics:
		return s.metricsEnc.AppendResourceMetrics(dst, b.Metrics[i], keys...)
	case pipeline.Traces:
		return otlpjson.AppendResourceSpans(dst, b.Traces[i], keys...)
	case pipeline.Logs:
		return otlpjson.AppendResourceLogs(dst, b.Logs[i], keys...)
	}
	return dst
}

func (s *File) flush(ctx context.Context) {
	if s.pending() == 0 {
		return
	}
	if !s.writeOut(ctx, true) {
		return
	}
	if cap(s.buf) > fileBufKeptTimes*s.bufSize() {
		// One huge resource grew it: do not keep that for life.
		s.buf = append(s.newBuf(), s.buf...)
	}
	s.resize(s.now())
}

// resize sizes the direct-mode buffer by the rate the file was written at
// since the last time it was sized, at least directRateWindow ago (see
// directBufMin). It is called after a flush, when the buffer holds at most
// the part block kept for the next direct write.
func (s *File) resize(now time.Time) {
	d := s.dio
	if d == nil {
		return
	}
	if d.since.IsZero() {
		d.since, d.at = now, s.written
		return
	}
	el := now.Sub(d.since)
	if el < directRateWindow {
		return
	}
	rate := float64(s.written-d.at) / el.Seconds()
	d.since, d.at = now, s.written
	if n := sizeFor(rate, d.size); n != d.size {
		d.size = n
		if s.buf != nil {
			s.buf = append(alignedBuf(n), s.buf...)
		}
	}
}

// writeOut writes the buffer's pending bytes. In direct mode, the whole
// blocks go out as one direct write when they are directMin or more, and
// the rest stays in the buffer; a flush (final) then writes that rest
// through the page cache, keeping the part block for the next direct
// write. It reports success, as writeAll does.
func (s *File) writeOut(ctx context.Context, final bool) bool {
	if s.dio != nil {
		if n := alignDownDirect(len(s.buf)); n-s.kept >= directMin {
			if err := s.writeDirect(n); err != nil {
				s.log.Warn("file sink: direct write failed; writing through the page cache from now on", "error", err)
				s.dio.f.Close()
				s.dio = nil
			} else if !final || s.pending() == 0 {
				return true
			}
		}
	}
	if !s.writeAll(ctx, s.buf[s.kept:]) {
		return false
	}
	if s.dio == nil {
		s.buf, s.kept = s.buf[:0], 0
		return true
	}
	s.slide(alignDownDirect(len(s.buf)))
	s.kept = len(s.buf)
	return true
}

// writeDirect writes buf's first n bytes, a whole number of blocks, with
// one direct write, and slides the rest to the buffer's start.
func (s *File) writeDirect(n int) error {
	if !isAligned(s.buf) {
		s.buf = append(alignedBuf(max(cap(s.buf), s.dio.size)), s.buf...)
	}
	w, err := pwriteDirect(s.dio.fd, s.buf[:n], s.dio.base)
	if w > s.kept {
		s.wb.wrote(w - s.kept)
		s.dio.wrote += int64(w - s.kept)
		s.written += int64(w - s.kept)
		s.tel.Wrote(w - s.kept)
	}
	s.slide(w)
	return err
}

// slide drops buf's first n bytes, which are in the file, moving base on.
func (s *File) slide(n int) {
	if n == 0 {
		return
	}
	s.buf = s.buf[:copy(s.buf, s.buf[n:])]
	s.kept = max(s.kept-n, 0)
	s.dio.base += int64(n)
}

// writeAll writes p with one Write call, retrying the rest after an error
// until it is written or ctx is done, and once Shutdown has begun no longer
// than its deadline. It reports success.
func (s *File) writeAll(ctx context.Context, p []byte) bool {
	delay := fileRetryMin
	stop := s.stopCh
	for {
		n, err := s.w.Write(p)
		s.wb.wrote(n)
		s.written += int64(n)
		s.tel.Wrote(n)
		if err == nil && n == len(p) {
			return true
		}
		if err == nil {
			err = io.ErrShortWrite
		}
		p = p[n:]
		s.log.Error("file sink: write failed, retrying", "error", err, "retry_in", delay)
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
