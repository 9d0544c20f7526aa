package report

import (
	"cmp"
	"context"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/otelstep/otelstep/pipeline"
	"github.com/prometheus/otlptranslator"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/util/annotations"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
)

// MetricInfo describes one Prometheus metric name of a job.
type MetricInfo struct {
	Name   string `json:"name"`
	Type   string `json:"type"` // counter, gauge, histogram, summary (the Prometheus family's)
	Help   string `json:"help,omitempty"`
	Series int    `json:"series"`
}

// memSeries is one series' samples, XOR-encoded as Prometheus's TSDB
// stores them (a few bytes a sample), in chunks of at most chunkSamples.
type memSeries struct {
	lset   labels.Labels
	chunks []*chunkenc.XORChunk
	app    chunkenc.Appender
	lastT  int64
	n      int
	// late are samples older than the last appended, merged in at seal.
	late []fsample
	// acc is the running total of a delta series, which is stored as the
	// cumulative series Prometheus would have needed.
	acc float64
}

type fsample struct {
	t int64
	f float64
}

const chunkSamples = 1024

func (s *memSeries) add(t int64, v float64) {
	if s.app != nil && t <= s.lastT {
		s.late = append(s.late, fsample{t, v})
		return
	}
	if s.app == nil || s.chunks[len(s.chunks)-1].NumSamples() >= chunkSamples {
		c := chunkenc.NewXORChunk()
		app, err := c.Appender()
		if err != nil {
			panic(err) // a new chunk always has an appender
		}
		s.chunks, s.app = append(s.chunks, c), app
	}
	s.app.Append(0, t, v)
	s.lastT = t
	s.n++
}

// samples decodes every sample, in chunk order.
func (s *memSeries) samples() []fsample {
	out := make([]fsample, 0, s.n+len(s.late))
	var it chunkenc.Iterator
	for _, c := range s.chunks {
		it = c.Iterator(it)
		for it.Next() != chunkenc.ValNone {
			t, v := it.At()
			out = append(out, fsample{t, v})
		}
	}
	return out
}

// fix merges the late samples in: sorted by time, the first of equal
// timestamps kept (Prometheus refuses a duplicate), encoded again.
func (s *memSeries) fix() {
	if len(s.late) == 0 {
		return
	}
	all := append(s.samples(), s.late...)
	slices.SortStableFunc(all, func(a, b fsample) int { return cmp.Compare(a.t, b.t) })
	*s = memSeries{lset: s.lset, acc: s.acc}
	for i, x := range all {
		if i > 0 && x.t == all[i-1].t {
			continue
		}
		s.add(x.t, x.f)
	}
}

// store holds a job's series as Prometheus's OTLP ingestion would have
// stored them, and serves them to the PromQL engine.
type store struct {
	byHash  map[uint64][]*memSeries
	sorted  []*memSeries            // by labels, after seal
	byName  map[string][]*memSeries // sorted's series by metric name
	metrics map[string]*MetricInfo
	namer   otlptranslator.MetricNamer
	lnamer  otlptranslator.LabelNamer
	names   map[nameKey]string
	lnames  map[string]string
	sb      labels.ScratchBuilder
	minT    int64
	maxT    int64
	// Unsupported counts points not mapped: exponential histograms (native
	// histograms in Prometheus), metrics of no known type or no name.
	Unsupported int
}

type nameKey struct {
	name, unit string
	typ        otlptranslator.MetricType
}

func newStore() *store {
	return &store{
		byHash:  map[uint64][]*memSeries{},
		metrics: map[string]*MetricInfo{},
		namer:   otlptranslator.NewMetricNamer("", otlptranslator.UnderscoreEscapingWithSuffixes),
		lnamer:  otlptranslator.LabelNamer{},
		names:   map[nameKey]string{},
		lnames:  map[string]string{},
		minT:    math.MaxInt64,
		maxT:    math.MinInt64,
	}
}

// renameRE is the job's transform: `replace_pattern(metric.name,
// "^([^:]+):(.+)$", "${1}_${2}")`, which turns vLLM's `vllm:x` into
// `vllm_x`. Applied here too, files written without it read the same.
var renameRE = regexp.MustCompile(`^([^:]+):(.+)$`)

