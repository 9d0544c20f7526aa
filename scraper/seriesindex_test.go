package scraper

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// rawOf is c's raw series by key.
func rawOf(c *Converter) map[string]*seriesEntry {
	m := map[string]*seriesEntry{}
	for _, se := range c.index.all {
		m[se.key] = se
	}
	return m
}

// The maps that find series by key are there only while pages change: a
// target's first scrape drops them, one whose page changes gets them back
// and keeps them until indexIdle scrapes in a row leave them unused, and
// all the while it converts exactly as a converter that has them all along
// (one whose line cache is off looks every line up).
func TestSeriesIndexDroppedWhileSteady(t *testing.T) {
	page := func(i int) []byte {
		var b strings.Builder
		b.WriteString("# TYPE reqs counter\n")
		for s := range 5 {
			fmt.Fprintf(&b, "reqs_total{code=\"%d\"} %d\n", 200+s, i+s)
		}
		// A text-format _created gauge gives the counter its start time,
		// and the histogram's (prometheus_client writes both).
		b.WriteString("# TYPE reqs_created gauge\nreqs_created{code=\"200\"} 1.7e+09\n")
		b.WriteString("# TYPE lat_created gauge\nlat_created 1.6e+09\n")
		b.WriteString("# TYPE lat histogram\n")
		fmt.Fprintf(&b, "lat_bucket{le=\"1\"} %d\n", i)
		if i >= 8 { // a bucket more: a new raw series of a point series the converter has
			fmt.Fprintf(&b, "lat_bucket{le=\"5\"} %d\n", i)
		}
		fmt.Fprintf(&b, "lat_bucket{le=\"+Inf\"} %d\nlat_sum %d\nlat_count %d\n", i+1, i, i+1)
		if i >= 8 && i < 12 { // a new series, then gone again
			fmt.Fprintf(&b, "# TYPE extra gauge\nextra{n=\"%d\"} 1\n", i%2)
		}
		return []byte(b.String())
	}
	c := NewConverter(fixtureTarget("idx"))
	ref := NewConverter(fixtureTarget("idx"))
	ref.lc.off = true
	ts := time.Unix(1_800_000_000, 0)
	for i := range 16 {
		at := ts.Add(time.Duration(i) * time.Second)
		got, err := c.ConvertAll(page(i), ctText, at, time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ref.ConvertAll(page(i), ctText, at, time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("scrape %d: %d resources, want %d", i, len(got), len(want))
		}
		for k := range got {
			if !proto.Equal(canonical(got[k]), canonical(want[k])) {
				t.Fatalf("scrape %d: the output differs from a converter that looks every line up", i)
			}
		}
		if st := findPoints(got[0], "reqs_total").GetSum().GetDataPoints(); len(st) == 0 || !hasStart(st, 1_700_000_000e9) {
			t.Fatalf("scrape %d: no counter point with its _created gauge's start time", i)
		}
		if i > 0 && ref.index.byKey == nil {
			t.Fatalf("scrape %d: a converter without the line cache has no map", i)
		}
		built := c.index.byKey != nil
		switch {
		case i < 8 && built:
			t.Errorf("scrape %d: the maps are kept after a first scrape, on a steady page", i)
		case i >= 8 && i < 12 && !built:
			t.Errorf("scrape %d: the page changes, and the maps are not there", i)
		case i >= 12+indexIdle && built:
			t.Errorf("scrape %d: the maps are kept %d scrapes after the page settled", i, i-12)
		}
		if n := len(rawOf(c)); n != len(c.index.all) {
			t.Fatalf("scrape %d: two entries of one key", i)
		}
	}
}

func hasStart(pts []*metricspb.NumberDataPoint, ns uint64) bool {
	for _, p := range pts {
		if p.StartTimeUnixNano == ns {
			return true
		}
	}
	return false
}
