package replay

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/otelstep/otelstep/internal/lines"
	"github.com/otelstep/otelstep/pipeline"
)

// line is one JSONL line as read.
type line struct {
	no   int    // 1-based line number in its file
	data []byte // without the newline
}

// chunk is a run of consecutive lines of one file and one signal, sent as
// one request: the unit of work and of checkpointing. Its span covers every
// byte of its lines, so chunks tile the part of the file that is read.
type chunk struct {
	file  *fileRun
	sig   pipeline.Signal
	span  span
	lines []line
	// notes are lines already judged by the reader (blank, not an export
	// request, too long): done with the chunk. Lines of a signal not
	// selected are in no chunk at all (see readFile).
	notes []problem
	// noteSigs[i] is notes[i]'s signal when it has one.
	noteSigs []pipeline.Signal
	bytes    int64 // of the lines' data, for the batch size limit
	// big: its line is longer than the batch size limit, and the chunk
	// holds run.big until it is processed.
	big bool
}

// problem is one line that is skipped, and why.
type problem struct {
	file   string
	line   int
	reason string // a skipReason
	detail string
	silent bool // counted, not reported (blank lines, signals not selected)
	hasSig bool // the line's signal is known (it is the chunk's)
}

func (p problem) String() string {
	if p.detail == "" {
		return fmt.Sprintf("%s:%d: %s", p.file, p.line, p.reason)
	}
	return fmt.Sprintf("%s:%d: %s: %s", p.file, p.line, p.reason, p.detail)
}

// Reasons a line is skipped, as the summary counts them.
const (
	reasonCorrupt  = "corrupt"
	reasonNotOTLP  = "not an OTLP export request"
	reasonTooLong  = "line too long"
	reasonRejected = "rejected by the backend"
	reasonBlank    = "blank"
	reasonFiltered = "signal not selected"
)