func (s *store) metricName(name, unit string, typ otlptranslator.MetricType) string {
	k := nameKey{name, unit, typ}
	if n, ok := s.names[k]; ok {
		return n
	}
	in := name
	if strings.IndexByte(in, ':') >= 0 {
		in = renameRE.ReplaceAllString(in, "${1}_${2}")
	}
	n, err := s.namer.Build(otlptranslator.Metric{Name: in, Unit: unit, Type: typ})
	if err != nil || n == "" {
		n = ""
	}
	s.names[k] = n
	return n
}

func (s *store) labelName(k string) string {
	if n, ok := s.lnames[k]; ok {
		return n
	}
	n, err := s.lnamer.Build(k)
	if err != nil {
		n = ""
	}
	s.lnames[k] = n
	return n
}

// resourceLabels are the job and instance labels Prometheus's OTLP
// ingestion derives from a resource: job from service.namespace and
// service.name, instance from service.instance.id.
func resourceLabels(r *resourcepb.Resource) (job, instance string) {
	var ns, name string
	for _, kv := range r.GetAttributes() {
		switch kv.Key {
		case "service.name":
			name = anyString(kv.Value)
		case "service.namespace":
			ns = anyString(kv.Value)
		case "service.instance.id":
			instance = anyString(kv.Value)
		}
	}
	job = name
	if ns != "" && name != "" {
		job = ns + "/" + name
	}
	return job, instance
}

// addResourceMetrics maps one resource's metrics to series.
func (s *store) addResourceMetrics(rm *metricspb.ResourceMetrics) {
	job, instance := resourceLabels(rm.GetResource())
	p := pointLabels{s: s, job: job, instance: instance}
	for _, sm := range rm.GetScopeMetrics() {
		for _, m := range sm.GetMetrics() {
			s.addMetric(&p, m)
		}
	}
}

type pointLabels struct {
	s             *store
	job, instance string
}

// build returns the sorted labels of a point: its attributes sanitised,
// values of attributes that map to one name joined with ";" (as Prometheus
// does), then job and instance, __name__ and an extra label (le, quantile).
func (p *pointLabels) build(name string, attrs []*commonpb.KeyValue, extraName, extraValue string) labels.Labels {
	b := &p.s.sb
	b.Reset()
	for _, kv := range attrs {
		ln := p.s.labelName(kv.Key)
		if ln == "" || ln == "__name__" || secretKey(kv.Key) {
			continue
		}
		if (ln == "job" && p.job != "") || (ln == "instance" && p.instance != "") {
			continue
		}
		b.Add(ln, anyString(kv.Value))
	}
	if p.job != "" {
		b.Add("job", p.job)
	}
	if p.instance != "" {
		b.Add("instance", p.instance)
	}
	b.Add(labels.MetricName, name)
	if extraName != "" {
		b.Add(extraName, extraValue)
	}
	b.Sort()
	ls := b.Labels()
	if dup := duplicateNames(ls); dup {
		ls = joinDuplicates(ls)
	}
	return ls
}

func duplicateNames(ls labels.Labels) bool {
	prev, dup := "", false
	ls.Range(func(l labels.Label) {
		if l.Name == prev {
			dup = true
		}
		prev = l.Name
	})
	return dup
}

func joinDuplicates(ls labels.Labels) labels.Labels {
	var out []labels.Label
	ls.Range(func(l labels.Label) {
		if n := len(out); n > 0 && out[n-1].Name == l.Name {
			out[n-1].Value += ";" + l.Value
			return
		}
		out = append(out, l)
	})
	return labels.New(out...)
}

func (s *store) family(name, typ, help string) {
	if name == "" {
		return
	}
	if _, ok := s.metrics[name]; !ok {
		s.metrics[name] = &MetricInfo{Name: name, Type: typ, Help: help}
	}
}

