package scraper

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"

	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/otelstep/otelstep/pipeline"
)

// arenaPages is a run of pages for one target whose shapes change from
// scrape to scrape: families grow and shrink, series go stale and come back,
// exemplars and explicit staleness markers come and go, so a reused chunk
// that kept anything of an earlier scrape shows in the output.
func arenaPages(t testing.TB) []struct {
	page []byte
	ct   string
} {
	gen := func(i int) []byte {
		var b strings.Builder
		for f := 0; f < 40; f++ {
			fmt.Fprintf(&b, "# TYPE fam_%d %s\n", f, []string{"counter", "gauge"}[f%2])
			for s := 0; s < (f+i)%6; s++ {
				v := fmt.Sprint(i*10 + s)
				if (f+s+i)%7 == 0 {
					v = "NaN"
				}
				fmt.Fprintf(&b, "fam_%d{s=\"%d\"} %s\n", f, s, v)
			}
		}
		// Histograms whose buckets come and go (their bounds change)
		// and whose sum is sometimes missing.
		for f := 0; f < 6; f++ {
			fmt.Fprintf(&b, "# TYPE hist_%d histogram\n", f)
			for s := 0; s < 1+(f+i)%3; s++ {
				cum := 0
				for k := 0; k < 1+(f+s+i)%4; k++ {
					cum += k + i
					fmt.Fprintf(&b, "hist_%d_bucket{s=\"%d\",le=\"%d\"} %d\n", f, s, 1<<k, cum)
				}
				fmt.Fprintf(&b, "hist_%d_bucket{s=\"%d\",le=\"+Inf\"} %d\n", f, s, cum+1)
				if (f+i)%3 != 0 {
					fmt.Fprintf(&b, "hist_%d_sum{s=\"%d\"} %d.5\n", f, s, cum)
				}
				fmt.Fprintf(&b, "hist_%d_count{s=\"%d\"} %d\n", f, s, cum+1)
			}
		}
		return []byte(b.String())
	}
	type pg = struct {
		page []byte
		ct   string
	}
	var out []pg
	for i := range 9 {
		out = append(out, pg{gen(i), ctText})
		switch i % 4 {
		case 0:
			out = append(out, pg{read(t, "openmetrics.om"), ctOM})
		case 1:
			out = append(out, pg{read(t, "node.txt"), ctText})
		case 2:
			out = append(out, pg{read(t, "edge.txt"), ctText})
		case 3:
			out = append(out, pg{read(t, "vllm.txt"), ctText}) // histograms
		}
	}
	return out
}

func marshalAll(t testing.TB, rms []*metricspb.ResourceMetrics) []byte {
	var all []byte
	for _, rm := range rms {
		b, err := proto.Marshal(rm)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	return all
}

// sameScrape reports whether a and b hold the same resources, up to the
// order of metrics and points (canonical: staleness markers come in map
// order).
func sameScrape(a, b []*metricspb.ResourceMetrics) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !proto.Equal(canonical(a[i]), canonical(b[i])) {
			return false
		}
	}
	return true
}

