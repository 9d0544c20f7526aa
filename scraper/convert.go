package scraper

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
)

// ScopeName and ScopeVersion are what the collector's prometheus receiver reports.
const (
	ScopeName    = "github.com/open-telemetry/opentelemetry-collector-contrib/receiver/prometheusreceiver"
	ScopeVersion = "0.0.1"
)

// famState is cached per output metric name across scrapes.
type famState struct {
	name, help, unit string
	typ              model.MetricType
	metadata         []*commonpb.KeyValue // shared, immutable
	gen              uint64
	out              *metricspb.Metric // current scrape's metric
	order            int
}

// pointSeries is one output data point identity (family + attributes).
type pointSeries struct {
	fam   *famState
	attrs []*commonpb.KeyValue // shared across scrapes; downstream must not mutate
	start uint64               // committed start time (ns)
	last  float64              // committed value (counter) or count (hist/summary)
	seen  bool
	gen   uint64
	// per-scrape state
	curStart uint64
	curLast  float64
	num      *metricspb.NumberDataPoint
	hist     *histBuilder
	sum      *metricspb.SummaryDataPoint
}

type bucket struct{ le, cum float64 }

type histBuilder struct {
	pt       *metricspb.HistogramDataPoint
	buckets  []bucket
	count    float64
	hasCount bool
	sum      float64
}

const (
	roleValue = iota
	roleBucket
	roleQuantile
	roleSum
	roleCount
	roleSkip
)

// seriesEntry is cached per raw series bytes as returned by Parser.Series.
type seriesEntry struct {
	ps   *pointSeries
	role uint8
	arg  float64 // le or quantile
	gen  uint64
}

// Converter turns scraped pages of one target into OTLP, keeping per-series
// state across scrapes (start times, cached attribute sets).
//
// Point attribute slices (and the KeyValues in them) are cached and shared
// between the points of successive scrapes: downstream must not mutate point
// attributes in place (replace the slice instead). A Converter is safe for
// use by one goroutine at a time (it locks internally).
type Converter struct {
	mu       sync.Mutex
	t        Target
	resource *resourcepb.Resource
	base     []*commonpb.KeyValue // target labels as attributes, sorted
	raw      map[string]*seriesEntry
	points   map[string]*pointSeries
	fams     map[string]*famState
	gen      uint64
	lastN    int

	// scratch
	lbls    labels.Labels
	ex      exemplar.Exemplar
	keyBuf  []byte
	typName []byte
	typ     model.MetricType
	hlpName []byte
	hlp     []byte
	untName []byte
	unt     []byte
	touched []*pointSeries
	order   []*famState
}

// NewConverter returns a Converter for target t.
func NewConverter(t Target) *Converter {
	host, port, err := net.SplitHostPort(t.Address)
	if err != nil {
		host, port = t.Address, ""
	}
	_ = host
	scheme := t.Scheme
	if scheme == "" {
		scheme = "http"
	}
	res := &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
		strKV("service.name", t.JobName),
		strKV("service.instance.id", t.Address),
		strKV("server.port", port),
		strKV("url.scheme", scheme),
	}}
	c := &Converter{
		t:        t,
		resource: res,
		raw:      map[string]*seriesEntry{},
		points:   map[string]*pointSeries{},
		fams:     map[string]*famState{},
	}
	keys := make([]string, 0, len(t.Labels))
	for k, v := range t.Labels {
		if v != "" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		c.base = append(c.base, strKV(k, t.Labels[k]))
	}
	return c
}

