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

// sample is one line of a family, before sorting.
type sample struct {
	labels string // rendered, without braces
	lines  string // the whole lines
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
	var ss []sample
	switch d := f.m.Data.(type) {
	case metricdata.Sum[int64]:
		ss = numberSamples(f.name, d.DataPoints)
	case metricdata.Sum[float64]:
		ss = numberSamples(f.name, d.DataPoints)
	case metricdata.Gauge[int64]:
		ss = numberSamples(f.name, d.DataPoints)
	case metricdata.Gauge[float64]:
		ss = numberSamples(f.name, d.DataPoints)
	case metricdata.Histogram[int64]:
		ss = histogramSamples(f.name, d.DataPoints)
	case metricdata.Histogram[float64]:
		ss = histogramSamples(f.name, d.DataPoints)
	}
	slices.SortFunc(ss, func(a, b sample) int { return strings.Compare(a.labels, b.labels) })
	for _, s := range ss {
		w.WriteString(s.lines)
	}
}

func numberSamples[N int64 | float64](name string, pts []metricdata.DataPoint[N]) []sample {
	out := make([]sample, 0, len(pts))
	for _, p := range pts {
		l := renderLabels(p.Attributes)
		var b strings.Builder
		line(&b, name, l, "", "", formatNumber(p.Value))
		out = append(out, sample{l, b.String()})
	}
	return out
}

func histogramSamples[N int64 | float64](name string, pts []metricdata.HistogramDataPoint[N]) []sample {
	out := make([]sample, 0, len(pts))
	for _, p := range pts {
		l := renderLabels(p.Attributes)
		var b strings.Builder
		var cum uint64
		for i, bound := range p.Bounds {
			if i < len(p.BucketCounts) {
				cum += p.BucketCounts[i]
			}
			line(&b, name+"_bucket", l, "le", formatFloat(bound), strconv.FormatUint(cum, 10))
		}
		line(&b, name+"_bucket", l, "le", "+Inf", strconv.FormatUint(p.Count, 10))
		line(&b, name+"_sum", l, "", "", formatNumber(p.Sum))
		line(&b, name+"_count", l, "", "", strconv.FormatUint(p.Count, 10))
		out = append(out, sample{l, b.String()})
	}
	return out
}

// line writes one sample line: name{labels,extra="extraVal"} value.
func line(b *strings.Builder, name, labels, extra, extraVal, value string) {
	b.WriteString(name)
	if labels != "" || extra != "" {
		b.WriteByte('{')
		b.WriteString(labels)
		if extra != "" {
			if labels != "" {
				b.WriteByte(',')
			}
			b.WriteString(extra)
			b.WriteString(`="`)
			b.WriteString(extraVal)
			b.WriteByte('"')
		}
		b.WriteByte('}')
	}
	b.WriteByte(' ')
	b.WriteString(value)
	b.WriteByte('\n')
}

// renderLabels renders an attribute set as name="value" pairs, sorted by
// the sanitized name; attributes whose names sanitize alike have their
// values joined with ";" (as the OpenTelemetry Prometheus exporter does).
func renderLabels(set attribute.Set) string {
	if set.Len() == 0 {
		return ""
	}
	type kv struct{ k, v string }
	kvs := make([]kv, 0, set.Len())
	it := set.Iter()
	for it.Next() {
		a := it.Attribute()
		k, v := sanitizeLabel(string(a.Key)), a.Value.Emit()
		if i := slices.IndexFunc(kvs, func(x kv) bool { return x.k == k }); i >= 0 {
			kvs[i].v += ";" + v
			continue
		}
		kvs = append(kvs, kv{k, v})
	}
	slices.SortFunc(kvs, func(a, b kv) int { return strings.Compare(a.k, b.k) })
	var b strings.Builder
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

func escapeLabelValue(s string) string { return labelEscaper.Replace(s) }
func escapeHelp(s string) string       { return helpEscaper.Replace(s) }

// sanitizeName makes s a valid metric name, [a-zA-Z_:][a-zA-Z0-9_:]*.
func sanitizeName(s string) string { return sanitize(s, true) }

// sanitizeLabel makes s a valid label name, [a-zA-Z_][a-zA-Z0-9_]*.
func sanitizeLabel(s string) string { return sanitize(s, false) }

func sanitize(s string, colon bool) string {
	if s == "" {
		return "_"
	}
	var b strings.Builder
	for i, r := range s {
		ok := r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || colon && r == ':' || i > 0 && r >= '0' && r <= '9'
		switch {
		case ok:
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

func formatNumber[N int64 | float64](v N) string {
	switch x := any(v).(type) {
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return formatFloat(x)
	}
	return ""
}

func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// promHandler serves what reader collects in the Prometheus text format.
type promHandler struct {
	reader     *sdkmetric.ManualReader
	typeSuffix bool
}

func (h promHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "use GET", http.StatusMethodNotAllowed)
		return
	}
	var rm metricdata.ResourceMetrics
	if err := h.reader.Collect(r.Context(), &rm); err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, sdkmetric.ErrReaderShutdown) {
			code = http.StatusServiceUnavailable // stopping
		}
		http.Error(w, "collecting otelstep's metrics: "+err.Error(), code)
		return
	}
	w.Header().Set("Content-Type", PromContentType)
	_ = WritePrometheus(w, &rm, h.typeSuffix)
}