// A converter whose scrapes' memory is recycled as soon as each batch is
// released writes exactly what one without recycling writes, and a batch
// still held is never touched by the scrapes after it.
func TestLeasedScrapesMatch(t *testing.T) {
	pages := arenaPages(t)
	plain := NewConverter(fixtureTarget("arena"))
	leased := NewConverter(fixtureTarget("arena"))
	type held struct {
		i      int
		rms    []*metricspb.ResourceMetrics
		leases []*pipeline.Lease
		want   []byte
	}
	var hold []held
	ts := time.Unix(1_800_000_000, 0)
	for round := range 3 {
		for i, p := range pages {
			at := ts.Add(time.Duration(round*len(pages)+i) * time.Second)
			want, err := plain.ConvertAll(p.page, p.ct, at, time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			rms, leases, err := leased.ConvertLeased(p.page, p.ct, at, time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			if len(leases) == 0 {
				t.Fatal("no lease for a scrape")
			}
			got := marshalAll(t, rms)
			if !sameScrape(want, rms) {
				t.Fatalf("round %d page %d: recycled scrape differs from a fresh one", round, i)
			}
			b := &pipeline.Batch{Signal: pipeline.Metrics, Metrics: rms, Leases: leases}
			if i%4 == 1 {
				hold = append(hold, held{i, rms, leases, got})
				continue
			}
			b.Retain(1) // two sinks
			b.Release()
			b.Release()
		}
		for _, h := range hold {
			if !bytes.Equal(marshalAll(t, h.rms), h.want) {
				t.Fatalf("round %d: held scrape %d changed after later scrapes", round, h.i)
			}
		}
	}
	for _, h := range hold {
		(&pipeline.Batch{Leases: h.leases}).Release()
	}
}

// A failed scrape gives its memory back at once, and the scrape after it is
// whole; so are the staleness markers of a target that went down.
func TestLeasedScrapeAfterParseError(t *testing.T) {
	c := NewConverter(fixtureTarget("arena"))
	plain := NewConverter(fixtureTarget("arena"))
	node := read(t, "node.txt")
	broken := append(append([]byte(nil), node[:len(node)/2]...), "\nnot a { valid line\n"...)
	ts := time.Unix(1_800_000_000, 0)
	for i, p := range [][]byte{node, broken, node, nil, node, broken, nil, node} {
		at := ts.Add(time.Duration(i) * time.Second)
		if p == nil { // the target is down: staleness markers from an arena too
			want := plain.DownAll(at, time.Millisecond)
			rms, leases := c.DownLeased(at, time.Millisecond)
			if len(leases) != 1 || !sameScrape(want, rms) {
				t.Fatalf("scrape %d (down): differs from a converter without leases", i)
			}
			(&pipeline.Batch{Leases: leases}).Release()
			continue
		}
		want, werr := plain.ConvertAll(p, ctText, at, time.Millisecond)
		rms, leases, err := c.ConvertLeased(p, ctText, at, time.Millisecond)
		if (err == nil) != (werr == nil) {
			t.Fatalf("scrape %d: error %v, without leases %v", i, err, werr)
		}
		if err != nil {
			if rms != nil || leases != nil {
				t.Fatalf("scrape %d: a failed scrape returned resources or leases", i)
			}
			continue
		}
		if !sameScrape(want, rms) {
			t.Fatalf("scrape %d: differs from a converter without leases", i)
		}
		(&pipeline.Batch{Leases: leases}).Release()
	}
}

// A small target's scrape takes little memory from the pools: the batch
// processor holds a scrape's chunks, their unused ends included, until its
// batch is full, and at 84 targets that is dozens of scrapes at once.
func TestSmallScrapeTakesSmallChunks(t *testing.T) {
	pools := newSlabPools()
	c := newConverter(fixtureTarget("small"), newAttrSets(nil), pools, newMetaLines())
	page := []byte(`# TYPE reqs counter
reqs_total{code="200"} 7
# TYPE temp gauge
temp 21.5
# TYPE lat histogram
lat_bucket{le="0.1"} 1
lat_bucket{le="+Inf"} 2
lat_sum 0.3
lat_count 2
# TYPE rpc summary
rpc{quantile="0.5"} 0.2
rpc_sum 1
rpc_count 4
`)
	_, leases, err := c.ConvertLeased(page, ctText, time.Unix(1_800_000_000, 0), time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer (&pipeline.Batch{Leases: leases}).Release()
	total := chunkBytes(&pools.nums) + chunkBytes(&pools.hpts) + chunkBytes(&pools.counts) + chunkBytes(&pools.ptrs) +
		chunkBytes(&pools.sums) + chunkBytes(&pools.gauges) + chunkBytes(&pools.hists) + chunkBytes(&pools.summaries)
	if total == 0 {
		t.Fatal("the scrape took no chunks: the pools are not counted")
	}
	if total > 32<<10 {
		t.Errorf("a scrape of 4 families took %d bytes of chunks, want at most 32 KiB", total)
	}
}

// chunkBytes is the memory of the chunks p made.
func chunkBytes[T any](p *chunkPool[T]) int {
	var x T
	return int(p.made.Load()) * p.size * int(unsafe.Sizeof(x))
}
