package scraper

import "sync"

// seriesKeys interns the raw series keys of one job's targets. The targets
// of a job run the same exporter, so their pages mostly hold the same
// series bytes: on the 84-target mix all of them, and on a cluster the
// nodes' CPUs, devices and modes repeat. Shared, the keys cost one target's
// memory instead of one copy a target, and they stay in page order, which
// the line cache's comparisons rely on (strchunks.go): a key is made in
// the chunks of the first target to see it.
//
// A table that does not pay for itself turns itself off. Each entry costs
// a map slot beside the key it shares, so a job whose targets serve
// different series (the bench's --distinct pages, say) would pay for the
// table and share nothing: once a scrape of one target makes new series
// with fewer than half of them found while the table already held another
// target's, the table is dropped and the job's converters copy their keys
// as a converter of their own does.
//
// Only a new series looks a key up; the lock is the table's own.
type seriesKeys struct {
	mu   sync.Mutex
	keys map[string]string // nil once off
}

// keyCounts are one scrape's lookups in a seriesKeys.
type keyCounts struct {
	hits, misses int
	before       int  // keys in the table at the scrape's first lookup
	started      bool // a lookup was made
}

func newSeriesKeys() *seriesKeys { return &seriesKeys{keys: map[string]string{}} }

// str returns a string equal to b: the table's, else a new one made in
// local and entered. A nil table makes every key in local.
func (t *seriesKeys) str(b []byte, local *strChunks, n *keyCounts) string {
	if t == nil {
		return local.str(b)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.keys == nil {
		return local.str(b)
	}
	if !n.started {
		n.started, n.before = true, len(t.keys)
	}
	if s, ok := t.keys[string(b)]; ok {
		n.hits++
		return s
	}
	n.misses++
	s := local.str(b)
	t.keys[s] = s
	return s
}

// judge ends a scrape's lookups: it turns the table off if they found
// fewer than half of the scrape's new series while it held another
// target's keys, and resets n.
func (t *seriesKeys) judge(n *keyCounts) {
	if t == nil || !n.started {
		return
	}
	if n.before > 0 && n.hits < n.misses {
		t.mu.Lock()
		t.keys = nil
		t.mu.Unlock()
	}
	*n = keyCounts{}
}

// on reports whether the table still shares keys.
func (t *seriesKeys) on() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.keys != nil
}
