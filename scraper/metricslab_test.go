package scraper

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// A scrape's metrics share chunks (metricSlab): what one scrape returned
// must read the same after later scrapes, whose families grow, shrink, go
// stale and come back, have carved their own from fresh chunks.
func TestScrapesKeepTheirMetrics(t *testing.T) {
	page := func(i int) []byte {
		var b strings.Builder
		// Family sizes change from scrape to scrape, so a family's points
		// outgrow the capacity its last scrape left it.
		for f := 0; f < 70; f++ {
			typ := []string{"counter", "gauge"}[f%2]
			fmt.Fprintf(&b, "# TYPE fam_%d %s\n", f, typ)
			for s := 0; s < (f+i)%5; s++ {
				fmt.Fprintf(&b, "fam_%d{s=\"%d\"} %d\n", f, s, i*10+s)
			}
		}
		b.WriteString("# TYPE h histogram\n")
		for _, le := range []string{"1", "+Inf"} {
			fmt.Fprintf(&b, "h_bucket{le=%q} %d\n", le, i)
		}
		fmt.Fprintf(&b, "h_sum %d\nh_count %d\n", i, i)
		return []byte(b.String())
	}
	c := NewConverter(fixtureTarget("slab"))
	type kept struct {
		rms  []*metricspb.ResourceMetrics
		want [][]byte
	}
	var all []kept
	ts := time.Unix(1_800_000_000, 0)
	for i := 0; i < 12; i++ {
		rms, err := c.ConvertAll(page(i), ctText, ts.Add(time.Duration(i)*time.Second), time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		k := kept{rms: rms}
		for _, rm := range rms {
			b, err := proto.Marshal(rm)
			if err != nil {
				t.Fatal(err)
			}
			k.want = append(k.want, b)
		}
		all = append(all, k)
		for n, k := range all {
			for j, rm := range k.rms {
				b, _ := proto.Marshal(rm)
				if string(b) != string(k.want[j]) {
					t.Fatalf("after scrape %d, scrape %d's resource %d changed", i, n, j)
				}
			}
		}
	}
	// Appending to one family's points moves them, leaving the next
	// family's alone.
	var ms metricSlab
	ms.begin(newSlabPools().newArena())
	a, b := ms.numPoints(2), ms.numPoints(2)
	b = append(b, &metricspb.NumberDataPoint{TimeUnixNano: 2})
	a = append(a, &metricspb.NumberDataPoint{TimeUnixNano: 1}, &metricspb.NumberDataPoint{}, &metricspb.NumberDataPoint{})
	if b[0].TimeUnixNano != 2 || a[0].TimeUnixNano != 1 {
		t.Fatalf("carved slices overlap: a[0] %d, b[0] %d", a[0].TimeUnixNano, b[0].TimeUnixNano)
	}
}
