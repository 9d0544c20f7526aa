// A scrape's output: metrics and points carved from the scrape's arena
// (arena.go), gathered into the target's resource and those a page
// named itself under honor_labels.

package scraper

import (
	"net"
	"strings"
	"time"

	"github.com/otelstep/otelstep/pipeline"
	"github.com/prometheus/common/model"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
)

// ScopeName and ScopeVersion are what the collector's prometheus receiver reports.
const (
	ScopeName    = "github.com/open-telemetry/opentelemetry-collector-contrib/receiver/prometheusreceiver"
	ScopeVersion = "0.0.1"
)

// resourceAttrs are the collector's resource attributes for a job and
// instance: service.name, server.address (only for a host worth naming:
// not loopback, unspecified or localhost), service.instance.id,
// server.port and url.scheme, in its order.
func resourceAttrs(job, instance, scheme string) []*commonpb.KeyValue {
	host, port, err := net.SplitHostPort(instance)
	if err != nil {
		host, port = instance, ""
	}
	if scheme == "" {
		scheme = "http"
	}
	attrs := []*commonpb.KeyValue{strKV("service.name", job)}
	if discernibleHost(host) {
		attrs = append(attrs, strKV("server.address", host))
	}
	return append(attrs, strKV("service.instance.id", instance), strKV("server.port", port), strKV("url.scheme", scheme))
}

func discernibleHost(host string) bool {
	if ip := net.ParseIP(host); ip != nil {
		return !ip.IsLoopback() && !ip.IsUnspecified()
	}
	return host != "" && host != "localhost"
}

// pointSlab hands out a scrape's number points from its arena's chunks.
type pointSlab struct {
	ar     *arena
	cur    *chunk[numPoint]
	hcur   *chunk[histPoint]
	counts *chunk[uint64]
}

func (s *pointSlab) num(v float64) *metricspb.NumberDataPoint {
	x := next(&s.cur, &s.ar.pools.nums, &s.ar.nums)
	x.d.AsDouble = v
	x.p.Value = &x.d
	return &x.p
}

// collect lists this scrape's metrics (page order, staleness markers, then
// the synthetic series); a family whose points were all dropped is left out,
// as the collector does.
func (c *Converter) collect(gen, ts uint64, up float64, dur time.Duration, n scrapeCounts, sl *pointSlab) []*metricspb.ResourceMetrics {
	metrics := carve(&c.metrics.mptrs, &c.metrics.ar.pools.mptrs, &c.metrics.ar.mptrs, len(c.order)+len(synthDefs))[:0]
	var others []*metricspb.ResourceMetrics // honor_labels resources, in page order
	var otherIdx map[string]int
	var own [synthN]*metricspb.Metric // the page's own up and scrape_*
	for _, f := range c.order {
		f.lastN = pipeline.MetricPoints(f.out)
		if f.lastN > 0 {
			if f.res == "" {
				if i, ok := synthIndex[f.name]; ok {
					own[i] = f.out
					f.lastN++ // room for the synthetic point
				}
				metrics = append(metrics, f.out)
			} else {
				i, ok := otherIdx[f.res]
				if !ok {
					if otherIdx == nil {
						otherIdx = map[string]int{}
					}
					i = len(others)
					otherIdx[f.res] = i
					job, inst, _ := strings.Cut(f.res, "\xff")
					others = append(others, wrapAttrs(resourceAttrs(job, inst, c.t.Scheme), nil))
				}
				sm := others[i].ScopeMetrics[0]
				sm.Metrics = append(sm.Metrics, f.out)
			}
		}
		f.out = nil
	}
	c.order = c.order[:0]
	// The synthetic series are the target's: one scrape, one up.
	rms := []*metricspb.ResourceMetrics{c.wrap(c.synthetic(metrics, &own, ts, up, dur, n, sl))}
	return append(rms, others...)
}

// metricSlab hands out a scrape's metrics and their point slices from its
// arena's chunks: a node page has hundreds of families of a few points
// each, and a metric and a points slice allocated per family would be
// most of a scrape's allocations.
type metricSlab struct {
	ar        *arena
	sums      *chunk[sumMetric]
	gauges    *chunk[gaugeMetric]
	hists     *chunk[histMetric]
	summaries *chunk[summaryMetric]
	nums      *chunk[*metricspb.NumberDataPoint]
	mptrs     *chunk[*metricspb.Metric]
	res       *chunk[resMetrics]
}

// A metric, its oneof wrapper and its data, allocated together.
type (
	sumMetric struct {
		m metricspb.Metric
		w metricspb.Metric_Sum
		d metricspb.Sum
	}
	gaugeMetric struct {
		m metricspb.Metric
		w metricspb.Metric_Gauge
		d metricspb.Gauge
	}
	histMetric struct {
		m metricspb.Metric
		w metricspb.Metric_Histogram
		d metricspb.Histogram
	}
	summaryMetric struct {
		m metricspb.Metric
		w metricspb.Metric_Summary
		d metricspb.Summary
	}
)

