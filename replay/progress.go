package replay

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/otelstep/otelstep/pipeline"
	"github.com/otelstep/otelstep/redact"
)

// maxReported bounds the skipped lines printed as they are found (and kept
// in the Summary): a file of garbage must not flood the terminal. The
// summary counts them all.
const maxReported = 100

// output serialises what goes to the progress writer: problem lines, retry
// notes and the bar, which is redrawn below them on a terminal. Every string
// passes through redact: a backend's error message could quote a header.
type output struct {
	mu       sync.Mutex
	w        io.Writer
	terminal bool
	redact   *redact.Redactor
	bar      bool // a bar is drawn on the current line
	lastNote time.Time
}

func (o *output) clean(s string) string {
	return o.redact.Replace(s)
}

// line prints s on a line of its own.
func (o *output) line(s string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.clearLocked()
	fmt.Fprintln(o.w, o.clean(s))
}

// note prints a retry notice, at most one a second (a down backend makes
// every worker retry at once).
func (o *output) note(s string) {
	o.mu.Lock()
	if time.Since(o.lastNote) < time.Second {
		o.mu.Unlock()
		return
	}
	o.lastNote = time.Now()
	o.mu.Unlock()
	o.line("replay: " + s)
}

func (o *output) drawBar(s string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.terminal {
		fmt.Fprint(o.w, "\r\x1b[K"+o.clean(s))
		o.bar = true
		return
	}
	fmt.Fprintln(o.w, o.clean(s))
}

func (o *output) clearLocked() {
	if o.bar {
		fmt.Fprint(o.w, "\r\x1b[K")
		o.bar = false
	}
}

func (o *output) clearBar() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.clearLocked()
}

// progress draws the bar (terminal) or a plain line every ProgressEvery
// until done is closed.
func (r *run) progress(done <-chan struct{}) {
	t := time.NewTicker(r.o.ProgressEvery)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			r.out.drawBar(r.progressLine())
		}
	}
}

func (r *run) progressLine() string {
	st := &r.stats
	el := time.Since(st.started).Seconds()
	b, total := st.bytes.Load(), st.total.Load()
	items := st.items.Load()
	frac := 1.0
	if total > 0 {
		frac = min(float64(b)/float64(total), 1)
	}
	eta := "-"
	if b > 0 && total > b {
		eta = (time.Duration(float64(total-b) / (float64(b) / el) * float64(time.Second))).Round(time.Second).String()
	}
	verb := "sent"
	if r.o.DryRun {
		verb = "decoded"
	}
	if r.o.Terminal {
		const width = 24
		n := int(frac * width)
		bar := strings.Repeat("#", n) + strings.Repeat(".", width-n)
		return fmt.Sprintf("[%s] %3.0f%%  %s lines  %s/%s  %s items %s  %s/s  ETA %s",
			bar, frac*100, human(float64(st.lines.Load())), bytesHuman(b), bytesHuman(total), human(float64(items)), verb, human(float64(items)/el), eta)
	}
	return fmt.Sprintf("replay: %.0f%%: %s, %s of %s read, %s %s (%s/s), %s, ETA %s",
		frac*100, plural(st.lines.Load(), "line", "lines"), bytesHuman(b), bytesHuman(total), plural(items, "item", "items"), verb, human(float64(items)/el),
		plural(st.requests.Load(), "request", "requests"), eta)
}

func human(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.2fG", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

func bytesHuman(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func ensureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--state %s: %w", dir, unwrapPathError(err))
	}
	return nil
}

