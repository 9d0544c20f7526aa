package scraper

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// A Manager's scrapes share one memory budget (Options.MemoryLimit), so
// that no page a target serves can take the process past a bound: not a
// million series, not an endless or decompressing page. Two things are
// charged to it, as they are taken, before they are allocated:
//
//   - the page buffer of each scrape reading or converting its page, by
//     its capacity, grown as the body comes (readBody), given back when
//     the page is converted;
//   - each series a target's converter keeps between scrapes, at
//     seriesCharge: its cache entry, its point series, its attributes and
//     line cache entry, and its point on the way to the sinks. Charged
//     when the series is first read, given back when it is forgotten (no
//     longer on the page, or the target's scrape failed).
//
// One target may hold at most three quarters of the budget (its page and
// its series), so that a target whose page does not fit leaves the others
// a quarter for their pages and new series while its scrape holds the
// rest. A scrape that cannot charge what it needs stops reading there and
// fails (up = 0, errBudget and the figures as its reason), and the series
// its target held are forgotten, as on any failed scrape: the budget is
// the other targets' again at once. The page buffers kept for the next
// scrapes are not charged: they are bounded by count and size (bodyList).

// DefaultMemoryLimit is the budget of a Manager's scrapes unless
// Options.MemoryLimit says otherwise: one target may hold a page of the
// default body size limit (64 MiB) read and converted, with tens of
// thousands of series, and the targets together over a hundred thousand
// series, many times a job's.
const DefaultMemoryLimit = 128 << 20

// seriesBase and seriesPerByte make a series' charge: seriesBase for what
// every series holds, and seriesPerByte per byte of its raw series
// (docs/decisions.md, "Scrape memory budget", has the figures they cover).
const (
	seriesBase    = 1024
	seriesPerByte = 2
)

// seriesCharge is what a series of raw series bytes key is charged.
func seriesCharge(keyLen int) int64 { return seriesBase + seriesPerByte*int64(keyLen) }

// errBudget is why a scrape stopped for the budget.
var errBudget = errors.New("scrape memory budget exhausted")

// memBudget is the bytes a Manager's scrapes hold; nil holds no bound.
type memBudget struct {
	limit     int64
	perTarget int64 // the most one target holds: three quarters of limit
	used      atomic.Int64
}

// newBudget returns a budget of limit bytes; nil (no bound) when limit < 0.
func newBudget(limit int64) *memBudget {
	if limit < 0 {
		return nil
	}
	if limit == 0 {
		limit = DefaultMemoryLimit
	}
	return &memBudget{limit: limit, perTarget: limit - limit/4}
}

// take charges n bytes more to a target that holds held, and reports
// whether they fit; when they do not, nothing is charged.
func (b *memBudget) take(n, held int64) bool {
	if b == nil || n <= 0 {
		return true
	}
	if held+n > b.perTarget {
		return false
	}
	if b.used.Add(n) > b.limit {
		b.used.Add(-n)
		return false
	}
	return true
}

// give returns n bytes taken.
func (b *memBudget) give(n int64) {
	if b != nil && n > 0 {
		b.used.Add(-n)
	}
}

// exhausted is the error of a scrape of a target that held held and
// could not take want bytes more for what (the page, a new series).
func (b *memBudget) exhausted(what string, want, held int64) error {
	if held+want > b.perTarget {
		return fmt.Errorf("%w: %s more for %s would make this target's page and series %s, more than the %s one target may hold (three quarters of memory_limit_mib)",
			errBudget, mib(want), what, mib(held+want), mib(b.perTarget))
	}
	return fmt.Errorf("%w: %s more for %s does not fit in the %s the scrapes may hold (%s held by pages being read and converted and series kept; memory_limit_mib)",
		errBudget, mib(want), what, mib(b.limit), mib(b.used.Load()))
}

// mib is n bytes in MiB, for the budget's errors.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// convertTimeout is the error of a page whose conversion passed the
// scrape's deadline.
func convertTimeout(d time.Duration) error {
	return fmt.Errorf("%w while converting the page", scrapeTimeout(d))
}