func strKV(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// Convert parses page (contentType as served) scraped at ts and returns the
// ResourceMetrics for it, including the synthetic series (with
// scrape_duration_seconds = 0; see ConvertScrape). On a malformed page it
// returns an error naming the line and nothing is converted.
func (c *Converter) Convert(page []byte, contentType string, ts time.Time) (*metricspb.ResourceMetrics, error) {
	return c.ConvertScrape(page, contentType, ts, 0)
}

// slab hands out data points from chunks so one scrape does few allocations.
type slab struct {
	nums []metricspb.NumberDataPoint
	dbls []metricspb.NumberDataPoint_AsDouble
}

const chunk = 256

func (s *slab) num(v float64) *metricspb.NumberDataPoint {
	if len(s.nums) == cap(s.nums) {
		s.nums = make([]metricspb.NumberDataPoint, 0, chunk)
		s.dbls = make([]metricspb.NumberDataPoint_AsDouble, 0, chunk)
	}
	s.nums = s.nums[:len(s.nums)+1]
	s.dbls = s.dbls[:len(s.dbls)+1]
	d := &s.dbls[len(s.dbls)-1]
	d.AsDouble = v
	p := &s.nums[len(s.nums)-1]
	p.Value = d
	return p
}

// ConvertScrape is Convert with the scrape duration for scrape_duration_seconds.
func (c *Converter) ConvertScrape(page []byte, contentType string, ts time.Time, dur time.Duration) (*metricspb.ResourceMetrics, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, err := textparse.New(page, contentType, nil, textparse.ParserOptions{
		FallbackContentType:     "text/plain",
		OpenMetricsSkipSTSeries: true,
	})
	if p == nil {
		return nil, fmt.Errorf("content type %q: %w", contentType, err)
	}
	om := strings.HasPrefix(strings.TrimSpace(contentType), "application/openmetrics-text")
	c.gen++
	gen := c.gen
	tsNs := uint64(ts.UnixNano())
	c.touched = c.touched[:0]
	c.order = c.order[:0]
	c.typName, c.hlpName, c.untName = c.typName[:0], c.hlpName[:0], c.untName[:0]
	var sl slab
	samples, added := 0, 0
	var last []byte
	for {
		e, err := p.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			ln, txt := lineOf(page, last)
			return nil, fmt.Errorf("parse page: line %d %q: %w", ln, txt, err)
		}
		switch e {
		case textparse.EntryType:
			n, t := p.Type()
			c.typName = append(c.typName[:0], n...)
			c.typ = t
			continue
		case textparse.EntryHelp:
			n, h := p.Help()
			c.hlpName = append(c.hlpName[:0], n...)
			c.hlp = append(c.hlp[:0], h...)
			continue
		case textparse.EntryUnit:
			n, u := p.Unit()
			c.untName = append(c.untName[:0], n...)
			c.unt = append(c.unt[:0], u...)
			continue
		case textparse.EntrySeries:
		default:
			continue
		}
		samples++
		b, tsp, v := p.Series()
		last = b
		se := c.raw[string(b)]
		if se == nil {
			se = c.newEntry(p, b)
			added++
		}
		se.gen = gen
		if se.role == roleSkip {
			continue
		}
		ps := se.ps
		f := ps.fam
		if f.gen != gen {
			f.gen = gen
			f.out = newMetric(f)
			c.order = append(c.order, f)
		}
		ptTs := tsNs
		if tsp != nil && c.t.HonorTimestamps {
			ptTs = uint64(*tsp) * uint64(time.Millisecond)
		}
		first := ps.gen != gen
		if first {
			ps.gen = gen
			ps.num, ps.hist, ps.sum = nil, nil, nil
			ps.curStart, ps.curLast = ps.start, ps.last
			c.touched = append(c.touched, ps)
		}
		var st uint64
		if om && (f.typ == model.MetricTypeCounter || f.typ == model.MetricTypeHistogram || f.typ == model.MetricTypeSummary) {
			if ms := p.StartTimestamp(); ms != 0 {
				st = uint64(ms) * uint64(time.Millisecond)
			}
		}
		switch f.typ {
		case model.MetricTypeHistogram:
			h := ps.hist
			if h == nil {
				h = &histBuilder{pt: &metricspb.HistogramDataPoint{Attributes: ps.attrs, TimeUnixNano: ptTs}}
				ps.hist = h
				hd := f.out.Data.(*metricspb.Metric_Histogram).Histogram
				hd.DataPoints = append(hd.DataPoints, h.pt)
			}
			switch se.role {
			case roleBucket:
				h.buckets = append(h.buckets, bucket{se.arg, v})
				if om {
					c.exemplars(p, &h.pt.Exemplars)
				}
			case roleCount:
				h.count, h.hasCount = v, true
			case roleSum:
				h.sum = v
			}
			if st != 0 {
				ps.curStart = st
			}
		case model.MetricTypeSummary:
			s := ps.sum
			if s == nil {
				s = &metricspb.SummaryDataPoint{Attributes: ps.attrs, TimeUnixNano: ptTs}
				ps.sum = s
				sd := f.out.Data.(*metricspb.Metric_Summary).Summary
				sd.DataPoints = append(sd.DataPoints, s)
			}
			switch se.role {
			case roleQuantile:
				s.QuantileValues = append(s.QuantileValues, &metricspb.SummaryDataPoint_ValueAtQuantile{Quantile: se.arg, Value: v})
			case roleCount:
				s.Count = uint64(v)
				c.startFor(ps, v, st, tsNs)
			case roleSum:
				s.Sum = v
			}
		default:
			if ps.num != nil { // duplicate series after label normalisation: last wins
				ps.num.Value.(*metricspb.NumberDataPoint_AsDouble).AsDouble = v
				ps.num.TimeUnixNano = ptTs
			} else {
				pt := sl.num(v)
				pt.Attributes = ps.attrs
				pt.TimeUnixNano = ptTs
				ps.num = pt
				switch d := f.out.Data.(type) {
				case *metricspb.Metric_Gauge:
					d.Gauge.DataPoints = append(d.Gauge.DataPoints, pt)
				case *metricspb.Metric_Sum:
					d.Sum.DataPoints = append(d.Sum.DataPoints, pt)
				}
			}
			if f.typ == model.MetricTypeCounter {
				c.startFor(ps, v, st, tsNs)
				ps.num.StartTimeUnixNano = ps.curStart
				if om {
					c.exemplars(p, &ps.num.Exemplars)
				}
			}
		}
	}
	// finish histograms
	for _, ps := range c.touched {
		if h := ps.hist; h != nil {
			c.finishHist(ps, h, tsNs)
		}
		if ps.sum != nil {
			ps.sum.StartTimeUnixNano = ps.curStart
		}
	}
	// commit
	for _, ps := range c.touched {
		ps.start, ps.last, ps.seen = ps.curStart, ps.curLast, true
	}
	c.evict(gen)
	c.lastN = samples
	metrics := make([]*metricspb.Metric, 0, len(c.order)+5)
	for _, f := range c.order {
		metrics = append(metrics, f.out)
		f.out = nil
	}
	metrics = c.synthetic(metrics, tsNs, 1, dur, samples, added)
	return c.wrap(metrics), nil
}

