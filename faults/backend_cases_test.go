package faults

import (
	"fmt"
	"testing"
)

// fastRetry makes the exporter retry within a second, so that a case's
// backend outage is seen through quickly.
const fastRetry = "    retry_on_failure:\n      initial_interval: 50ms\n      max_interval: 500ms\n      max_elapsed_time: 0s\n"

// The backend is down (connection refused) while spans are taken, then
// comes back: everything answered 200 reaches it and the JSONL.
func TestBackendDownThenUp(t *testing.T) {
	be := NewBackend(t)
	be.Set(Down)
	n := configure(t, Setup{Backend: be.URL(), Exporter: fastRetry})
	p := n.start(t)
	l := newLedger()
	exp := httpExporter(t, n.HTTP)
	requests := size(20, 500)
	for i := range requests {
		if err := l.export(exp, fmt.Sprintf("down%d", i), 10); err != nil {
			t.Errorf("export while the backend is down: %v", err)
		}
	}
	be.Set(Up)
	answered := l.Answered()
	waitFor(t, "everything answered 200 at the backend", func() bool { return be.Got().Missing(answered) == 0 })
	e := p.Stop(t)
	figure := checkExit(t, p, e)
	lostJSONL := n.jsonl(t).Missing(answered)
	lostBackend := be.Got().Missing(answered)
	n.checkNoToken(t, p)
	report(t, fmt.Sprintf("%d spans answered 200 while down; backend has %d, JSONL misses %d; %s",
		answered.Total(), answered.Total()-lostBackend, lostJSONL, figure), lostJSONL+lostBackend)
}
