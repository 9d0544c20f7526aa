// The synthetic up and scrape_* series the collector adds to every
// scrape, and how a page's own series of those names join them.

package scraper

import (
	"time"

	"github.com/prometheus/common/model"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
)

var synthDefs = []struct{ name, help, unit string }{
	{"up", "The scraping was successful", ""},
	{"scrape_duration_seconds", "Duration of the scrape", "s"},
	{"scrape_samples_scraped", "The number of samples the target exposed", ""},
	{"scrape_samples_post_metric_relabeling", "The number of samples remaining after metric relabeling was applied", ""},
	{"scrape_series_added", "The approximate number of new series in this scrape", ""},
}

// synthN is len(synthDefs).
const synthN = 5

// synthIndex is the index in synthDefs of each synthetic series' name.
var synthIndex = func() map[string]int {
	if len(synthDefs) != synthN {
		panic("scraper: synthN is not len(synthDefs)")
	}
	m := map[string]int{}
	for i, d := range synthDefs {
		m[d.name] = i
	}
	return m
}()

// synthDecls are the collector's metadata for the synthetic series: a
// page's own series of these names take it (famFor).
var synthDecls = func() map[string]metaDecl {
	m := map[string]metaDecl{}
	for _, d := range synthDefs {
		word := d.unit
		if word == "s" {
			word = "seconds" // as Prometheus declares it; unitOf makes it s again
		}
		m[d.name] = metaDecl{typ: model.MetricTypeGauge, help: d.help, unit: word}
	}
	return m
}()

// synthetic appends the synthetic series to metrics. own holds the page's own
// metrics of their names (a federation page's up): the synthetic point
// joins those, one metric a name, as in the collector; a page point of
// the very series (no labels of its own) is the collector's one point: at
// the scrape's time it takes the synthetic value, at a time of the page's
// own the synthetic point is dropped (the collector refuses a second time
// in one point).
func (c *Converter) synthetic(metrics []*metricspb.Metric, own *[synthN]*metricspb.Metric, ts uint64, up float64, dur time.Duration, n scrapeCounts, sl *pointSlab) []*metricspb.Metric {
	vals := [...]float64{up, dur.Seconds(), float64(n.samples), float64(n.kept), float64(n.added)}
	meta := c.sets.meta["gauge"].KeyValues()
	// From the scrape's arena, like the page's own metrics: allocated,
	// they would be most of a steady scrape's allocations.
	for i, d := range synthDefs {
		if m := own[i]; m != nil {
			g := m.GetGauge()
			if same := pointOf(g.DataPoints, c.base); same != nil {
				if same.TimeUnixNano == ts {
					same.Value, same.Flags = &metricspb.NumberDataPoint_AsDouble{AsDouble: vals[i]}, 0
				}
				continue
			}
			pt := sl.num(vals[i])
			pt.Attributes, pt.TimeUnixNano = c.base, ts
			g.DataPoints = append(g.DataPoints, pt)
			continue
		}
		x := next(&c.metrics.gauges, &c.metrics.ar.pools.gauges, &c.metrics.ar.gauges)
		pt := sl.num(vals[i])
		pt.Attributes, pt.TimeUnixNano = c.base, ts
		x.d.DataPoints = append(c.metrics.numPoints(1), pt)
		x.m.Name, x.m.Description, x.m.Unit, x.m.Metadata = d.name, d.help, d.unit, meta
		x.w.Gauge, x.m.Data = &x.d, &x.w
		metrics = append(metrics, &x.m)
	}
	return metrics
}

// pointOf returns the point of pts whose attributes are attrs (the same
// interned KeyValues), or nil.
func pointOf(pts []*metricspb.NumberDataPoint, attrs []*commonpb.KeyValue) *metricspb.NumberDataPoint {
next:
	for _, p := range pts {
		if len(p.Attributes) != len(attrs) {
			continue
		}
		for i, kv := range p.Attributes {
			if kv != attrs[i] {
				continue next
			}
		}
		return p
	}
	return nil
}
