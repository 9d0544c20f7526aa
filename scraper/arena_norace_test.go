//go:build !race

package scraper

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/otelstep/otelstep/pipeline"
)

// Releasing a scrape's batch is what makes the next scrapes allocate little:
// on the node page, a steady scrape whose lease is released allocates less
// than a third of the bytes of one whose memory goes to the collector. (The
// race detector makes sync.Pool drop items at random, hence the build tag.)
func TestReleasedScrapesReuseMemory(t *testing.T) {
	if pipeline.PoisonReleased {
		t.Skip("a poison build drops released memory rather than reuse it")
	}
	node := read(t, "node.txt")
	bytesPerScrape := func(release bool) uint64 {
		c := NewConverter(fixtureTarget("arena"))
		ts := time.Unix(1_800_000_000, 0)
		scrape := func(i int) {
			_, leases, err := c.ConvertLeased(node, ctText, ts.Add(time.Duration(i)*time.Second), time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			if release {
				(&pipeline.Batch{Leases: leases}).Release()
			}
		}
		for i := range 3 {
			scrape(i) // the series are new: their state is allocated once
		}
		var a, b runtime.MemStats
		runtime.ReadMemStats(&a)
		const n = 50
		for i := range n {
			scrape(3 + i)
		}
		runtime.ReadMemStats(&b)
		return (b.TotalAlloc - a.TotalAlloc) / n
	}
	kept, released := bytesPerScrape(false), bytesPerScrape(true)
	t.Logf("bytes allocated per node scrape: %d kept, %d released", kept, released)
	if released*3 > kept {
		t.Fatalf("released scrapes allocate %d bytes each, kept ones %d: the chunks are not reused", released, kept)
	}
}

// The histogram builders are lent for a scrape from the Manager's pool: a
// job's targets converted one after another need one page's worth, and no
// series keeps one between scrapes.
func TestHistogramBuildersLent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // a GC would empty the pool
	// One P, as otelstep runs: a sync.Pool keeps what was put last in the
	// putting P's private slot, which a goroutine moved to another P in
	// between (a loaded machine) cannot take, and then a builder is made.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	page := read(t, "vllm.txt")
	sets, pools, metas := newAttrSets(nil), newSlabPools(), newMetaLines()
	var cs []*Converter
	for i := range 3 {
		cs = append(cs, newConverter(fixtureTarget(fmt.Sprint("vllm", i)), sets, pools, metas))
	}
	hists := 0
	ts := time.Unix(1_800_000_000, 0)
	for s := range 3 {
		for _, c := range cs {
			rms, leases, err := c.ConvertLeased(page, ctText, ts.Add(time.Duration(s)*time.Second), time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			if s == 0 && c == cs[0] {
				for _, sm := range rms[0].ScopeMetrics {
					for _, m := range sm.Metrics {
						if h := m.GetHistogram(); h != nil {
							hists += len(h.DataPoints)
						}
					}
				}
			}
			(&pipeline.Batch{Leases: leases}).Release()
		}
	}
	if hists == 0 {
		t.Fatal("the page has no histogram points")
	}
	if made := pools.buildersMade.Load(); made != int64(hists) {
		t.Fatalf("%d builders made for 3 targets of %d histograms each, 3 scrapes: want %d", made, hists, hists)
	}
	for _, c := range cs {
		for _, se := range c.index.all {
			if ps := se.ps; ps != nil && ps.shape != nil && ps.shape.hist != nil {
				t.Fatal("a series holds a histogram builder between scrapes")
			}
		}
	}
}

// A steady scrape whose lease is released allocates little beyond the
// arena's chunks: the synthetic series, the page's metric slice and the
// target's resource come from the arena too, and what they say is each
// scrape's own, not a recycled one's.
func TestSteadyScrapeAllocations(t *testing.T) {
	if pipeline.PoisonReleased {
		t.Skip("a poison build drops released memory rather than reuse it")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // a GC would empty the pools
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))  // see TestHistogramBuildersLent
	page := read(t, "vllm.txt")
	c := NewConverter(fixtureTarget("steady"))
	ts := time.Unix(1_800_000_000, 0)
	i := 0
	scrape := func() {
		i++
		dur := time.Duration(i) * time.Millisecond
		rms, leases, err := c.ConvertLeased(page, ctText, ts.Add(time.Duration(i)*time.Second), dur)
		if err != nil {
			t.Fatal(err)
		}
		if i%16 == 0 { // checked outside the counted runs' hot path only now and then
			got := map[string]float64{}
			for _, m := range rms[0].ScopeMetrics[0].Metrics {
				if g := m.GetGauge(); g != nil && len(g.DataPoints) == 1 {
					got[m.Name] = g.DataPoints[0].GetAsDouble()
				}
			}
			if got["up"] != 1 || got["scrape_duration_seconds"] != dur.Seconds() || got["scrape_samples_scraped"] == 0 {
				t.Errorf("scrape %d: up %v, scrape_duration_seconds %v (want %v), scrape_samples_scraped %v",
					i, got["up"], got["scrape_duration_seconds"], dur.Seconds(), got["scrape_samples_scraped"])
			}
		}
		(&pipeline.Batch{Leases: leases}).Release()
	}
	for range 3 {
		scrape() // the series are new: their state is allocated once
	}
	allocs := testing.AllocsPerRun(64, scrape)
	t.Logf("allocations per steady vllm scrape: %.1f", allocs)
	if allocs > 18 {
		t.Errorf("%.1f allocations per steady vllm scrape, want at most 18 (53 with the synthetic series and the resource on the heap)", allocs)
	}
}