func (c *Converter) startFor(ps *pointSeries, v float64, st, now uint64) {
	switch {
	case st != 0:
		ps.curStart = st
	case !ps.seen:
		ps.curStart = now
	case v < ps.last:
		ps.curStart = now // counter reset
	}
	ps.curLast = v
}

func (c *Converter) finishHist(ps *pointSeries, h *histBuilder, now uint64) {
	slices.SortFunc(h.buckets, func(a, b bucket) int {
		switch {
		case a.le < b.le:
			return -1
		case a.le > b.le:
			return 1
		}
		return 0
	})
	count := h.count
	if !h.hasCount && len(h.buckets) > 0 {
		count = h.buckets[len(h.buckets)-1].cum
	}
	nb := 0
	for _, b := range h.buckets {
		if !math.IsInf(b.le, 1) {
			nb++
		}
	}
	bounds := make([]float64, 0, nb)
	counts := make([]uint64, 0, nb+1)
	prev := 0.0
	for _, b := range h.buckets {
		if math.IsInf(b.le, 1) {
			continue
		}
		bounds = append(bounds, b.le)
		counts = append(counts, uint64(math.Max(b.cum-prev, 0)))
		prev = b.cum
	}
	counts = append(counts, uint64(math.Max(count-prev, 0)))
	pt := h.pt
	pt.ExplicitBounds = bounds
	pt.BucketCounts = counts
	pt.Count = uint64(count)
	s := h.sum
	pt.Sum = &s
	st := ps.curStart
	c.startFor(ps, count, 0, now)
	if st != ps.start && ps.seen { // explicit created timestamp seen this scrape
		ps.curStart = st
	}
	pt.StartTimeUnixNano = ps.curStart
}

