package telemetry

import (
	"bufio"
	"errors"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// PromContentType is the content type of the Prometheus text format 0.0.4.
const PromContentType = "text/plain; version=0.0.4; charset=utf-8"

// WritePrometheus writes the metrics of rm in the Prometheus text format
// 0.0.4: sums as counters (monotonic; "_total" added to the name when
// typeSuffix is set and it is not there) or gauges, gauges as gauges,
// histograms as histograms with cumulative le buckets, each family with
// its HELP (when it has a description) and TYPE, families sorted by name and series by labels. Names
// and label names are made valid ("." and anything else not allowed
// becomes "_"); label values and help are escaped. Exponential histograms
// and summaries (which otelstep does not record) are left out, as is the
// resource (no target_info) and the scope (no otel_scope_info).
func WritePrometheus(w io.Writer, rm *metricdata.ResourceMetrics, typeSuffix bool) error {
	var fams []family
	seen := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			f, ok := newFamily(m, typeSuffix)
			if !ok || seen[f.name] {
				continue // a second family of a name would make the page invalid
			}
			seen[f.name] = true
			fams = append(fams, f)
		}
	}
	slices.SortFunc(fams, func(a, b family) int { return strings.Compare(a.name, b.name) })
	bw := bufio.NewWriter(w)
	for _, f := range fams {
		f.write(bw)
	}
	return bw.Flush()
}

// family is one metric as a Prometheus family.
type family struct {
	name, help, typ string
	m               metricdata.Metrics
}

func newFamily(m metricdata.Metrics, typeSuffix bool) (family, bool) {
	f := family{name: sanitizeName(m.Name), help: m.Description, m: m}
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		f.typ = sumType(d.IsMonotonic)
	case metricdata.Sum[float64]:
		f.typ = sumType(d.IsMonotonic)
	case metricdata.Gauge[int64], metricdata.Gauge[float64]:
		f.typ = "gauge"
	case metricdata.Histogram[int64], metricdata.Histogram[float64]:
		f.typ = "histogram"
	default:
		return f, false
	}
	if f.typ == "counter" && typeSuffix && !strings.HasSuffix(f.name, "_total") {
		f.name += "_total"
	}
	return f, true
}

func sumType(monotonic bool) string {
	if monotonic {
		return "counter"
	}
	return "gauge"
}

// series is one series of a family: its rendered labels and its point's
// index, for sorting.
type series struct {
	labels string
	i      int
}

// byLabels renders the labels of n points and returns them sorted.
func byLabels(n int, attrs func(i int) attribute.Set) []series {
	out := make([]series, n)
	for i := range n {
		out[i] = series{renderLabels(attrs(i)), i}
	}
	slices.SortFunc(out, func(a, b series) int { return strings.Compare(a.labels, b.labels) })
	return out
}

func (f family) write(w *bufio.Writer) {
	if f.help != "" {
		w.WriteString("# HELP ")
		w.WriteString(f.name)
		w.WriteByte(' ')
		w.WriteString(escapeHelp(f.help))
		w.WriteByte('\n')
	}
	w.WriteString("# TYPE ")
	w.WriteString(f.name)
	w.WriteByte(' ')
	w.WriteString(f.typ)
	w.WriteByte('\n')
	switch d := f.m.Data.(type) {
	case metricdata.Sum[int64]:
		writeNumbers(w, f.name, d.DataPoints)
	case metricdata.Sum[float64]:
		writeNumbers(w, f.name, d.DataPoints)
	case metricdata.Gauge[int64]:
		writeNumbers(w, f.name, d.DataPoints)
	case metricdata.Gauge[float64]:
		writeNumbers(w, f.name, d.DataPoints)
	case metricdata.Histogram[int64]:
		writeHistograms(w, f.name, d.DataPoints)
	case metricdata.Histogram[float64]:
		writeHistograms(w, f.name, d.DataPoints)
	}
}

func writeNumbers[N int64 | float64](w *bufio.Writer, name string, pts []metricdata.DataPoint[N]) {
	var num [32]byte
	for _, s := range byLabels(len(pts), func(i int) attribute.Set { return pts[i].Attributes }) {
		line(w, name, "", s.labels, nil, appendNumber(num[:0], pts[s.i].Value))
	}
}

func writeHistograms[N int64 | float64](w *bufio.Writer, name string, pts []metricdata.HistogramDataPoint[N]) {
	var num, le [32]byte
	for _, s := range byLabels(len(pts), func(i int) attribute.Set { return pts[i].Attributes }) {
		p := pts[s.i]
		var cum uint64
		for i, bound := range p.Bounds {
			if i < len(p.BucketCounts) {
				cum += p.BucketCounts[i]
			}
			line(w, name, "_bucket", s.labels, appendFloat(le[:0], bound), strconv.AppendUint(num[:0], cum, 10))
		}
		line(w, name, "_bucket", s.labels, append(le[:0], "+Inf"...), strconv.AppendUint(num[:0], p.Count, 10))
		line(w, name, "_sum", s.labels, nil, appendNumber(num[:0], p.Sum))
		line(w, name, "_count", s.labels, nil, strconv.AppendUint(num[:0], p.Count, 10))
	}
}