// Summary is what one replay did.
type Summary struct {
	Signals [3]SignalSummary // indexed by pipeline.Signal
	// Other counts lines of no known signal (not an export request, too
	// long, blank), by reason.
	Other map[string]int64
	Files int
	Bytes int64 // read
	// AlreadySent counts lines a checkpoint says an earlier run sent.
	AlreadySent int64
	// SkippedEarlier counts lines earlier runs reported and skipped, not
	// acknowledged: never sent, so a run over them is not OK either.
	SkippedEarlier int
	// AcceptedEarlier counts lines earlier runs skipped that were
	// acknowledged (Options.AcceptSkipped, by this run or an earlier
	// one), AcceptedNow those this run acknowledged: they fail no run.
	AcceptedEarlier, AcceptedNow int
	// Pending counts last lines of files with no newline (being written,
	// or cut short by a killed writer): neither sent nor skipped, nor
	// marked done, left for a later run.
	Pending int
	// Problems are the first skipped lines, as FILE:LINE: reason;
	// Problems+MoreProblems is their number.
	Problems     []string
	MoreProblems int
	Elapsed      time.Duration
	DryRun       bool
	// Stopped: the context was cancelled (a clean stop); the checkpoints
	// say where to resume.
	Stopped bool
	// Err is why the replay stopped early (the backend refused the token,
	// stayed down past the retry budget), or a checkpoint write error.
	Err error

	redact *redact.Redactor // the token and header values
}

// SignalSummary is one signal's part.
type SignalSummary struct {
	Lines     int64 // of this signal, done: sent, or reported and skipped
	Requests  int64 // POSTs, retries included
	Retries   int64
	Resources int64 // sent (decoded, in a dry run)
	Items     int64 // points, spans or log records sent
	Rejected  int64 // items the backend reported rejected in a 2xx answer
	Skipped   map[string]int64
}

// Failures is the number of lines not sent for a reason worth an error
// (blank lines and unselected signals are not).
func (s *Summary) Failures() int64 {
	var n int64
	count := func(m map[string]int64) {
		for k, v := range m {
			if k != reasonBlank && k != reasonFiltered {
				n += v
			}
		}
	}
	for _, ss := range s.Signals {
		count(ss.Skipped)
	}
	count(s.Other)
	return n
}

// OK reports that everything read was sent: no error, no stop, no line
// skipped, now or by an earlier run, nothing rejected. A last line still
// being written (Pending) is not read yet.
func (s *Summary) OK() bool {
	if s.Err != nil || s.Stopped || s.Failures() > 0 || s.SkippedEarlier > 0 {
		return false
	}
	for _, ss := range s.Signals {
		if ss.Rejected > 0 {
			return false
		}
	}
	return true
}

// Reason says in one line why the replay is not OK ("" when it is). It
// never holds the token or a header value.
func (s *Summary) Reason() string {
	switch {
	case s.Err != nil:
		return s.redact.Replace(s.Err.Error())
	case s.Stopped:
		return "stopped before the end; the progress is saved: run the same command again (without --from-start) to continue"
	case s.Failures() > 0:
		return fmt.Sprintf("%s skipped (listed above)", plural(s.Failures(), "line was", "lines were"))
	case s.SkippedEarlier > 0:
		return fmt.Sprintf("%s skipped by earlier runs (listed by them) and never sent; --accept-skipped accepts them", plural(int64(s.SkippedEarlier), "line was", "lines were"))
	}
	for _, ss := range s.Signals {
		if ss.Rejected > 0 {
			return "the backend rejected part of what was sent"
		}
	}
	return ""
}