// begin starts a scrape whose memory is carved from a.
func (ms *metricSlab) begin(a *arena) {
	*ms = metricSlab{ar: a}
}

// numPoints returns an empty slice of capacity n carved from the scrape's
// chunks of point pointers. Its capacity is exact, so an append past it
// moves that family's points to an array of their own; so does a family
// of more than a chunk's worth.
func (ms *metricSlab) numPoints(n int) []*metricspb.NumberDataPoint {
	if n == 0 {
		return nil
	}
	return carve(&ms.nums, &ms.ar.pools.ptrs, &ms.ar.ptrs, n)[:0]
}

// metric returns family f's metric for this scrape, with room for as many
// points as its last scrape had.
func (ms *metricSlab) metric(f *famState) *metricspb.Metric {
	const cum = metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
	var m *metricspb.Metric
	switch f.typ {
	case model.MetricTypeCounter, model.MetricTypeInfo, model.MetricTypeStateset:
		x := next(&ms.sums, &ms.ar.pools.sums, &ms.ar.sums)
		x.d.AggregationTemporality, x.d.IsMonotonic = cum, f.typ == model.MetricTypeCounter
		x.d.DataPoints = ms.numPoints(f.lastN)
		x.w.Sum, x.m.Data, m = &x.d, &x.w, &x.m
	case model.MetricTypeHistogram:
		x := next(&ms.hists, &ms.ar.pools.hists, &ms.ar.hists)
		x.d.AggregationTemporality = cum
		x.d.DataPoints = make([]*metricspb.HistogramDataPoint, 0, f.lastN)
		x.w.Histogram, x.m.Data, m = &x.d, &x.w, &x.m
	case model.MetricTypeSummary:
		x := next(&ms.summaries, &ms.ar.pools.summaries, &ms.ar.summaries)
		x.d.DataPoints = make([]*metricspb.SummaryDataPoint, 0, f.lastN)
		x.w.Summary, x.m.Data, m = &x.d, &x.w, &x.m
	default:
		x := next(&ms.gauges, &ms.ar.pools.gauges, &ms.ar.gauges)
		x.d.DataPoints = ms.numPoints(f.lastN)
		x.w.Gauge, x.m.Data, m = &x.d, &x.w, &x.m
	}
	m.Name, m.Description, m.Unit, m.Metadata = f.name, f.help, f.unit, f.metadata.KeyValues()
	return m
}

// wrap gives each scrape its own Resource and attribute slice: processors
// downstream stamp resources in place, while the sinks may still be reading
// the previous scrape's. The KeyValues themselves are shared (processors
// replace them, never mutate them); the spare capacity holds the stamped
// attributes without a second allocation. It comes from the scrape's arena,
// as it lives exactly as long as the scrape's metrics.
func (c *Converter) wrap(ms []*metricspb.Metric) *metricspb.ResourceMetrics {
	return next(&c.metrics.res, &c.metrics.ar.pools.res, &c.metrics.ar.res).fill(c.resource.Attributes, ms)
}

// wrapAttrs is wrap for a resource of the page's own (honor_labels), off
// the heap.
func wrapAttrs(base []*commonpb.KeyValue, ms []*metricspb.Metric) *metricspb.ResourceMetrics {
	return new(resMetrics).fill(base, ms)
}

// stampRoom is the spare capacity a resource's attributes get for the
// processors' stamps.
const stampRoom = 12

// resMetrics is a ResourceMetrics with everything it points to, allocated
// together.
type resMetrics struct {
	rm    metricspb.ResourceMetrics
	res   resourcepb.Resource
	sms   [1]*metricspb.ScopeMetrics
	sm    metricspb.ScopeMetrics
	scope commonpb.InstrumentationScope
	attrs [4 + stampRoom]*commonpb.KeyValue // a target's four resource attributes and the stamps
}

// fill makes x a ResourceMetrics of the otelstep scope holding ms, its
// resource's attributes a copy of base with room to stamp.
func (x *resMetrics) fill(base []*commonpb.KeyValue, ms []*metricspb.Metric) *metricspb.ResourceMetrics {
	var attrs []*commonpb.KeyValue
	if len(base)+stampRoom <= len(x.attrs) {
		attrs = x.attrs[:len(base)]
	} else {
		attrs = make([]*commonpb.KeyValue, len(base), len(base)+stampRoom)
	}
	copy(attrs, base)
	x.scope.Name, x.scope.Version = ScopeName, ScopeVersion
	x.sm.Scope, x.sm.Metrics = &x.scope, ms
	x.sms[0] = &x.sm
	x.res.Attributes = attrs
	x.rm.Resource, x.rm.ScopeMetrics = &x.res, x.sms[:]
	return &x.rm
}
