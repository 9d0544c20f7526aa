package replay

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// The delivery log is the record's journal: each range of lines delivered
// (or backfilled) since the checkpoint was last written is appended to it,
// a line of text each ("START END FIRST_LINE LINES"), within LogEvery of
// its delivery, from a goroutine of its own; the checkpoint, when it is
// written, holds everything the log held, and the log is emptied. Written
// through the page cache (not synced), it survives the process: a restart
// after a kill -9 (a crash loop, say) resends what was delivered in the
// last LogEvery, not in the last RecordOptions.Every. Whoever reads the
// checkpoint (OpenRecord, `otelstep replay`) reads the log with it
// (loadCheckpoint); a last line cut by a kill is ignored.

// defaultLogEvery bounds how long a delivered range waits in memory
// before it is in the log: what a restart may send twice.
const defaultLogEvery = 200 * time.Millisecond

// logPath is the delivery log beside the checkpoint at path.
func logPath(checkpointPath string) string {
	return strings.TrimSuffix(checkpointPath, ".json") + ".log"
}

// readDeliveryLog returns the ranges in the log beside the checkpoint at
// path that lie within the file's size bytes; none when there is no log.
// A line that does not parse (cut by a kill) is ignored.
func readDeliveryLog(path string, size int64) ([]span, error) {
	data, err := os.ReadFile(logPath(path))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("delivery log %s: %w", logPath(path), unwrapPathError(err))
	}
	var out []span
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break // cut short: its range is sent again
		}
		line := string(data[:i])
		data = data[i+1:]
		f := strings.Fields(line)
		if len(f) != 4 {
			continue
		}
		var v [4]int64
		ok := true
		for j := range f {
			n, err := strconv.ParseInt(f[j], 10, 64)
			ok = ok && err == nil && n >= 0
			v[j] = n
		}
		s := span{Start: v[0], End: v[1], FirstLine: int(v[2]), Lines: int(v[3])}
		if !ok || s.End <= s.Start || s.End > size || s.FirstLine < 1 || s.Lines < 1 {
			continue
		}
		out = append(out, s)
	}
	return out, nil
}

// mergeDone adds spans (done) to cp: its Offset advances over those that
// join it, the rest join Done, overlapping ones merged.
func mergeDone(cp *checkpoint, spans []span) {
	if len(spans) == 0 {
		return
	}
	var set spanSet
	if cp.Offset > 0 {
		set.add(span{Start: 0, End: cp.Offset, FirstLine: 1, Lines: cp.Line})
	}
	for _, s := range cp.Done {
		set.add(s)
	}
	for _, s := range spans {
		set.add(s)
	}
	all := set.spans
	if len(all) > 0 && all[0].Start == 0 {
		cp.Offset, cp.Line = all[0].End, all[0].last()
		all = all[1:]
	}
	cp.Done = append([]span(nil), all...)
}

// logLocked queues s for the delivery log, which it has written within
// LogEvery; r.mu is held.
func (r *Record) logLocked(s span) {
	r.logPend = append(r.logPend, s)
	if r.logTimer == nil && !r.closed {
		r.logTimer = time.AfterFunc(r.logEvery, r.flushLog)
	}
}

// flushLog appends the ranges queued for the log.
func (r *Record) flushLog() {
	r.logMu.Lock()
	defer r.logMu.Unlock()
	r.mu.Lock()
	pend := r.logPend
	r.logPend, r.logTimer = nil, nil
	r.mu.Unlock()
	if len(pend) == 0 {
		return
	}
	if r.logF == nil {
		f, err := os.OpenFile(logPath(r.path), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			r.logErr(err)
			return
		}
		r.logF = f
	}
	w := bufio.NewWriter(r.logF)
	for _, s := range pend {
		fmt.Fprintf(w, "%d %d %d %d\n", s.Start, s.End, s.FirstLine, s.Lines)
	}
	if err := w.Flush(); err != nil {
		r.logErr(err)
	}
}

// logErr logs the first error writing the delivery log: the checkpoint
// is still written on its schedule, so at worst a restart resends more.
func (r *Record) logErr(err error) {
	if !r.logFailed {
		r.logFailed = true
		r.log.Warn("delivery record: cannot append to the delivery log; a restart may resend what was delivered since the record was last written", "error", err)
	}
}

// emptyLog empties the delivery log once a checkpoint holding everything
// it held is written; r.logMu is held.
func (r *Record) emptyLog(remove bool) {
	if r.logF != nil {
		if remove {
			r.logF.Close()
			r.logF = nil
		} else if err := r.logF.Truncate(0); err != nil {
			r.logErr(err)
		}
	}
	if remove || r.logF == nil {
		if err := os.Remove(logPath(r.path)); err != nil && !errors.Is(err, os.ErrNotExist) {
			r.logErr(err)
		}
	}
}
