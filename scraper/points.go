// Completing a scrape's points: start times of cumulative series
// (_created, first point, reset), histogram buckets and summary
// quantiles as the collector builds them, and undoing a scrape that
// failed half-way.

package scraper

import (
	"math"
	"slices"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/value"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
)

// startsFromCreatedGauges gives the cumulative series of this scrape the
// start time of their text-format B_created gauge (unless the page gave a
// TYPE'd _created, which wins). The gauge itself is still emitted, as the
// collector does.
func (c *Converter) startsFromCreatedGauges(gen uint64) {
	for _, r := range c.created {
		cf, ok := c.starts[r.se]
		if !ok {
			continue
		}
		var found [2]*pointSeries // what is kept for the next scrape
		for i, famKey := range cf.fams {
			f := c.fams[famKey]
			if f == nil {
				continue
			}
			// The gauge's attributes are the counter's and the summary's
			// set; a histogram's are a set of their own kind.
			set := r.se.ps.set
			if f.typ == model.MetricTypeHistogram && set != nil {
				c.setKey = append(append(c.setKey[:0], kindHistogram), cf.attrs...)
				if set = c.sets.find(c.setKey); set == nil {
					continue
				}
			}
			ps := cf.ps[i]
			if ps == nil || ps.gen != gen || ps.fam != f || ps.set != set {
				ps = c.index.point(pointKey{f, set})
			}
			if ps == nil || ps.gen != gen {
				continue
			}
			found[i] = ps
			if ps.created != 0 {
				continue
			}
			switch ps.fam.typ {
			case model.MetricTypeCounter, model.MetricTypeHistogram, model.MetricTypeSummary:
				ps.created = r.ns
			}
		}
		if found != cf.ps {
			cf.ps = found
			c.starts[r.se] = cf
		}
	}
}

// abort forgets the per-scrape state of a scrape that failed half-way, so
// nothing of it leaks into the next scrape or the staleness markers. The
// series it resolved stay in the index; the line cache keeps the lines it
// read with keepLines (a conversion cut short, whose series are kept:
// every line's entry is in the index), else it is emptied.
func (c *Converter) abort(keepLines bool) {
	for _, ps := range c.touched {
		ps.resetScrape()
		ps.gen = 0
	}
	for _, f := range c.order {
		f.out, f.gen = nil, 0
	}
	c.touched, c.order = c.touched[:0], c.order[:0]
	if keepLines {
		c.lc.stopRecording()
		c.lc.finish()
		return
	}
	c.lc.reset()
}

// finish completes this scrape's cumulative points (start times, histogram
// buckets) and commits the per-series state. Each series is done whole in
// one pass: it reads and writes only its own state, and a second pass over
// tens of thousands of series would fetch each from memory again.
func (c *Converter) finish(now uint64, sl *pointSlab) {
	for _, ps := range c.touched {
		switch {
		case ps.hist() != nil:
			c.finishHist(ps, ps.hist(), now, sl)
			ps.shape.hist = nil // back to the pool as ConvertLeased returns
		case ps.sum() != nil:
			c.finishSummary(ps, ps.sum(), now)
		case ps.num != nil:
			if ps.fam.typ == model.MetricTypeCounter {
				if v, ok := ps.num.Value.(*metricspb.NumberDataPoint_AsDouble); ok {
					c.startFor(ps, v.AsDouble, ps.created, ps.num.TimeUnixNano)
				}
				ps.num.StartTimeUnixNano = ps.curStart
			}
		default:
			continue // only a _created sample: no point, nothing to commit
		}
		ps.start, ps.last, ps.seen = ps.curStart, ps.curLast, true
	}
}

// returnBuilders gives the histogram builders this scrape took back to
// the pool; no series points at them any more (finish and abort forgot
// them).
func (c *Converter) returnBuilders() {
	for i, h := range c.lent {
		c.pools.putBuilder(h)
		c.lent[i] = nil
	}
	c.lent = c.lent[:0]
}

// startFor picks the start time of a cumulative point whose time is at
// (the scrape's, or the page's timestamp when honoured): the page's
// _created, else the time of the series' first point, moved to at on a
// reset; never after at, whatever the page's clocks say (a start after
// the point's time is no interval at all).
func (c *Converter) startFor(ps *pointSeries, v float64, created, at uint64) {
	switch {
	case created != 0:
		ps.curStart = created
	case !ps.seen:
		ps.curStart = at
	case v < ps.last:
		ps.curStart = at // counter reset
	}
	ps.curStart = min(ps.curStart, at)
	if !math.IsNaN(v) {
		ps.curLast = v
	}
}