// sniff tells the signal of an export request from its first key, without
// decoding it: enough to group lines into per-signal requests and to skip
// unselected signals cheaply. ok is false for anything else.
func sniff(data []byte) (pipeline.Signal, bool) {
	i := 0
	for i < len(data) && isSpace(data[i]) {
		i++
	}
	if i >= len(data) || data[i] != '{' {
		return 0, false
	}
	i++
	for i < len(data) && isSpace(data[i]) {
		i++
	}
	if i >= len(data) || data[i] != '"' {
		return 0, false
	}
	end := bytes.IndexByte(data[i+1:], '"')
	if end < 0 {
		return 0, false
	}
	switch string(data[i+1 : i+1+end]) {
	case "resourceMetrics", "resource_metrics":
		return pipeline.Metrics, true
	case "resourceSpans", "resource_spans":
		return pipeline.Traces, true
	case "resourceLogs", "resource_logs":
		return pipeline.Logs, true
	}
	return 0, false
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// readFile cuts one file into chunks from its checkpoint on (to fr.end if
// set, a line's start) and hands them
// to emit, which blocks while the senders are busy and returns false to stop
// (a stop or a fatal error). Chunks hold copies of their lines.
func (r *run) readFile(fr *fileRun, emit func(*chunk) bool) error {
	f, err := os.Open(fr.in.abs)
	if err != nil {
		return fmt.Errorf("%s: %w", fr.in.path, unwrapPathError(err))
	}
	defer f.Close()
	if _, err := f.Seek(fr.start.Offset, io.SeekStart); err != nil {
		return fmt.Errorf("%s: %w", fr.in.path, err)
	}
	lr := lines.NewReader(f, 256<<10, r.o.MaxLineBytes, fr.start.Offset)
	lineNo := fr.start.Line
	skip := fr.start.Done // ranges done by an earlier run, sorted
	var cur *chunk
	flush := func() bool {
		if cur == nil {
			return true
		}
		c := cur
		cur = nil
		return emit(c)
	}
	for {
		for len(skip) > 0 && skip[0].Start < lr.Offset() {
			skip = skip[1:] // cannot happen with a checkpoint we wrote; be safe
		}
		if len(skip) > 0 && lr.Offset() == skip[0].Start {
			// Done by an earlier run: jump over it. The tracker already
			// holds the range.
			if !flush() {
				return nil
			}
			s := skip[0]
			skip = skip[1:]
			if _, err := f.Seek(s.End, io.SeekStart); err != nil {
				return fmt.Errorf("%s: %w", fr.in.path, err)
			}
			lr.Reset(f, s.End)
			lineNo = s.FirstLine + s.Lines - 1
			continue
		}
		if fr.end > 0 && lr.Offset() >= fr.end {
			break // a backfill's range ends here
		}
		data, start, newline, tooLong, err := lr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			flush()
			return fmt.Errorf("%s:%d: %w", fr.in.path, lineNo+1, err)
		}
		if !newline {
			// The last line has no newline yet: its writer is still
			// writing it (or was killed mid-line, and its next start
			// ends it with one). Neither sent nor skipped: the checkpoint
			// stays before it, and the next run reads it whole.
			r.pending++
			r.out.line(fmt.Sprintf("%s:%d: the last line has no newline yet (%d bytes: still being written, or cut short by a killed job): not sent, kept for a later run", fr.in.path, lineNo+1, lr.Offset()-start))
			break
		}
		lineNo++
		size := lr.Offset() - start
		r.stats.bytes.Add(size)
		r.stats.lines.Add(1)
		var (
			sig  pipeline.Signal
			note *problem
		)
		switch {
		case tooLong:
			note = &problem{reason: reasonTooLong, detail: fmt.Sprintf("over %d bytes", r.o.MaxLineBytes)}
		case len(bytes.TrimSpace(data)) == 0:
			note = &problem{reason: reasonBlank, silent: true}
		default:
			var ok bool
			sig, ok = sniff(data)
			switch {
			case !ok:
				note = &problem{reason: reasonNotOTLP, detail: "its first key is not resourceMetrics, resourceSpans or resourceLogs"}
			case !r.o.selected(sig):
				// Not part of any chunk, so never marked done: the
				// checkpoint is the file's, whatever --signal says, and a
				// later replay of this signal still finds the line unsent.
				if !flush() {
					return nil
				}
				r.sum.skip(sig, problem{file: fr.in.path, line: lineNo, reason: reasonFiltered, silent: true, hasSig: true}, false, r.out)
				continue
			}
		}
		if note != nil {
			note.file, note.line = fr.in.path, lineNo
			if cur == nil {
				// A chunk of judged lines only: it still has to pass
				// through the tracker, in order.
				cur = &chunk{file: fr, sig: sig, span: span{Start: start, FirstLine: lineNo}}
			}
			cur.notes = append(cur.notes, *note)
			cur.noteSigs = append(cur.noteSigs, sig)
			cur.span.End, cur.span.Lines = lr.Offset(), lineNo-cur.span.FirstLine+1
			continue
		}
		if cur != nil && (len(cur.lines) > 0 && (cur.sig != sig || cur.bytes+int64(len(data)) > int64(r.o.BatchBytes))) {
			if !flush() {
				return nil
			}
		}
		big := len(data) > r.o.BatchBytes
		if big && cur != nil && !flush() { // a chunk of its own (and of notes after it)
			return nil
		}
		if cur == nil {
			cur = &chunk{file: fr, sig: sig, span: span{Start: start, FirstLine: lineNo}}
		}
		if big {
			// Decoded and sent one at a time: wait for the one before.
			select {
			case r.big <- struct{}{}:
				cur.big = true
			case <-r.ctx.Done():
				return nil
			}
			lr.Take()
		} else {
			data = bytes.Clone(data)
		}
		cur.sig = sig
		cur.lines = append(cur.lines, line{no: lineNo, data: data})
		cur.bytes += int64(len(data))
		cur.span.End, cur.span.Lines = lr.Offset(), lineNo-cur.span.FirstLine+1
	}
	flush()
	return nil
}