// plural is n and one or many, as n calls for.
func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Write prints the summary table. Its line counts add up: the lines read
// this run (per signal and other), those earlier runs sent and skipped,
// and the last lines left for a later run are every line of the files up
// to where this run stopped.
func (s *Summary) Write(w io.Writer) {
	verb := "sent"
	if s.DryRun {
		verb = "decoded (dry run: nothing sent)"
	}
	fmt.Fprintf(w, "replay: %s, %s read in %s; items %s\n", plural(int64(s.Files), "file", "files"), bytesHuman(s.Bytes), s.Elapsed.Round(time.Millisecond), verb)
	itemName := [3][2]string{{"point", "points"}, {"span", "spans"}, {"log record", "log records"}}
	for i, ss := range s.Signals {
		if ss.Lines == 0 && len(ss.Skipped) == 0 {
			continue
		}
		fmt.Fprintf(w, "  %-8s %s, %s (%s), %s, %s", pipeline.Signal(i), plural(ss.Lines, "line", "lines"), plural(ss.Requests, "request", "requests"),
			plural(ss.Retries, "retry", "retries"), plural(ss.Resources, "resource", "resources"), plural(ss.Items, itemName[i][0], itemName[i][1]))
		if ss.Rejected > 0 {
			fmt.Fprintf(w, ", %d rejected by the backend", ss.Rejected)
		}
		fmt.Fprintln(w, skippedText(ss.Skipped))
	}
	if len(s.Other) > 0 {
		fmt.Fprintf(w, "  %-8s%s\n", "other", skippedText(s.Other))
	}
	if s.AlreadySent > 0 {
		fmt.Fprintf(w, "  %s sent by earlier runs (the checkpoint; --from-start sends them again)\n", plural(s.AlreadySent, "line was", "lines were"))
	}
	if s.SkippedEarlier > 0 {
		fmt.Fprintf(w, "  %s skipped by earlier runs and never sent (listed by them; --accept-skipped accepts them)\n", plural(int64(s.SkippedEarlier), "line was", "lines were"))
	}
	if s.AcceptedEarlier > 0 {
		now := ""
		if s.AcceptedNow > 0 {
			now = fmt.Sprintf(", %d of them by this run", s.AcceptedNow)
		}
		fmt.Fprintf(w, "  %s skipped by earlier runs, never sent, and accepted (--accept-skipped%s): they fail no run\n", plural(int64(s.AcceptedEarlier), "line was", "lines were"), now)
	}
	if s.Pending > 0 {
		fmt.Fprintf(w, "  %s with no newline (still being written, or cut short by a killed job): not sent, kept for a later run\n",
			plural(int64(s.Pending), "file ends in a line", "files end in a line"))
	}
	if s.MoreProblems > 0 {
		fmt.Fprintf(w, "  (%d more skipped lines not listed)\n", s.MoreProblems)
	}
	if s.Stopped {
		fmt.Fprintln(w, "  stopped before the end: the rest was not read; the checkpoint says where to continue")
	}
}

func skippedText(m map[string]int64) string {
	if len(m) == 0 {
		return ""
	}
	var parts []string
	for _, k := range []string{reasonCorrupt, reasonRejected, reasonNotOTLP, reasonTooLong, reasonBlank, reasonFiltered} {
		if v := m[k]; v > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", v, k))
		}
	}
	return "; skipped: " + strings.Join(parts, ", ")
}

// summaryBuilder accumulates the Summary from the workers.
type summaryBuilder struct {
	mu sync.Mutex
	s  Summary
}

func (b *summaryBuilder) init() {
	for i := range b.s.Signals {
		b.s.Signals[i].Skipped = map[string]int64{}
	}
	b.s.Other = map[string]int64{}
}

func (b *summaryBuilder) lines(sig pipeline.Signal, n int64) {
	b.mu.Lock()
	b.s.Signals[sig].Lines += n
	b.mu.Unlock()
}

func (b *summaryBuilder) request(sig pipeline.Signal) {
	b.mu.Lock()
	b.s.Signals[sig].Requests++
	b.mu.Unlock()
}

func (b *summaryBuilder) retry(sig pipeline.Signal) {
	b.mu.Lock()
	b.s.Signals[sig].Retries++
	b.mu.Unlock()
}

func (b *summaryBuilder) sent(batch *pipeline.Batch, rejected int64) {
	b.mu.Lock()
	ss := &b.s.Signals[batch.Signal]
	ss.Resources += int64(batch.Len())
	ss.Items += int64(batch.Items)
	ss.Rejected += rejected
	b.mu.Unlock()
}

// skip counts p under sig (or Other when the line's signal is unknown) and, when report is set,
// prints it and keeps it in the Summary's Problems.
func (b *summaryBuilder) skip(sig pipeline.Signal, p problem, report bool, out *output) {
	b.mu.Lock()
	if p.hasSig {
		b.s.Signals[sig].Skipped[p.reason]++
	} else {
		b.s.Other[p.reason]++
	}
	printIt := false
	if report {
		if len(b.s.Problems) < maxReported {
			b.s.Problems = append(b.s.Problems, out.clean(p.String()))
			printIt = true
		} else {
			b.s.MoreProblems++
		}
	}
	b.mu.Unlock()
	if printIt {
		out.line(p.String())
	}
}

func (b *summaryBuilder) finish() *Summary {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.s
	return &s
}
