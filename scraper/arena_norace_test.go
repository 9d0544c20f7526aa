//go:build !race

package scraper

import (
	"runtime"
	"testing"
	"time"

	"github.com/otelstep/otelstep/pipeline"
)

// Releasing a scrape's batch is what makes the next scrapes allocate little:
// on the node page, a steady scrape whose lease is released allocates less
// than a third of the bytes of one whose memory goes to the collector. (The
// race detector makes sync.Pool drop items at random, hence the build tag.)
func TestReleasedScrapesReuseMemory(t *testing.T) {
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
