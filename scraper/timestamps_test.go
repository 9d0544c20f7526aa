package scraper

import (
	"fmt"
	"testing"
	"time"

	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
)

// startAndTime are the start and time of each cumulative point of rm, by
// metric name and attributes.
func startAndTime(rm *metricspb.ResourceMetrics) map[string][2]uint64 {
	out := map[string][2]uint64{}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		add := func(a string, start, at uint64) { out[m.Name+"{"+a+"}"] = [2]uint64{start, at} }
		switch d := m.Data.(type) {
		case *metricspb.Metric_Sum:
			for _, p := range d.Sum.DataPoints {
				add(sortedKVs(p.Attributes), p.StartTimeUnixNano, p.TimeUnixNano)
			}
		case *metricspb.Metric_Histogram:
			for _, p := range d.Histogram.DataPoints {
				add(sortedKVs(p.Attributes), p.StartTimeUnixNano, p.TimeUnixNano)
			}
		case *metricspb.Metric_Summary:
			for _, p := range d.Summary.DataPoints {
				add(sortedKVs(p.Attributes), p.StartTimeUnixNano, p.TimeUnixNano)
			}
		}
	}
	return out
}

// With explicit timestamps a cumulative point starts at its series' first
// point's time, not at the scrape's: never after the point's own time
// (issue 35, item 3). A reset moves the start to the point that reset.
func TestExplicitTimestampsStart(t *testing.T) {
	const ms = int64(time.Millisecond)
	page := func(at int64, v int) []byte {
		return fmt.Appendf(nil, `# TYPE c counter
c_total %d %d
# TYPE h histogram
h_bucket{le="1"} %d %d
h_bucket{le="+Inf"} %d %d
h_sum 1 %d
h_count %d %d
# TYPE s summary
s{quantile="0.5"} 1 %d
s_sum 1 %d
s_count %d %d
`, v, at, v, at, v, at, at, v, at, at, at, v, at)
	}
	first := int64(1_700_000_000_000) // long before the scrapes (t0 is 1.8e9 s)
	c := NewConverter(fixtureTarget("ts"))
	steps := []struct {
		at    int64 // the page's timestamp, ms
		v     int
		start int64 // want, ms
	}{
		{first, 5, first},
		{first + 15_000, 7, first},          // later point: same start
		{first + 30_000, 2, first + 30_000}, // reset: the resetting point's time
		{first + 45_000, 3, first + 30_000},
	}
	for i, st := range steps {
		rm, err := c.Convert(page(st.at, st.v), ctText, t0.Add(time.Duration(i)*15*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		got := startAndTime(rm)
		if len(got) != 3 {
			t.Fatalf("scrape %d: %d cumulative points, want 3", i+1, len(got))
		}
		for k, v := range got {
			if v[0] != uint64(st.start*ms) || v[1] != uint64(st.at*ms) {
				t.Errorf("scrape %d %s: start %d time %d, want %d and %d", i+1, k, v[0], v[1], st.start*ms, st.at*ms)
			}
		}
	}
	// ignored timestamps: the scrape's time for both
	tg := fixtureTarget("ts")
	tg.HonorTimestamps = false
	rm, err := NewConverter(tg).Convert(page(first, 1), ctText, t0)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range startAndTime(rm) {
		if v[0] != uint64(t0.UnixNano()) || v[1] != uint64(t0.UnixNano()) {
			t.Errorf("honor_timestamps false: %s start %d time %d, want the scrape's", k, v[0], v[1])
		}
	}
}

// A page's clocks may disagree: a _created after its sample's time, or a
// timestamp going back. The start is never after the point's time.
func TestStartNeverAfterTime(t *testing.T) {
	c := NewConverter(fixtureTarget("ts"))
	pages := []string{
		"# TYPE c counter\nc_total 1 1700000000000\nc_created 1700000100\n# EOF\n",
		"# TYPE c counter\nc_total 2 1600000000000\nc_created 1700000100\n# EOF\n",
	}
	for i, p := range pages {
		rm, err := c.Convert([]byte(p), ctOM, t0.Add(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range startAndTime(rm) {
			if v[0] > v[1] {
				t.Errorf("page %d %s: start %d after time %d", i+1, k, v[0], v[1])
			}
		}
	}
	for _, fx := range fixtures {
		c := NewConverter(fixtureTarget(fx.name))
		for i := range 2 {
			rm, err := c.Convert(read(t, fx.file), fx.ct, time.Unix(1_700_000_000, 0).Add(time.Duration(i)*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range startAndTime(rm) {
				if v[0] > v[1] {
					t.Errorf("%s scrape %d %s: start %d after time %d", fx.name, i+1, k, v[0], v[1])
				}
			}
		}
	}
}

// The samples of one point at different times: the collector keeps those
// at the first one's time, so a histogram whose _count is at another time
// has no point, and a series written twice keeps its first.
func TestInconsistentTimestamps(t *testing.T) {
	rm := conv(t, `# TYPE h histogram
h_bucket{le="1"} 1 1700000000000
h_bucket{le="+Inf"} 2 1700000000000
h_sum 3 1700000000000
h_count 2 1700000001000
# TYPE g gauge
g{a="1"} 1 1700000000000
g{a="1" } 2 1700000001000
# TYPE s summary
s{quantile="0.5"} 1 1700000000000
s_sum 3 1700000001000
s_count 2 1700000000000
`, ctText)
	if m := findPoints(rm, "h"); m != nil {
		t.Errorf("histogram with its _count at another time: %v", m)
	}
	if p := metric(t, rm, "g").GetGauge().DataPoints; len(p) != 1 || p[0].GetAsDouble() != 1 {
		t.Errorf("gauge: %v, want the first sample only", p)
	}
	if p := metric(t, rm, "s").GetSummary().DataPoints; len(p) != 1 || p[0].Sum != 0 || p[0].Count != 2 {
		t.Errorf("summary: %v, want its _sum dropped", p)
	}
}