func (s *store) addMetric(p *pointLabels, m *metricspb.Metric) {
	if strings.TrimSpace(m.Name) == "" {
		// Prometheus's ingestion refuses a metric without a name; one
		// without data counts as one.
		n := pipeline.MetricPoints(m)
		if m.Data == nil {
			n = 1
		}
		s.Unsupported += n
		return
	}
	switch d := m.Data.(type) {
	case *metricspb.Metric_Gauge:
		name := s.metricName(m.Name, m.Unit, otlptranslator.MetricTypeGauge)
		s.family(name, "gauge", m.Description)
		for _, dp := range d.Gauge.DataPoints {
			s.append(p.build(name, dp.Attributes, "", ""), dp.TimeUnixNano, numberValue(dp), false)
		}
	case *metricspb.Metric_Sum:
		typ, ftype := otlptranslator.MetricType(otlptranslator.MetricTypeNonMonotonicCounter), "gauge"
		if d.Sum.IsMonotonic {
			typ, ftype = otlptranslator.MetricTypeMonotonicCounter, "counter"
		}
		delta := d.Sum.AggregationTemporality == metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
		name := s.metricName(m.Name, m.Unit, typ)
		s.family(name, ftype, m.Description)
		for _, dp := range d.Sum.DataPoints {
			s.append(p.build(name, dp.Attributes, "", ""), dp.TimeUnixNano, numberValue(dp), delta)
		}
	case *metricspb.Metric_Histogram:
		name := s.metricName(m.Name, m.Unit, otlptranslator.MetricTypeHistogram)
		if name == "" {
			return
		}
		s.family(name, "histogram", m.Description)
		delta := d.Histogram.AggregationTemporality == metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
		for _, dp := range d.Histogram.DataPoints {
			stale := dp.Flags&uint32(metricspb.DataPointFlags_DATA_POINT_FLAGS_NO_RECORDED_VALUE_MASK) != 0
			val := func(v float64) float64 {
				if stale {
					return math.Float64frombits(value.StaleNaN)
				}
				return v
			}
			var cum uint64
			for i, c := range dp.BucketCounts {
				cum += c
				le := "+Inf"
				if i < len(dp.ExplicitBounds) {
					le = formatFloat(dp.ExplicitBounds[i])
				}
				s.append(p.build(name+"_bucket", dp.Attributes, "le", le), dp.TimeUnixNano, val(float64(cum)), delta)
			}
			if len(dp.BucketCounts) == 0 || len(dp.BucketCounts) <= len(dp.ExplicitBounds) {
				// No +Inf bucket written: Prometheus adds it from the count.
				s.append(p.build(name+"_bucket", dp.Attributes, "le", "+Inf"), dp.TimeUnixNano, val(float64(dp.Count)), delta)
			}
			if dp.Sum != nil {
				s.append(p.build(name+"_sum", dp.Attributes, "", ""), dp.TimeUnixNano, val(*dp.Sum), delta)
			}
			s.append(p.build(name+"_count", dp.Attributes, "", ""), dp.TimeUnixNano, val(float64(dp.Count)), delta)
		}
	case *metricspb.Metric_Summary:
		name := s.metricName(m.Name, m.Unit, otlptranslator.MetricTypeSummary)
		s.family(name, "summary", m.Description)
		for _, dp := range d.Summary.DataPoints {
			for _, q := range dp.QuantileValues {
				s.append(p.build(name, dp.Attributes, "quantile", formatFloat(q.Quantile)), dp.TimeUnixNano, q.Value, false)
			}
			s.append(p.build(name+"_sum", dp.Attributes, "", ""), dp.TimeUnixNano, dp.Sum, false)
			s.append(p.build(name+"_count", dp.Attributes, "", ""), dp.TimeUnixNano, float64(dp.Count), false)
		}
	case *metricspb.Metric_ExponentialHistogram:
		s.Unsupported += len(d.ExponentialHistogram.DataPoints)
	default:
		s.Unsupported++
	}
}

