package scraper

import "sync"

// seriesKeys interns the raw series keys of one job's targets. The targets
// of a job run the same exporter, so their pages mostly hold the same
// series bytes: on the 84-target mix all of them, and on a cluster the
// nodes' CPUs, devices and modes repeat. Shared, the keys cost one target's
// memory instead of one copy a target.
//
// A table that does not pay for itself turns itself off. Each entry costs
// a map slot beside the key it shares, so a job whose targets serve
// different series (the bench's --distinct pages, say) would pay for the
// table and share nothing. It counts its lookups, and from the second
// scrape that made new series on, if fewer were found than half as many as
// were not, it is dropped and the job's converters copy their keys as a
// converter of their own does. With k targets serving the same N series
// there are N misses and (k-1)N hits whatever the order; with disjoint
// pages, no hits; the table stays for targets that share more than about a
// third of their series. Counted over the table, not per scrape, so that
// two first scrapes converted at once, each finding half of its series
// made by the other, keep it.
//
// Only a new series looks a key up; the lock is the table's own.
type seriesKeys struct {
	mu           sync.Mutex
	keys         map[string]string // nil once off
	hits, misses int
	scrapes      int // scrapes that looked keys up
}

func newSeriesKeys() *seriesKeys { return &seriesKeys{keys: map[string]string{}} }

// str returns a string equal to b: the table's, else a new one, entered,
// and sets *looked. A nil table makes every key anew.
func (t *seriesKeys) str(b []byte, looked *bool) string {
	if t == nil {
		return string(b)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.keys == nil {
		return string(b)
	}
	*looked = true
	if s, ok := t.keys[string(b)]; ok {
		t.hits++
		return s
	}
	t.misses++
	s := string(b)
	t.keys[s] = s
	return s
}

// judge ends a scrape that looked keys up (*looked): from the table's
// second such scrape on, it turns the table off if it found fewer keys than
// half as many as it made. It clears *looked.
func (t *seriesKeys) judge(looked *bool) {
	if t == nil || !*looked {
		return
	}
	*looked = false
	t.mu.Lock()
	defer t.mu.Unlock()
	t.scrapes++
	if t.keys != nil && t.scrapes >= 2 && 2*t.hits < t.misses {
		t.keys = nil
	}
}

// forget empties the table (a table turned off stays off): a failed
// scrape's new series are forgotten by its converter, and their keys must
// not stay here for good, or a target failing with new series at every
// scrape would grow the table without bound. The converters keep the keys
// they hold; only sharing with series made later is lost.
func (t *seriesKeys) forget() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.keys != nil {
		t.keys = map[string]string{}
	}
}

// on reports whether the table still shares keys.
func (t *seriesKeys) on() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.keys != nil
}
