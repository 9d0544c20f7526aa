package scraper

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/otelstep/otelstep/config"
)

// Limits are what one scrape of a target may hold, as a Prometheus scrape
// config has them (sample_limit, label_limit, label_name_length_limit,
// label_value_length_limit) and applied where its scrape loop applies
// them. A page that breaks one is a failed scrape: up = 0, the
// scrape_samples_* series count as far as Prometheus counts, and the
// previous page's series get staleness markers. 0 is no limit.
type Limits struct {
	// Samples is the most samples a page may have that metric relabeling
	// kept (a series repeated on the page counts once). The page is read
	// to its end all the same, so that scrape_samples_scraped and
	// scrape_samples_post_metric_relabeling count all of it.
	Samples int
	// Labels is the most labels a series may have after metric relabeling
	// (__name__ and the target's labels included).
	Labels int
	// LabelNameLength and LabelValueLength are the longest a label name
	// and a label value (the metric name is __name__'s) may be, in bytes,
	// after metric relabeling.
	LabelNameLength  int
	LabelValueLength int
}

// errSampleLimit is Prometheus's error for a page over sample_limit.
var errSampleLimit = errors.New("sample limit exceeded")

// verify is Prometheus's verifyLabelLimits: the labels a new series has
// after metric relabeling against label_limit, label_name_length_limit and
// label_value_length_limit, with its messages.
func (l Limits) verify(lset labels.Labels) error {
	met := lset.Get(model.MetricNameLabel)
	if l.Labels > 0 {
		if n := lset.Len(); n > l.Labels {
			return fmt.Errorf("label_limit exceeded (metric: %.50s, number of labels: %d, limit: %d)", met, n, l.Labels)
		}
	}
	if l.LabelNameLength == 0 && l.LabelValueLength == 0 {
		return nil
	}
	return lset.Validate(func(lb labels.Label) error {
		if l.LabelNameLength > 0 && len(lb.Name) > l.LabelNameLength {
			return fmt.Errorf("label_name_length_limit exceeded (metric: %.50s, label name: %.50s, length: %d, limit: %d)", met, lb.Name, len(lb.Name), l.LabelNameLength)
		}
		if l.LabelValueLength > 0 && len(lb.Value) > l.LabelValueLength {
			return fmt.Errorf("label_value_length_limit exceeded (metric: %.50s, label name: %.50s, value: %.50q, length: %d, limit: %d)", met, lb.Name, lb.Value, len(lb.Value), l.LabelValueLength)
		}
		return nil
	})
}

// maxLabelLength is the longest label name or value a page may hold,
// whatever the limits: the most the labels library encodes. Longer
// panics in it (labels.ScratchBuilder.Labels), so such a line is refused
// before the parser builds its labels (checkLineTokens).
const maxLabelLength = config.MaxLabelLength

// checkLineTokens fails the sample line that starts at page[off:] if
// anything on it (the metric name, a label name or value, an exemplar's)
// is longer than maxLabelLength. Only a line longer than that can hold
// one, so it is called only on pages longer than that, and looks at
// nothing more than the line's length unless the line is longer too. A
// quoted string counts its bytes as written, escapes and all: never less
// than what it holds.
func checkLineTokens(page []byte, off int) error {
	line := page[off:]
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	if len(line) <= maxLabelLength {
		return nil
	}
	longest, start := 0, -1
	quoted := false
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case quoted && ch == '\\':
			i++ // the escaped byte is part of the string
		case quoted && ch == '"':
			longest, start, quoted = max(longest, i-start), -1, false
		case quoted:
		case ch == '"':
			if start >= 0 { // a run that ends at the quote
				longest = max(longest, i-start)
			}
			start, quoted = i+1, true
		case strings.IndexByte("{},= \t#", ch) >= 0:
			if start >= 0 {
				longest, start = max(longest, i-start), -1
			}
		case start < 0:
			start = i
		}
	}
	if start >= 0 {
		longest = max(longest, len(line)-start)
	}
	if longest > maxLabelLength {
		return fmt.Errorf("a name, label or value of %d bytes: more than %d, the longest a label can hold", longest, maxLabelLength)
	}
	return nil
}

// panicError is a panic recovered in a scrape, as its error: the scrape
// fails, the process goes on.
type panicError struct {
	val   any
	where string // the function that panicked, file:line
	stack []byte
}

func (e *panicError) Error() string {
	return fmt.Sprintf("recovered from a panic in %s: %v", e.where, e.val)
}

// recovered is the panicError of r, a value recover returned: where names
// the innermost function outside the runtime on the panicking goroutine's
// stack, the one that called panic.
func recovered(r any, stack []byte) *panicError {
	e := &panicError{val: r, stack: stack, where: "?"}
	pcs := make([]uintptr, 32)
	n := runtime.Callers(3, pcs) // runtime.Callers, recovered, the deferred function
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		if f.Function != "" && !strings.HasPrefix(f.Function, "runtime.") {
			e.where = fmt.Sprintf("%s (%s:%d)", f.Function, shortFile(f.File), f.Line)
			break
		}
		if !more {
			break
		}
	}
	return e
}

// shortFile is the last two elements of a source file's path.
func shortFile(f string) string {
	if i := strings.LastIndexByte(f, '/'); i > 0 {
		if j := strings.LastIndexByte(f[:i], '/'); j >= 0 {
			return f[j+1:]
		}
	}
	return f
}