// line writes one sample line: name+suffix{labels,le="le"} value, the le
// label only when le is not nil.
func line(w *bufio.Writer, name, suffix, labels string, le, value []byte) {
	w.WriteString(name)
	w.WriteString(suffix)
	if labels != "" || le != nil {
		w.WriteByte('{')
		w.WriteString(labels)
		if le != nil {
			if labels != "" {
				w.WriteByte(',')
			}
			w.WriteString(`le="`)
			w.Write(le)
			w.WriteByte('"')
		}
		w.WriteByte('}')
	}
	w.WriteByte(' ')
	w.Write(value)
	w.WriteByte('\n')
}

// renderLabels renders an attribute set as name="value" pairs, sorted by
// the sanitized name; attributes whose names sanitize alike have their
// values joined with ";" (as the OpenTelemetry Prometheus exporter does).
func renderLabels(set attribute.Set) string {
	if set.Len() == 0 {
		return ""
	}
	type kv struct{ k, v string }
	var room [8]kv
	kvs := room[:0]
	it := set.Iter()
	for it.Next() {
		a := it.Attribute()
		k, v := sanitizeLabel(string(a.Key)), a.Value.Emit()
		dup := false
		for i := range kvs {
			if kvs[i].k == k {
				kvs[i].v += ";" + v
				dup = true
			}
		}
		if !dup {
			kvs = append(kvs, kv{k, v})
		}
	}
	// A set is sorted by key already; sanitizing may reorder a few.
	slices.SortFunc(kvs, func(a, b kv) int { return strings.Compare(a.k, b.k) })
	n := 0
	for _, x := range kvs {
		n += len(x.k) + len(x.v) + 4
	}
	var b strings.Builder
	b.Grow(n)
	for i, x := range kvs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(x.k)
		b.WriteString(`="`)
		b.WriteString(escapeLabelValue(x.v))
		b.WriteByte('"')
	}
	return b.String()
}

var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

func escapeLabelValue(s string) string {
	if !strings.ContainsAny(s, "\\\"\n") {
		return s
	}
	return labelEscaper.Replace(s)
}

func escapeHelp(s string) string {
	if !strings.ContainsAny(s, "\\\n") {
		return s
	}
	return helpEscaper.Replace(s)
}

// sanitizeName makes s a valid metric name, [a-zA-Z_:][a-zA-Z0-9_:]*.
func sanitizeName(s string) string { return sanitize(s, true) }

// sanitizeLabel makes s a valid label name, [a-zA-Z_][a-zA-Z0-9_]*.
func sanitizeLabel(s string) string { return sanitize(s, false) }

func validRune(i int, r rune, colon bool) bool {
	return r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || colon && r == ':' || i > 0 && r >= '0' && r <= '9'
}

func sanitize(s string, colon bool) string {
	if s == "" {
		return "_"
	}
	valid := true
	for i, r := range s {
		valid = valid && validRune(i, r, colon)
	}
	if valid {
		return s // most names are: no copy
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case validRune(i, r, colon):
			b.WriteRune(r)
		case i == 0 && r >= '0' && r <= '9':
			b.WriteByte('_')
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

func appendNumber[N int64 | float64](dst []byte, v N) []byte {
	switch x := any(v).(type) {
	case int64:
		return strconv.AppendInt(dst, x, 10)
	case float64:
		return appendFloat(dst, x)
	}
	return dst
}

func appendFloat(dst []byte, v float64) []byte {
	switch {
	case math.IsInf(v, 1):
		return append(dst, "+Inf"...)
	case math.IsInf(v, -1):
		return append(dst, "-Inf"...)
	case math.IsNaN(v):
		return append(dst, "NaN"...)
	}
	return strconv.AppendFloat(dst, v, 'g', -1, 64)
}

// promHandler serves what reader collects in the Prometheus text format.
type promHandler struct {
	reader     *sdkmetric.ManualReader
	typeSuffix bool

	// rm is collected into by every request, one at a time: the SDK then
	// reuses its data points' memory.
	mu sync.Mutex
	rm metricdata.ResourceMetrics
}

func newPromHandler(reader *sdkmetric.ManualReader, typeSuffix bool) *promHandler {
	return &promHandler{reader: reader, typeSuffix: typeSuffix}
}

func (h *promHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "use GET", http.StatusMethodNotAllowed)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	rm := &h.rm
	if err := h.reader.Collect(r.Context(), rm); err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, sdkmetric.ErrReaderShutdown) {
			code = http.StatusServiceUnavailable // stopping
		}
		http.Error(w, "collecting otelstep's metrics: "+err.Error(), code)
		return
	}
	w.Header().Set("Content-Type", PromContentType)
	_ = WritePrometheus(w, rm, h.typeSuffix)
}