// formatFloat writes a bucket bound or quantile as Prometheus's OTLP
// ingestion does.
func formatFloat(f float64) string {
	if math.IsInf(f, 1) {
		return "+Inf"
	}
	if math.IsInf(f, -1) {
		return "-Inf"
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

func numberValue(dp *metricspb.NumberDataPoint) float64 {
	if dp.Flags&uint32(metricspb.DataPointFlags_DATA_POINT_FLAGS_NO_RECORDED_VALUE_MASK) != 0 {
		return math.Float64frombits(value.StaleNaN)
	}
	switch v := dp.Value.(type) {
	case *metricspb.NumberDataPoint_AsDouble:
		return v.AsDouble
	case *metricspb.NumberDataPoint_AsInt:
		return float64(v.AsInt)
	}
	return 0
}

func (s *store) append(ls labels.Labels, tNano uint64, v float64, delta bool) {
	if ls.Get(labels.MetricName) == "" {
		return
	}
	h := ls.Hash()
	var ser *memSeries
	for _, c := range s.byHash[h] {
		if labels.Equal(c.lset, ls) {
			ser = c
			break
		}
	}
	if ser == nil {
		ser = &memSeries{lset: ls}
		s.byHash[h] = append(s.byHash[h], ser)
		if mi := s.metrics[familyOf(ls.Get(labels.MetricName), s.metrics)]; mi != nil {
			mi.Series++
		}
	}
	if delta && !value.IsStaleNaN(v) {
		ser.acc += v
		v = ser.acc
	}
	t := int64(tNano / 1e6)
	ser.add(t, v)
	s.minT = min(s.minT, t)
	s.maxT = max(s.maxT, t)
}

// familyOf is the family a series name belongs to (a histogram's _bucket,
// _sum and _count belong to the histogram's name).
func familyOf(name string, fams map[string]*MetricInfo) string {
	if _, ok := fams[name]; ok {
		return name
	}
	for _, suf := range []string{"_bucket", "_sum", "_count"} {
		if b, ok := strings.CutSuffix(name, suf); ok {
			if _, ok := fams[b]; ok {
				return b
			}
		}
	}
	return name
}

// seal merges late samples in and sorts the series by labels.
func (s *store) seal() {
	for _, list := range s.byHash {
		for _, ser := range list {
			ser.fix()
			ser.app = nil
			s.sorted = append(s.sorted, ser)
		}
	}
	s.byHash = nil
	slices.SortFunc(s.sorted, func(a, b *memSeries) int { return labels.Compare(a.lset, b.lset) })
	s.byName = map[string][]*memSeries{}
	for _, ser := range s.sorted {
		n := ser.lset.Get(labels.MetricName)
		s.byName[n] = append(s.byName[n], ser)
	}
}

// Querier implements storage.Queryable over the sealed series.
func (s *store) Querier(mint, maxt int64) (storage.Querier, error) {
	return &querier{s: s, mint: mint, maxt: maxt}, nil
}

type querier struct {
	s          *store
	mint, maxt int64
}

func (q *querier) Select(_ context.Context, _ bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	candidates := q.s.sorted
	for _, m := range ms {
		if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
			candidates = q.s.byName[m.Value]
		}
	}
	var out []storage.Series
	for _, ser := range candidates {
		if !matches(ser.lset, ms) || len(ser.chunks) == 0 {
			continue
		}
		out = append(out, ser)
	}
	return &listSet{series: out, i: -1}
}

// Labels and Iterator make a memSeries a storage.Series.
func (s *memSeries) Labels() labels.Labels { return s.lset }

func (s *memSeries) Iterator(it chunkenc.Iterator) chunkenc.Iterator {
	if len(s.chunks) == 1 {
		return s.chunks[0].Iterator(it)
	}
	its := make([]chunkenc.Iterable, len(s.chunks))
	for i, c := range s.chunks {
		its[i] = c
	}
	return storage.ChainSampleIteratorFromIterables(it, its)
}

func matches(ls labels.Labels, ms []*labels.Matcher) bool {
	for _, m := range ms {
		if !m.Matches(ls.Get(m.Name)) {
			return false
		}
	}
	return true
}

func (q *querier) LabelValues(_ context.Context, name string, _ *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	seen := map[string]bool{}
	for _, ser := range q.s.sorted {
		if v := ser.lset.Get(name); v != "" && matches(ser.lset, ms) {
			seen[v] = true
		}
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	slices.Sort(out)
	return out, nil, nil
}

func (q *querier) LabelNames(_ context.Context, _ *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	seen := map[string]bool{}
	for _, ser := range q.s.sorted {
		if matches(ser.lset, ms) {
			ser.lset.Range(func(l labels.Label) { seen[l.Name] = true })
		}
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	slices.Sort(out)
	return out, nil, nil
}

func (q *querier) Close() error { return nil }

type listSet struct {
	series []storage.Series
	i      int
}

func (l *listSet) Next() bool                        { l.i++; return l.i < len(l.series) }
func (l *listSet) At() storage.Series                { return l.series[l.i] }
func (l *listSet) Err() error                        { return nil }
func (l *listSet) Warnings() annotations.Annotations { return nil }
