package sink

import (
	"math/rand/v2"
	"time"
)

// Backoff paces the attempts to deliver one request, the HTTP sink's and
// replay's alike, as the collector's retry_on_failure does: the wait
// starts at InitialInterval and doubles up to MaxInterval, each wait
// randomised by ±50% so that senders refused together do not come back
// together; a server's Retry-After replaces the wait; and no attempt
// starts later than MaxElapsedTime after the first.
type Backoff struct {
	o        RetryOptions
	start    time.Time
	interval time.Duration
}

// Backoff starts pacing a request whose first attempt is now.
func (o RetryOptions) Backoff() Backoff {
	return Backoff{o: o, start: time.Now(), interval: o.InitialInterval}
}

// Next returns the wait before the next attempt after a failure that may
// be retried, whose answer asked for retryAfter (0: it did not say), or
// false when the next attempt would start past MaxElapsedTime.
func (b *Backoff) Next(retryAfter time.Duration) (time.Duration, bool) {
	delay := jitter(b.interval)
	if retryAfter > 0 {
		delay = retryAfter
	}
	if time.Since(b.start)+delay > b.o.MaxElapsedTime {
		return 0, false
	}
	b.interval = min(b.interval*2, b.o.MaxInterval)
	return delay, true
}

// Elapsed is the time since the first attempt.
func (b *Backoff) Elapsed() time.Duration { return time.Since(b.start) }

// jitter returns d randomised by ±50%.
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d+1)
}