func (c *Converter) exemplars(p textparse.Parser, dst *[]*metricspb.Exemplar) {
	for p.Exemplar(&c.ex) {
		e := &metricspb.Exemplar{Value: &metricspb.Exemplar_AsDouble{AsDouble: c.ex.Value}}
		if c.ex.HasTs {
			e.TimeUnixNano = uint64(c.ex.Ts) * uint64(time.Millisecond)
		}
		c.ex.Labels.Range(func(l labels.Label) {
			switch l.Name {
			case "trace_id":
				if b, err := hex.DecodeString(l.Value); err == nil && len(b) == 16 {
					e.TraceId = b
					return
				}
			case "span_id":
				if b, err := hex.DecodeString(l.Value); err == nil && len(b) == 8 {
					e.SpanId = b
					return
				}
			}
			e.FilteredAttributes = append(e.FilteredAttributes, strKV(strings.Clone(l.Name), strings.Clone(l.Value)))
		})
		*dst = append(*dst, e)
		c.ex = exemplar.Exemplar{}
	}
}

func (c *Converter) evict(gen uint64) {
	if len(c.raw) > 0 {
		n := 0
		for _, se := range c.raw {
			if se.gen == gen {
				n++
			}
		}
		if n == len(c.raw) {
			return
		}
	}
	for k, se := range c.raw {
		if se.gen != gen {
			delete(c.raw, k)
		}
	}
	for k, ps := range c.points {
		if ps.gen != gen {
			delete(c.points, k)
		}
	}
	for k, f := range c.fams {
		if f.gen != gen {
			delete(c.fams, k)
		}
	}
}

