package bench

import (
	"context"
	"math"
	"sync"
	"time"
)

// maxLag is how late the schedule lets a request be sent (pacer).
const maxLag = time.Second

// pacer is --rate's schedule, open loop: request k (from 0) is due at
// start + k/rate, however long the answers take. A sender that is free
// takes the next request not yet taken and sends it when it is due: at
// once if it is already late, so that slow answers delay requests but do
// not lose them, and never before, so that the load never runs ahead of
// the schedule. Whoever answers, the same requests fall due in the same
// window: that is the equal offered load the comparison needs.
//
// A request more than maxLag late when taken is skipped (counted in
// skipped), and so are the ones before it: a receiver that far behind is
// not keeping up, and sending all it missed at once would be a burst, not
// the paced load. The report shows it as fewer sent than offered.
//
// With rate 0 every request is due at start: as fast as they are taken.
type pacer struct {
	start time.Time
	rate  float64 // requests per second

	mu      sync.Mutex
	next    int64 // the first request not yet taken
	skipped int64
}

func newPacer(start time.Time, rate float64) *pacer {
	return &pacer{start: start, rate: max(rate, 0)}
}

// due is when request k is due.
func (p *pacer) due(k int64) time.Time {
	if p.rate == 0 {
		return p.start
	}
	return p.start.Add(time.Duration(float64(k) / p.rate * float64(time.Second)))
}

// dueBefore is how many requests are due before t (with rate 0: none, the
// count is not bounded).
func (p *pacer) dueBefore(t time.Time) int64 {
	d := t.Sub(p.start)
	if p.rate == 0 || d <= 0 {
		return 0
	}
	return int64(math.Ceil(d.Seconds() * p.rate))
}

// take takes the next request at now, skipping those more than maxLag
// late, and returns its index and when it is due.
func (p *pacer) take(now time.Time) (int64, time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if first := p.dueBefore(now.Add(-maxLag)); first > p.next {
		p.skipped += first - p.next
		p.next = first
	}
	k := p.next
	p.next++
	return k, p.due(k)
}

// wait takes the next request and returns its index once it is due, or
// ctx's error if ctx ends first (the request taken is then not sent).
func (p *pacer) wait(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	k, due := p.take(time.Now())
	if d := time.Until(due); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	return k, nil
}

// skippedCount is how many requests were skipped as more than maxLag late.
func (p *pacer) skippedCount() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.skipped
}
