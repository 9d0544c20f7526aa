package scraper

import (
	"log/slog"
	"sync"
	"time"
)

// A target's health is the record of its last scrape (Manager.Targets) and
// what its failures are logged as. A target that stays down (a node
// exporter the job's config lists on every node, absent on some) must
// not cost a WARN line a scrape for the whole job: its first failed scrape
// is logged at WARN with the reason, then at most one line every
// DownLogEvery while it stays down, with the failed scrapes since the last
// line and the last error, and its recovery at INFO, with how long it was
// down and how many scrapes failed. up = 0 in the scraped metrics stays
// the record of every failed scrape.

// defaultDownLogEvery is how often a target that stays down is logged
// again, unless Options.DownLogEvery says otherwise.
const defaultDownLogEvery = 5 * time.Minute

// TargetStatus is one target's state after its last scrape, for the
// status document (Manager.Targets).
type TargetStatus struct {
	Job      string
	Instance string // the instance label (host:port unless relabeled)
	// URL is the scrape URL. A target's scrape holds no credentials (the
	// scrape configs take none), so it has none to hide.
	URL string
	// Scraped: the target has been scraped at least once; until then the
	// fields below are zero.
	Scraped bool
	Up      bool
	// LastScrape is when the last scrape started, LastDuration how long
	// it took.
	LastScrape   time.Time
	LastDuration time.Duration
	// LastError is why the last scrape failed ("" when it did not).
	LastError string
	// ConsecutiveFailures counts the failed scrapes since the last that
	// succeeded; DownSince is when the first of them started (zero while
	// up).
	ConsecutiveFailures int
	DownSince           time.Time
	// Samples is the last scrape's scrape_samples_scraped: the page's
	// sample lines (as far as a failed page was read).
	Samples int
}

// health is a target's TargetStatus and the state of its log lines. Its
// own lock, not the loop's: a status read must not wait for a scrape.
type health struct {
	mu sync.Mutex
	st TargetStatus
	// lastLine is when the target's down state was last logged, failedSince
	// the failed scrapes since then.
	lastLine    time.Time
	failedSince int
}

// scraped records a scrape that started at start and took d: err nil, or
// why it failed; samples its scrape_samples_scraped. It logs what the
// operator should see (see above), every at most every long.
func (h *health) scraped(log *slog.Logger, every time.Duration, start time.Time, d time.Duration, err error, samples int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := &h.st
	wasDown := st.Scraped && !st.Up
	st.Scraped, st.Up, st.LastScrape, st.LastDuration, st.Samples = true, err == nil, start, d, samples
	if err == nil {
		if wasDown {
			log.Info("scrape target up again", "job", st.Job, "target", st.URL,
				"down_for", start.Sub(st.DownSince).Round(time.Millisecond).String(), "failed_scrapes", st.ConsecutiveFailures)
		}
		st.LastError, st.ConsecutiveFailures, st.DownSince = "", 0, time.Time{}
		h.failedSince = 0
		return
	}
	st.LastError = err.Error()
	st.ConsecutiveFailures++
	now := start.Add(d)
	if !wasDown {
		st.DownSince = start
		h.lastLine, h.failedSince = now, 0
		log.Warn("scrape failed: target down", "job", st.Job, "target", st.URL, "error", err,
			"repeats_logged_every", every.String())
		return
	}
	h.failedSince++
	if now.Sub(h.lastLine) < every {
		return
	}
	log.Warn("scrape target still down", "job", st.Job, "target", st.URL,
		"down_for", now.Sub(st.DownSince).Round(time.Second).String(), "failed_scrapes_since_last_report", h.failedSince,
		"failed_scrapes", st.ConsecutiveFailures, "last_error", st.LastError)
	h.lastLine, h.failedSince = now, 0
}

// status is a copy of the target's status.
func (h *health) status() TargetStatus {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.st
}

// Targets is every target's status after its last scrape, in config order
// (the targets relabel_configs dropped left out). Safe to call at any
// time, from any goroutine; it does not wait for a scrape in flight.
func (m *Manager) Targets() []TargetStatus {
	out := make([]TargetStatus, len(m.loops))
	for i, l := range m.loops {
		out[i] = l.health.status()
	}
	return out
}