// newEntry resolves family, role and attributes of a series seen for the first time.
func (c *Converter) newEntry(p textparse.Parser, b []byte) *seriesEntry {
	p.Labels(&c.lbls)
	name := c.lbls.Get(model.MetricNameLabel)
	se := &seriesEntry{}
	famName, typ := name, model.MetricTypeUnknown
	tn := string(c.typName)
	if tn != "" {
		suffixes := []string{""}
		switch c.typ {
		case model.MetricTypeCounter:
			suffixes = []string{"_total", ""}
		case model.MetricTypeHistogram:
			suffixes = []string{"_bucket", "_sum", "_count", "_created"}
		case model.MetricTypeSummary:
			suffixes = []string{"", "_sum", "_count", "_created"}
		case model.MetricTypeGaugeHistogram:
			suffixes = []string{"_bucket"}
		case model.MetricTypeInfo:
			suffixes = []string{"_info"}
		}
		for _, s := range suffixes {
			if name == tn+s {
				typ = c.typ
				famName = tn
				if s == "" && c.typ == model.MetricTypeCounter {
					break
				}
				switch c.typ {
				case model.MetricTypeHistogram, model.MetricTypeSummary:
					switch s {
					case "_bucket":
						se.role = roleBucket
					case "_sum":
						se.role = roleSum
					case "_count":
						se.role = roleCount
					case "_created":
						se.role = roleSkip
					case "":
						se.role = roleQuantile
					}
				}
				break
			}
		}
	}
	outName := famName
	if typ == model.MetricTypeCounter {
		outName = name
	}
	drop := ""
	switch se.role {
	case roleBucket:
		if typ == model.MetricTypeHistogram {
			drop = model.BucketLabel
			se.arg = parseFloat(c.lbls.Get(model.BucketLabel))
		}
	case roleQuantile:
		drop = model.QuantileLabel
		se.arg = parseFloat(c.lbls.Get(model.QuantileLabel))
	}
	// attributes
	attrs := slices.Clone(c.base)
	c.lbls.Range(func(l labels.Label) {
		if l.Name == model.MetricNameLabel || l.Name == drop || l.Value == "" {
			return
		}
		k := l.Name
		if !c.t.HonorLabels {
			if k == "job" || k == "instance" {
				k = "exported_" + k
			} else if _, ok := c.t.Labels[k]; ok {
				k = "exported_" + k
			}
		} else if _, ok := c.t.Labels[k]; ok {
			for i, a := range attrs {
				if a.Key == k {
					attrs = slices.Delete(attrs, i, i+1)
					break
				}
			}
		}
		attrs = append(attrs, strKV(strings.Clone(k), strings.Clone(l.Value)))
	})
	sort.SliceStable(attrs, func(i, j int) bool { return attrs[i].Key < attrs[j].Key })
	key := c.keyBuf[:0]
	key = append(key, outName...)
	for _, a := range attrs {
		key = append(key, 0xff)
		key = append(key, a.Key...)
		key = append(key, 0xfe)
		key = append(key, a.Value.GetStringValue()...)
	}
	c.keyBuf = key
	ps := c.points[string(key)]
	if ps == nil {
		f := c.fams[outName]
		if f == nil || f.typ != typ {
			f = c.newFam(outName, famName, typ)
			c.fams[outName] = f
		}
		ps = &pointSeries{fam: f, attrs: attrs}
		c.points[string(key)] = ps
	}
	se.ps = ps
	c.raw[string(b)] = se
	return se
}

func (c *Converter) newFam(outName, famName string, typ model.MetricType) *famState {
	f := &famState{name: outName, typ: typ}
	if string(c.hlpName) == famName && famName != "" {
		f.help = string(c.hlp)
	}
	if string(c.untName) == famName && famName != "" {
		f.unit = unitOf(string(c.unt))
	}
	t := string(typ)
	if typ == "" {
		t = "unknown"
	}
	if t == "untyped" {
		t = "unknown"
	}
	f.metadata = []*commonpb.KeyValue{strKV("prometheus.type", t)}
	return f
}

func newMetric(f *famState) *metricspb.Metric {
	m := &metricspb.Metric{Name: f.name, Description: f.help, Unit: f.unit, Metadata: f.metadata}
	switch f.typ {
	case model.MetricTypeCounter:
		m.Data = &metricspb.Metric_Sum{Sum: &metricspb.Sum{AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE, IsMonotonic: true}}
	case model.MetricTypeInfo, model.MetricTypeStateset:
		m.Data = &metricspb.Metric_Sum{Sum: &metricspb.Sum{AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE}}
	case model.MetricTypeHistogram:
		m.Data = &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE}}
	case model.MetricTypeSummary:
		m.Data = &metricspb.Metric_Summary{Summary: &metricspb.Summary{}}
	default:
		m.Data = &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{}}
	}
	return m
}

var unitTable = map[string]string{
	"seconds": "s", "milliseconds": "ms", "microseconds": "us", "nanoseconds": "ns",
	"minutes": "min", "hours": "h", "days": "d",
	"bytes": "By", "kilobytes": "kBy", "megabytes": "MBy", "gigabytes": "GBy", "terabytes": "TBy",
	"kibibytes": "KiBy", "mebibytes": "MiBy", "gibibytes": "GiBy", "tebibytes": "TiBy",
	"meters": "m", "volts": "V", "amperes": "A", "joules": "J", "watts": "W", "grams": "g",
	"celsius": "Cel", "hertz": "Hz", "percent": "%", "ratio": "1",
}

