package scraper

// A Converter's raw series are found by their bytes, and its point series
// by family and attributes, only while reading lines the line cache did not
// take (linecache.go): on a page whose series are those of the last one,
// which is every scrape of a steady target, no line is looked up. The maps
// that find them cost several times a slice of the entries, a large share
// of the per-series memory (docs/decisions.md), so they are built when a
// scrape first needs one and dropped after indexIdle scrapes in a row that
// did not. A target's first scrape, every series of which is new, drops
// them at once: it looked up only to add, and the next scrape of the same
// page takes every line from the cache. Kept until then, every target's
// maps would be in the heap at once just after the start, the process's
// peak.
//
// Invariant: all holds every live raw entry; byKey and points, when built,
// hold the same entries as a map kept all along would, because a point
// series that survives eviction is the one of a raw entry that survives
// it (eviction drops the raw entries a scrape did not see and the point
// series it did not touch, and a scrape touches the point series of every
// raw entry it sees).

// indexIdle is how many scrapes in a row may leave the maps unused before
// they are dropped: a page that changes now and then rebuilds them at
// most once every indexIdle scrapes, at about the cost of reading its
// lines once.
const indexIdle = 3

// seriesIndex is a Converter's raw series, and the maps to find them and
// their point series by key when they are built.
type seriesIndex struct {
	all    []*seriesEntry
	byKey  map[string]*seriesEntry   // nil unless built
	points map[pointKey]*pointSeries // built with byKey
	used   bool                      // the maps were used this scrape
	first  bool                      // no scrape has ended since there were no series
	idle   int                       // scrapes in a row that did not use them
}

// beginScrape starts a scrape. One that begins with no series is a first
// scrape, and so is each after it until one ends (endScrape): a scrape
// cut short keeps its series for the next (Converter.restart).
func (x *seriesIndex) beginScrape() { x.first = x.first || len(x.all) == 0 }

// len is the number of raw series.
func (x *seriesIndex) len() int { return len(x.all) }

// build makes the maps if they are not there, and marks them used.
func (x *seriesIndex) build() {
	x.used = true
	if x.byKey != nil {
		return
	}
	x.byKey = make(map[string]*seriesEntry, len(x.all))
	x.points = make(map[pointKey]*pointSeries)
	for _, se := range x.all {
		x.byKey[se.key] = se
		if ps := se.ps; ps != nil {
			x.points[pointKey{ps.fam, ps.set}] = ps
		}
	}
}

// lookup returns the entry of raw series b, or nil.
func (x *seriesIndex) lookup(b []byte) *seriesEntry {
	x.build()
	return x.byKey[string(b)]
}

// add adds se, whose key no entry has.
func (x *seriesIndex) add(se *seriesEntry) {
	x.build()
	x.all = append(x.all, se)
	x.byKey[se.key] = se
}

// point returns the point series of pk, or nil.
func (x *seriesIndex) point(pk pointKey) *pointSeries {
	x.build()
	return x.points[pk]
}

// addPoint adds ps as pk's point series.
func (x *seriesIndex) addPoint(pk pointKey, ps *pointSeries) {
	x.build()
	x.points[pk] = ps
}

// dropPoint forgets pk's point series (its raw entries were resolved to
// another family).
func (x *seriesIndex) dropPoint(pk pointKey) {
	if x.points != nil {
		delete(x.points, pk)
	}
}

// evict drops the raw series scrape gen did not see, calling gone for each
// first (in the order they were added), and the point series it did not
// touch.
func (x *seriesIndex) evict(gen uint64, gone func(*seriesEntry)) {
	n := 0
	for _, se := range x.all {
		if se.gen == gen {
			x.all[n] = se
			n++
			continue
		}
		gone(se)
		if x.byKey != nil {
			delete(x.byKey, se.key)
		}
	}
	clear(x.all[n:])
	x.all = x.all[:n]
	for k, ps := range x.points {
		if ps.gen != gen {
			delete(x.points, k)
		}
	}
}

// endScrape ends a successful scrape: the maps go after indexIdle of them
// in a row that did not use them, or after a first scrape. The room append
// left past the entries goes too (as the line cache's, linecache.go).
func (x *seriesIndex) endScrape() {
	x.all = trimRoom(x.all)
	if x.first {
		x.byKey, x.points, x.used, x.idle, x.first = nil, nil, false, 0, false
		return
	}
	if x.used {
		x.used, x.idle = false, 0
		return
	}
	if x.byKey == nil {
		return
	}
	if x.idle++; x.idle >= indexIdle {
		x.byKey, x.points, x.idle = nil, nil, 0
	}
}

// reset forgets every series.
func (x *seriesIndex) reset() {
	clear(x.all)
	*x = seriesIndex{all: x.all[:0]}
}
