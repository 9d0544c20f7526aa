// Staleness: the marker point of a series gone from the page, as the
// collector writes Prometheus's stale NaN, and eviction of what no
// page exposes any more.

package scraper

import (
	"github.com/prometheus/common/model"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
)

// flagNoValue is DataPointFlags_DATA_POINT_FLAGS_NO_RECORDED_VALUE_MASK: the
// collector's translation of a Prometheus staleness marker.
const flagNoValue = uint32(metricspb.DataPointFlags_DATA_POINT_FLAGS_NO_RECORDED_VALUE_MASK)

// staleAndEvict gives every series that was on the previous page but not on
// this one a staleness marker (once: its entry is then forgotten), and drops
// cache entries no longer exposed. Nothing to do, and no map walk, when
// every cached series was seen.
func (c *Converter) staleAndEvict(gen, now uint64) {
	if c.seenN == c.index.len() {
		return
	}
	c.index.evict(gen, func(se *seriesEntry) {
		charge := seriesCharge(len(se.key))
		c.held -= charge
		c.budget.give(charge)
		c.markStale(se, gen, now)
		if se.created {
			delete(c.starts, se)
		}
	})
	for k, f := range c.fams {
		if f.gen != gen {
			delete(c.fams, k)
		}
	}
	// Forget the interned pairs when churning label values (a request id,
	// say) have made the table much larger than the live series: the
	// series keep their KeyValues, new ones intern afresh.
	if len(c.kvs) > 4*len(c.touched)+256 { // touched: this scrape's point series, every live one
		clear(c.kvs)
		for _, b := range c.base {
			c.kvs[b.Key+"\xff"+b.Value.GetStringValue()] = b
		}
	}
}

// markStale emits the staleness marker of se's point, as the collector
// writes it for a Prometheus stale NaN: no value, flags NO_RECORDED_VALUE,
// histograms keep their bounds with zero counts, summaries their quantiles.
func (c *Converter) markStale(se *seriesEntry, gen, now uint64) {
	ps := se.ps
	if !se.track || se.role == roleDrop || !ps.seen || ps.gen == gen || ps.stale == gen {
		return
	}
	ps.stale = gen
	f := ps.fam
	if f.gen != gen {
		f.gen = gen
		f.out = c.metrics.metric(f)
		c.order = append(c.order, f)
	}
	switch d := f.out.Data.(type) {
	case *metricspb.Metric_Gauge:
		d.Gauge.DataPoints = append(d.Gauge.DataPoints, &metricspb.NumberDataPoint{Attributes: ps.attrs(), TimeUnixNano: now, Flags: flagNoValue})
	case *metricspb.Metric_Sum:
		pt := &metricspb.NumberDataPoint{Attributes: ps.attrs(), TimeUnixNano: now, Flags: flagNoValue}
		if f.typ == model.MetricTypeCounter {
			pt.StartTimeUnixNano = ps.start
		}
		d.Sum.DataPoints = append(d.Sum.DataPoints, pt)
	case *metricspb.Metric_Histogram:
		if ps.shape == nil || !ps.shape.histSeen {
			return
		}
		b := ps.shape.lastBounds
		d.Histogram.DataPoints = append(d.Histogram.DataPoints, &metricspb.HistogramDataPoint{Attributes: ps.attrs(),
			StartTimeUnixNano: ps.start, TimeUnixNano: now, Flags: flagNoValue, ExplicitBounds: b, BucketCounts: make([]uint64, len(b)+1)})
	case *metricspb.Metric_Summary:
		if ps.shape == nil || ps.shape.lastSum == nil {
			return
		}
		last := ps.shape.lastSum
		qs := make([]*metricspb.SummaryDataPoint_ValueAtQuantile, len(last.QuantileValues))
		for i, q := range last.QuantileValues {
			qs[i] = &metricspb.SummaryDataPoint_ValueAtQuantile{Quantile: q.Quantile}
		}
		d.Summary.DataPoints = append(d.Summary.DataPoints, &metricspb.SummaryDataPoint{Attributes: ps.attrs(),
			StartTimeUnixNano: ps.start, TimeUnixNano: now, Flags: flagNoValue, QuantileValues: qs})
	}
}
