package scraper

import (
	"strings"
	"testing"
	"time"

	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
)

// All of a group's HELP and TYPE lines first, the samples after: every
// family keeps its type and description (issue 35, item 1).
func TestMetadataApartFromSamples(t *testing.T) {
	page := `# HELP a_total Requests.
# TYPE a_total counter
# HELP b A gauge.
# TYPE b gauge
# HELP h Latency.
# TYPE h histogram
# HELP s RPCs.
# TYPE s summary
# HELP u Untyped.
# TYPE u untyped
# HELP d Described only.
a_total{code="200"} 3
b 1
h_bucket{le="1"} 1
h_bucket{le="+Inf"} 2
h_sum 3
h_count 2
s{quantile="0.5"} 1
s_sum 4
s_count 2
u 5
d 6
# TYPE o counter
`
	rm := conv(t, page, ctText)
	for _, w := range []struct{ name, kind, ptype, help string }{
		{"a_total", "sum", "counter", "Requests."},
		{"b", "gauge", "gauge", "A gauge."},
		{"h", "histogram", "histogram", "Latency."},
		{"s", "summary", "summary", "RPCs."},
		{"u", "gauge", "unknown", "Untyped."},
		{"d", "gauge", "unknown", "Described only."},
	} {
		if m := checkKind(t, rm, w.name, w.kind, w.ptype); m.Description != w.help {
			t.Errorf("%s: description %q, want %q", w.name, m.Description, w.help)
		}
	}
	if got := strings.Join(pageNames(rm), ","); got != "a_total,b,d,h,s,u" {
		t.Errorf("metrics %s", got)
	}
}

// A family's metadata is by its name, not by the TYPE line read last: a
// family's samples after another family's TYPE line keep their own type.
func TestMetadataByName(t *testing.T) {
	rm := conv(t, `# TYPE c counter
# TYPE g gauge
c_total 1
g 2
c_created 1.7e9
`, ctText)
	checkKind(t, rm, "c_total", "sum", "counter")
	checkKind(t, rm, "g", "gauge", "gauge")
	if p := metric(t, rm, "c_total").GetSum().DataPoints[0]; p.StartTimeUnixNano != 1_700_000_000*1e9 {
		t.Errorf("c_total start %d: _created not its start", p.StartTimeUnixNano)
	}
}

// What a page declares outlives the scrape, as in Prometheus's scrape
// cache: a HELP line after its family's samples counts from the next
// scrape, a TYPE line that changes counts at once, and a family whose TYPE
// line is gone keeps its type. The line cache and plain textparse agree on
// all of it, and a steady page is taken whole from the cache.
func TestMetadataAcrossScrapes(t *testing.T) {
	late := []byte("# TYPE g gauge\ng 1\n# HELP g Late help.\n# TYPE c counter\nc_total 1\n")
	retyped := []byte("# TYPE g gauge\ng 1\n# HELP g Late help.\n# TYPE c gauge\nc_total 1\n")
	gone := []byte("# TYPE g gauge\ng 1\n# HELP g Late help.\nc_total 1\n")
	taken := convertBoth(t, ctText, late, late, late, retyped, late, gone)
	if taken[2] != sampleLines(late) {
		t.Errorf("steady page: %d lines taken from the cache, want all %d (all: %v)", taken[2], sampleLines(late), taken)
	}

	c := NewConverter(fixtureTarget("meta"))
	scrape := func(page []byte, i int) *metricspb.ResourceMetrics {
		rm, err := c.Convert(page, ctText, t0.Add(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return rm
	}
	if d := metric(t, scrape(late, 0), "g").Description; d != "" {
		t.Errorf("scrape 1: description %q before its HELP line was read", d)
	}
	rm := scrape(late, 1)
	if d := metric(t, rm, "g").Description; d != "Late help." {
		t.Errorf("scrape 2: description %q", d)
	}
	start := metric(t, rm, "c_total").GetSum().DataPoints[0].StartTimeUnixNano
	checkKind(t, scrape(retyped, 2), "c_total", "gauge", "unknown") // c_total no longer resolves by c
	rm = scrape(late, 3)
	checkKind(t, rm, "c_total", "sum", "counter")
	if s := metric(t, rm, "c_total").GetSum().DataPoints[0].StartTimeUnixNano; s == start {
		t.Error("a counter that was a gauge in between kept its old start")
	}
	checkKind(t, scrape(gone, 4), "c_total", "sum", "counter")
	if d := metric(t, scrape(gone, 5), "g").Description; d != "Late help." {
		t.Errorf("description %q after a scrape", d)
	}
}

// Declared again as it was (the table built again from the line cache):
// the same family, its series keep their start times.
func TestMetadataRedeclaredKeepsSeries(t *testing.T) {
	page := read(t, "metafirst.txt")
	c := NewConverter(fixtureTarget("meta"))
	var starts []uint64
	for i := range indexIdle + 3 {
		p := page
		if i == indexIdle+2 { // a change at the end: textparse reads it, with a fresh table
			p = append(append([]byte{}, page...), "mf_new 1\n"...)
		}
		rm, err := c.Convert(p, ctText, t0.Add(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		starts = append(starts, metric(t, rm, "mf_requests_total").GetSum().DataPoints[0].StartTimeUnixNano)
	}
	for i, s := range starts {
		if s != starts[0] {
			t.Errorf("scrape %d: start %d, want the first scrape's %d", i+1, s, starts[0])
		}
	}
}
