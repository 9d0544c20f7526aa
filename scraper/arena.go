package scraper

import (
	"github.com/otelstep/otelstep/internal/pool"
	"math"
	"sync/atomic"

	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/otelstep/otelstep/pipeline"
)

// Arenas: a scrape's memory, lent to the batch and taken back.
//
// A scrape's number points, its metrics and their point slices are carved
// from fixed-size chunks (slab, metricSlab). They all die together, once
// both sinks have encoded the batch, and were most of the bytes a scrape
// allocated: left to the garbage collector, they made its marking about a
// seventh of the scrape path's CPU. The chunks a scrape took are its arena;
// the arena's lease travels with the batch (pipeline.Lease), and the last
// sink to let go of the batch puts the chunks back in the pools, cleared.
//
// The pools are sync.Pools, shared by a Manager's converters: a chunk goes
// to whichever scrape runs next, so what the pools keep is about one burst
// of scrapes, and a garbage collection empties what goes unused (after a
// backend outage, say, when the exporter's queue held many scrapes).
//
// What must not be carved from an arena: anything the Converter keeps past
// the scrape. A histogram's bounds are the series' (they shape the next
// staleness marker and are reused while they do not change), and summary
// points are kept whole (shapeState.lastSum), so those are allocated as
// before; pointSeries.num and histBuilder.pt are reset before any read in a
// later scrape.

// chunk is a fixed-capacity run of T; len is what a scrape used.
type chunk[T any] struct{ s []T }

// chunkPool hands out chunks of size elements.
type chunkPool[T any] struct {
	p    pool.Pool[chunk[T]]
	size int
	// made counts the chunks ever made (tests).
	made atomic.Int64
}

func (p *chunkPool[T]) get() *chunk[T] {
	c := p.p.Get()
	if c.s == nil { // new
		p.made.Add(1)
		c.s = make([]T, 0, p.size)
	}
	return c
}

// put clears c (nothing it held stays reachable) and pools it. In a poison
// build it poisons c's elements and drops c instead (see pipeline.Lease):
// whoever still reads them reads the poison.
func (p *chunkPool[T]) put(c *chunk[T]) {
	if pipeline.PoisonReleased {
		poison(c.s)
		return
	}
	clear(c.s)
	c.s = c.s[:0]
	p.p.Put(c)
}

// numPoint is a number point with its double value, allocated together.
type numPoint struct {
	p metricspb.NumberDataPoint
	d metricspb.NumberDataPoint_AsDouble
}

// histPoint is a histogram point with its sum, allocated together.
type histPoint struct {
	p   metricspb.HistogramDataPoint
	sum float64
}

// Chunk sizes. A scrape's last chunk of each kind is part used, and the
// batch processor holds a scrape's arena, that unused part included, until
// it has 8192 points: tens of scrapes of a large job, whose chunks the
// pools then keep. So a chunk is a few KiB (under 9 KiB of number points, 2
// of metrics), which keeps those part-used tails a small share of the
// chunks (docs/decisions.md). The slices of counts and pointers are carved
// whole, so theirs stay large: a smaller chunk gives more points their own
// slice.
const (
	numChunk    = 64   // number points a chunk (8.5 KiB)
	histChunk   = 16   // histogram points a chunk (3.3 KiB)
	countChunk  = 1024 // bucket counts a chunk: a point of more gets its own slice
	ptrChunk    = 512  // point (and metric) pointers a chunk: a family (a page) of more gets its own slice
	metricChunk = 8    // metrics of a kind a chunk (1.6-1.7 KiB)
)

// slabPools are the free chunks and arenas of a Manager's converters.
type slabPools struct {
	nums      chunkPool[numPoint]
	hpts      chunkPool[histPoint]
	counts    chunkPool[uint64]
	ptrs      chunkPool[*metricspb.NumberDataPoint]
	mptrs     chunkPool[*metricspb.Metric]
	res       chunkPool[resMetrics]
	sums      chunkPool[sumMetric]
	gauges    chunkPool[gaugeMetric]
	hists     chunkPool[histMetric]
	summaries chunkPool[summaryMetric]
	arenas    pool.Pool[arena]
	builders  pool.Pool[histBuilder] // lent for a scrape
	// buildersMade counts the builders ever made (tests).
	buildersMade atomic.Int64
}

// builder returns an empty histogram builder, its buckets' array kept.
func (p *slabPools) builder() *histBuilder {
	return p.builders.Get()
}

// putBuilder clears h (its point is the batch's) and pools it.
func (p *slabPools) putBuilder(h *histBuilder) {
	*h = histBuilder{buckets: h.buckets[:0]}
	p.builders.Put(h)
}

func newSlabPools() *slabPools {
	p := &slabPools{}
	p.builders.New = func() *histBuilder {
		p.buildersMade.Add(1)
		return new(histBuilder)
	}
	p.arenas.New = func() *arena {
		a := &arena{pools: p}
		a.recycleFn = a.recycle
		a.leases[0] = &a.lease
		return a
	}
	p.nums.size, p.hpts.size, p.counts.size, p.ptrs.size = numChunk, histChunk, countChunk, ptrChunk
	p.mptrs.size, p.res.size = ptrChunk, 1 // one target resource a scrape
	p.sums.size, p.gauges.size, p.hists.size, p.summaries.size = metricChunk, metricChunk, metricChunk, metricChunk
	return p
}