// finishHist turns the cumulative buckets into an OTLP point and appends
// it, unless the collector would drop it: no _count, NaN or decreasing
// buckets, or a count below the largest bucket.
func (c *Converter) finishHist(ps *pointSeries, h *histBuilder, now uint64, sl *pointSlab) {
	if !h.hasCount {
		return
	}
	// Pages list a histogram's buckets in order: the sort is for those
	// that do not.
	for i := 1; i < len(h.buckets); i++ {
		if h.buckets[i].le < h.buckets[i-1].le {
			slices.SortFunc(h.buckets, func(a, b bucket) int {
				switch {
				case a.le < b.le:
					return -1
				case a.le > b.le:
					return 1
				}
				return 0
			})
			break
		}
	}
	bs := h.buckets
	if len(bs) > 0 && math.IsInf(bs[len(bs)-1].le, 1) {
		bs = bs[:len(bs)-1] // the +Inf bucket is the count
	}
	stale := value.IsStaleNaN(h.sum) || value.IsStaleNaN(h.count)
	pt := h.pt
	if !stale {
		prev := 0.0
		for _, b := range bs {
			if math.IsNaN(b.cum) || b.cum < prev {
				return
			}
			prev = b.cum
		}
		if math.IsNaN(h.count) || h.count < prev {
			return
		}
		pt.Count = uint64(h.count)
		if h.hasSum {
			*h.sumSlot = h.sum
			pt.Sum = h.sumSlot
		}
	} else {
		pt.Flags = flagNoValue
	}
	// The bounds rarely change: the last point's (immutable downstream,
	// like the attributes) serve again when they are the same.
	var bounds []float64
	sh := ps.shape
	if sh.histSeen && len(sh.lastBounds) == len(bs) {
		bounds = sh.lastBounds
		for i, b := range bs {
			if math.Float64bits(bounds[i]) != math.Float64bits(b.le) {
				bounds = nil
				break
			}
		}
	}
	fresh := bounds == nil
	if fresh {
		bounds = make([]float64, len(bs))
	}
	counts := carve(&sl.counts, &sl.ar.pools.counts, &sl.ar.counts, len(bs)+1)
	prev := 0.0
	for i, b := range bs {
		if fresh {
			bounds[i] = b.le
		}
		if !stale {
			counts[i] = uint64(b.cum - prev)
			prev = b.cum
		}
	}
	if !stale {
		counts[len(bs)] = uint64(h.count - prev)
	}
	pt.ExplicitBounds, pt.BucketCounts = bounds, counts
	c.startFor(ps, h.count, ps.created, pt.TimeUnixNano)
	pt.StartTimeUnixNano = ps.curStart
	sh.lastBounds, sh.histSeen = bounds, true
	hd := ps.fam.out.Data.(*metricspb.Metric_Histogram).Histogram
	hd.DataPoints = append(hd.DataPoints, pt)
}

// finishSummary appends a summary point; like the collector, none without _count.
func (c *Converter) finishSummary(ps *pointSeries, s *summaryBuilder, now uint64) {
	if !s.hasCount {
		return
	}
	pt := s.pt
	slices.SortStableFunc(pt.QuantileValues, func(a, b *metricspb.SummaryDataPoint_ValueAtQuantile) int {
		switch {
		case a.Quantile < b.Quantile:
			return -1
		case a.Quantile > b.Quantile:
			return 1
		}
		return 0
	})
	if value.IsStaleNaN(s.sum) || value.IsStaleNaN(s.count) {
		pt.Flags = flagNoValue
		for _, q := range pt.QuantileValues {
			q.Value = 0
		}
	} else {
		pt.Sum, pt.Count = s.sum, uint64(s.count)
	}
	c.startFor(ps, s.count, ps.created, pt.TimeUnixNano)
	pt.StartTimeUnixNano = ps.curStart
	ps.shape.lastSum = pt
	sd := ps.fam.out.Data.(*metricspb.Metric_Summary).Summary
	sd.DataPoints = append(sd.DataPoints, pt)
}