func unitOf(u string) string {
	if v, ok := unitTable[u]; ok {
		return v
	}
	return u
}

func parseFloat(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return math.NaN()
	}
	return v
}

// lineOf estimates the line of the parser's failure: the line after the last
// complete entry the parser returned. It counts newlines up to the last
// series/comment returned; good enough to name the line in an error.
func lineOf(page, last []byte) (int, string) {
	off := 0
	if len(last) > 0 && len(page) > 0 {
		d := uintptr(unsafe.Pointer(unsafe.SliceData(last))) - uintptr(unsafe.Pointer(unsafe.SliceData(page)))
		if d < uintptr(len(page)) {
			off = int(d)
			if i := bytes.IndexByte(page[off:], '\n'); i >= 0 {
				off += i + 1
			} else {
				off = len(page)
			}
		}
	}
	line := bytes.Count(page[:off], []byte{'\n'}) + 1
	// skip blank lines
	rest := page[off:]
	for len(rest) > 0 && rest[0] == '\n' {
		rest = rest[1:]
		line++
	}
	if i := bytes.IndexByte(rest, '\n'); i >= 0 {
		rest = rest[:i]
	}
	if len(rest) > 120 {
		rest = rest[:120]
	}
	return line, string(rest)
}

var synthDefs = []struct{ name, help, unit string }{
	{"up", "The scraping was successful", ""},
	{"scrape_duration_seconds", "Duration of the scrape", "s"},
	{"scrape_samples_scraped", "The number of samples the target exposed", ""},
	{"scrape_samples_post_metric_relabeling", "The number of samples remaining after metric relabeling was applied", ""},
	{"scrape_series_added", "The approximate number of new series in this scrape", ""},
}

var gaugeMeta = []*commonpb.KeyValue{strKV("prometheus.type", "gauge")}

func (c *Converter) synthetic(ms []*metricspb.Metric, ts uint64, up float64, dur time.Duration, samples, added int) []*metricspb.Metric {
	vals := []float64{up, dur.Seconds(), float64(samples), float64(samples), float64(added)}
	for i, d := range synthDefs {
		ms = append(ms, &metricspb.Metric{Name: d.name, Description: d.help, Unit: d.unit, Metadata: gaugeMeta,
			Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: []*metricspb.NumberDataPoint{{
				Attributes: c.base, TimeUnixNano: ts, Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: vals[i]},
			}}}}})
	}
	return ms
}

// wrap gives each scrape its own Resource and attribute slice: processors
// downstream stamp resources in place, while the sinks may still be reading
// the previous scrape's. The KeyValues themselves are shared (processors
// replace them, never mutate them); the spare capacity holds the stamped
// attributes without a second allocation.
func (c *Converter) wrap(ms []*metricspb.Metric) *metricspb.ResourceMetrics {
	attrs := make([]*commonpb.KeyValue, len(c.resource.Attributes), len(c.resource.Attributes)+12)
	copy(attrs, c.resource.Attributes)
	return &metricspb.ResourceMetrics{
		Resource: &resourcepb.Resource{Attributes: attrs},
		ScopeMetrics: []*metricspb.ScopeMetrics{{
			Scope:   &commonpb.InstrumentationScope{Name: ScopeName, Version: ScopeVersion},
			Metrics: ms,
		}},
	}
}

// Down returns the ResourceMetrics for a failed scrape (up=0 plus synthetic series).
func (c *Converter) Down(ts time.Time, dur time.Duration) *metricspb.ResourceMetrics {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wrap(c.synthetic(nil, uint64(ts.UnixNano()), 0, dur, 0, 0))
}
