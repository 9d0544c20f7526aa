package report

import (
	"cmp"
	"encoding/hex"
	"math"
	"os"
	"slices"
	"strings"

	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

type spanKey struct{ service, name string }

type spanAcc struct {
	durs   []float64 // seconds, every span's: the quantiles are exact
	errors int
}

// SpanStats are one service's spans of one name.
type SpanStats struct {
	Service string  `json:"service"`
	Name    string  `json:"name"`
	Count   int     `json:"count"`
	Errors  int     `json:"errors"`
	P50     float64 `json:"p50_s"`
	P99     float64 `json:"p99_s"`
	Max     float64 `json:"max_s"`
}

// quantile is the nearest-rank quantile of sorted values: the smallest
// value with at least q of the values at or below it.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	k := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(k, len(sorted)-1))]
}

// Spans returns the per service and span name figures, busiest first.
func (j *Job) Spans() []SpanStats {
	out := make([]SpanStats, 0, len(j.spans))
	for k, a := range j.spans {
		slices.Sort(a.durs)
		out = append(out, SpanStats{Service: k.service, Name: k.name, Count: len(a.durs), Errors: a.errors,
			P50: quantile(a.durs, 0.5), P99: quantile(a.durs, 0.99), Max: a.durs[len(a.durs)-1]})
	}
	slices.SortFunc(out, func(a, b SpanStats) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Service, b.Service), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// WaterfallSpan is one span of a trace drawn as a waterfall.
type WaterfallSpan struct {
	Service  string  `json:"service"`
	Name     string  `json:"name"`
	SpanID   string  `json:"span_id"`
	ParentID string  `json:"parent_id,omitempty"`
	StartS   float64 `json:"start_s"` // from the trace's start
	DurS     float64 `json:"dur_s"`
	Error    bool    `json:"error,omitempty"`
	Depth    int     `json:"depth"`
}

// Trace is one of the slowest traces.
type Trace struct {
	TraceID string          `json:"trace_id"`
	Root    string          `json:"root"` // service: name of its root span (or first span)
	DurS    float64         `json:"dur_s"`
	Spans   []WaterfallSpan `json:"spans"`
	// Truncated: more spans than kept.
	Truncated bool `json:"truncated,omitempty"`
}

const maxWaterfallSpans = 300

type traceAcc struct {
	id         [16]byte
	start, end uint64
	spans      []rawSpan
	truncated  bool
}

type rawSpan struct {
	service, name    string
	spanID, parentID [8]byte
	start, end       uint64
	err              bool
}

// slowTraces keeps the candidates for the slowest traces in one pass: the
// traces with the longest extent so far, a bounded number of them, each
// with its spans. A trace evicted and seen again starts over, so a
// waterfall may lack spans that came before it was evicted; the
// candidates kept are many times the traces shown to make that rare.
type slowTraces struct {
	show int
	cap  int
	m    map[[16]byte]*traceAcc
}

func newSlowTraces(show int) *slowTraces {
	return &slowTraces{show: show, cap: max(64, 16*show), m: map[[16]byte]*traceAcc{}}
}

func (s *slowTraces) add(sp *tracepb.Span, svc string, isErr bool) {
	if len(sp.TraceId) != 16 {
		return
	}
	id := [16]byte(sp.TraceId)
	t := s.m[id]
	if t == nil {
		t = &traceAcc{id: id, start: sp.StartTimeUnixNano, end: sp.EndTimeUnixNano}
		s.m[id] = t
	}
	t.start = min(t.start, sp.StartTimeUnixNano)
	t.end = max(t.end, sp.EndTimeUnixNano)
	if len(t.spans) < maxWaterfallSpans {
		r := rawSpan{service: svc, name: sp.Name, start: sp.StartTimeUnixNano, end: sp.EndTimeUnixNano, err: isErr}
		copy(r.spanID[:], sp.SpanId)
		copy(r.parentID[:], sp.ParentSpanId)
		t.spans = append(t.spans, r)
	} else {
		t.truncated = true
	}
	if len(s.m) > 2*s.cap {
		s.shrink()
	}
}

func extent(t *traceAcc) uint64 {
	if t.end > t.start {
		return t.end - t.start
	}
	return 0
}

// shrink keeps the cap longest traces.
func (s *slowTraces) shrink() {
	all := make([]*traceAcc, 0, len(s.m))
	for _, t := range s.m {
		all = append(all, t)
	}
	slices.SortFunc(all, func(a, b *traceAcc) int { return cmp.Compare(extent(b), extent(a)) })
	for _, t := range all[s.cap:] {
		delete(s.m, t.id)
	}
}

// SlowestTraces returns the slowest traces, slowest first, as waterfalls.
func (j *Job) SlowestTraces() []Trace {
	s := j.traces
	all := make([]*traceAcc, 0, len(s.m))
	for _, t := range s.m {
		all = append(all, t)
	}
	slices.SortFunc(all, func(a, b *traceAcc) int {
		return cmp.Or(cmp.Compare(extent(b), extent(a)), slices.Compare(a.id[:], b.id[:]))
	})
	var out []Trace
	for _, t := range all[:min(len(all), s.show)] {
		out = append(out, waterfall(t))
	}
	return out
}

func waterfall(t *traceAcc) Trace {
	tr := Trace{TraceID: hex.EncodeToString(t.id[:]), DurS: float64(extent(t)) / 1e9, Truncated: t.truncated}
	spans := slices.Clone(t.spans)
	slices.SortStableFunc(spans, func(a, b rawSpan) int { return cmp.Compare(a.start, b.start) })
	byID := map[[8]byte]int{}
	for i, sp := range spans {
		byID[sp.spanID] = i
	}
	depth := make([]int, len(spans))
	for i := range spans {
		d, p := 0, spans[i].parentID
		for steps := 0; p != [8]byte{} && steps < len(spans); steps++ {
			k, ok := byID[p]
			if !ok {
				break
			}
			d++
			p = spans[k].parentID
		}
		depth[i] = d
	}
	for i, sp := range spans {
		w := WaterfallSpan{Service: sp.service, Name: sp.name, SpanID: hex.EncodeToString(sp.spanID[:]),
			StartS: float64(sp.start-min(sp.start, t.start)) / 1e9, Error: sp.err, Depth: depth[i]}
		if sp.end > sp.start {
			w.DurS = float64(sp.end-sp.start) / 1e9
		}
		if sp.parentID != [8]byte{} {
			w.ParentID = hex.EncodeToString(sp.parentID[:])
		}
		tr.Spans = append(tr.Spans, w)
		if tr.Root == "" && sp.parentID == [8]byte{} {
			tr.Root = sp.service + ": " + sp.name
		}
	}
	if tr.Root == "" && len(spans) > 0 {
		tr.Root = spans[0].service + ": " + spans[0].name
	}
	return tr
}

// logAcc counts log records by severity and error bodies.
type logAcc struct {
	bySeverity map[string]int
	errors     int // records of severity ERROR or above
	errBodies  map[string]int
	otherErrs  int // error bodies not counted apart once the map is full
}

const (
	maxErrorBodies   = 10000
	maxErrorBodyRune = 300
)

func newLogAcc() logAcc {
	return logAcc{bySeverity: map[string]int{}, errBodies: map[string]int{}}
}

// severityName is a record's severity: its text, else the name of its
// number's range, else UNSPECIFIED.
func severityName(lr *logspb.LogRecord) string {
	if lr.SeverityText != "" {
		return strings.ToUpper(lr.SeverityText)
	}
	n := int(lr.SeverityNumber)
	switch {
	case n <= 0:
		return "UNSPECIFIED"
	case n <= 4:
		return "TRACE"
	case n <= 8:
		return "DEBUG"
	case n <= 12:
		return "INFO"
	case n <= 16:
		return "WARN"
	case n <= 20:
		return "ERROR"
	}
	return "FATAL"
}

func isErrorLog(lr *logspb.LogRecord, sev string) bool {
	if lr.SeverityNumber >= logspb.SeverityNumber_SEVERITY_NUMBER_ERROR {
		return true
	}
	return strings.HasPrefix(sev, "ERR") || strings.HasPrefix(sev, "FATAL") || sev == "CRITICAL"
}

func (l *logAcc) add(lr *logspb.LogRecord) {
	sev := severityName(lr)
	l.bySeverity[sev]++
	if !isErrorLog(lr, sev) {
		return
	}
	l.errors++
	body := anyString(lr.Body)
	if r := []rune(body); len(r) > maxErrorBodyRune {
		body = string(r[:maxErrorBodyRune]) + "…"
	}
	if _, ok := l.errBodies[body]; ok || len(l.errBodies) < maxErrorBodies {
		l.errBodies[body]++
	} else {
		l.otherErrs++
	}
}

// BodyCount is one error body and how often it was logged.
type BodyCount struct {
	Body  string `json:"body"`
	Count int    `json:"count"`
}

// LogStats are a job's log records by severity and its most frequent error
// bodies.
type LogStats struct {
	BySeverity map[string]int `json:"by_severity"`
	Errors     int            `json:"errors"` // records of severity ERROR or above
	TopErrors  []BodyCount    `json:"top_errors"`
}

// Logs returns the job's log figures with the n most frequent error bodies.
func (j *Job) Logs(n int) LogStats {
	st := LogStats{BySeverity: j.logs.bySeverity, Errors: j.logs.errors, TopErrors: []BodyCount{}}
	for b, c := range j.logs.errBodies {
		st.TopErrors = append(st.TopErrors, BodyCount{b, c})
	}
	slices.SortFunc(st.TopErrors, func(a, b BodyCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Body, b.Body))
	})
	st.TopErrors = st.TopErrors[:min(n, len(st.TopErrors))]
	return st
}
