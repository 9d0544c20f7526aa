package sink

import (
	"testing"
	"time"
)

// The waits double from InitialInterval to MaxInterval, each within ±50%
// of its interval; a Retry-After replaces one; and none is given that
// would start an attempt past MaxElapsedTime.
func TestBackoff(t *testing.T) {
	o := RetryOptions{Enabled: true, InitialInterval: time.Second, MaxInterval: 8 * time.Second, MaxElapsedTime: time.Hour}
	bo := o.Backoff()
	for i, want := range []time.Duration{1, 2, 4, 8, 8, 8} {
		want *= time.Second
		d, ok := bo.Next(0)
		if !ok || d < want/2 || d > want+want/2 {
			t.Fatalf("wait %d: %v, %v; want %v ±50%%", i, d, ok, want)
		}
	}
	if d, ok := bo.Next(3 * time.Minute); !ok || d != 3*time.Minute {
		t.Fatalf("with Retry-After 3m: %v, %v", d, ok)
	}
	if d, ok := bo.Next(2 * time.Hour); ok {
		t.Fatalf("a wait past MaxElapsedTime was given: %v", d)
	}
}