// arena is the chunks one scrape took.
type arena struct {
	pools     *slabPools
	lease     pipeline.Lease
	leases    [1]*pipeline.Lease // the batch's Leases, without an allocation
	recycleFn func()             // a.recycle, made once per arena
	nums      []*chunk[numPoint]
	hpts      []*chunk[histPoint]
	counts    []*chunk[uint64]
	ptrs      []*chunk[*metricspb.NumberDataPoint]
	mptrs     []*chunk[*metricspb.Metric]
	res       []*chunk[resMetrics]
	sums      []*chunk[sumMetric]
	gauges    []*chunk[gaugeMetric]
	hists     []*chunk[histMetric]
	summaries []*chunk[summaryMetric]
}

// newArena returns an empty arena whose lease holds one reference.
func (p *slabPools) newArena() *arena {
	a := p.arenas.Get()
	a.lease.Reset(a.recycleFn)
	return a
}

// recycle returns every chunk of a, cleared, and a itself to the pools. It
// runs when the last holder of the scrape's batch lets go (or when the
// scrape failed and nothing was sent).
func (a *arena) recycle() {
	p := a.pools
	a.nums = putAll(&p.nums, a.nums)
	a.hpts = putAll(&p.hpts, a.hpts)
	a.counts = putAll(&p.counts, a.counts)
	a.ptrs = putAll(&p.ptrs, a.ptrs)
	a.mptrs = putAll(&p.mptrs, a.mptrs)
	a.res = putAll(&p.res, a.res)
	a.sums = putAll(&p.sums, a.sums)
	a.gauges = putAll(&p.gauges, a.gauges)
	a.hists = putAll(&p.hists, a.hists)
	a.summaries = putAll(&p.summaries, a.summaries)
	if pipeline.PoisonReleased {
		return // its lease stays released, for Batch.CheckLive to see
	}
	p.arenas.Put(a)
}

func putAll[T any](p *chunkPool[T], cs []*chunk[T]) []*chunk[T] {
	for i, c := range cs {
		p.put(c)
		cs[i] = nil
	}
	return cs[:0]
}

// poison overwrites what a released chunk held with pipeline's poison
// patterns: numbers and times poisoned, names and units poisoned strings,
// pointers nil (a poisoned pointer would crash the garbage collector, not
// the reader). What a pointer pointed at is itself in a chunk, poisoned.
func poison[T any](s []T) {
	const name = "\xdb\xdbreleased"
	nan := math.Float64frombits(pipeline.PoisonFloat64Bits)
	switch v := any(s).(type) {
	case []numPoint:
		for i := range v {
			v[i] = numPoint{}
			v[i].p.TimeUnixNano, v[i].p.StartTimeUnixNano = pipeline.PoisonUint64, pipeline.PoisonUint64
			v[i].d.AsDouble = nan
			v[i].p.Value = &v[i].d
		}
	case []histPoint:
		for i := range v {
			v[i] = histPoint{sum: nan}
			v[i].p.TimeUnixNano, v[i].p.StartTimeUnixNano = pipeline.PoisonUint64, pipeline.PoisonUint64
			v[i].p.Count = pipeline.PoisonUint64
			v[i].p.Sum = &v[i].sum
		}
	case []uint64:
		for i := range v {
			v[i] = pipeline.PoisonUint64
		}
	case []resMetrics:
		for i := range v {
			v[i] = resMetrics{}
			v[i].rm.SchemaUrl = name
		}
	case []sumMetric:
		for i := range v {
			v[i] = sumMetric{}
			v[i].m.Name, v[i].m.Unit = name, name
		}
	case []gaugeMetric:
		for i := range v {
			v[i] = gaugeMetric{}
			v[i].m.Name, v[i].m.Unit = name, name
		}
	case []histMetric:
		for i := range v {
			v[i] = histMetric{}
			v[i].m.Name, v[i].m.Unit = name, name
		}
	case []summaryMetric:
		for i := range v {
			v[i] = summaryMetric{}
			v[i].m.Name, v[i].m.Unit = name, name
		}
	default: // pointers
		clear(s)
	}
}

// next returns the next element of *cur, taking a fresh chunk from p (and
// recording it in *taken) when *cur is full.
func next[T any](cur **chunk[T], p *chunkPool[T], taken *[]*chunk[T]) *T {
	c := *cur
	if c == nil || len(c.s) == cap(c.s) {
		c = p.get()
		*taken = append(*taken, c)
		*cur = c
	}
	c.s = c.s[:len(c.s)+1]
	return &c.s[len(c.s)-1]
}

// carve returns a slice of n elements with capacity exactly n from *cur,
// taking a fresh chunk from p (recorded in *taken) when *cur has too little
// room; more than a chunk's worth gets an array of its own.
func carve[T any](cur **chunk[T], p *chunkPool[T], taken *[]*chunk[T], n int) []T {
	if n > p.size {
		return make([]T, n)
	}
	c := *cur
	if c == nil || cap(c.s)-len(c.s) < n {
		c = p.get()
		*taken = append(*taken, c)
		*cur = c
	}
	o := len(c.s)
	c.s = c.s[:o+n]
	return c.s[o : o+n : o+n]
}
