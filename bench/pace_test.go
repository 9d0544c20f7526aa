package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// paced runs workers senders on p, as otlpOne's do, each sending with send
// the requests p gives it, until ctx ends; it records when each request
// was sent. Call wait, once ctx ended, before reading sent.
type paced struct {
	mu   sync.Mutex
	sent map[int64]time.Time
	wg   sync.WaitGroup
}

func runPaced(ctx context.Context, t *testing.T, p *pacer, workers int, send func()) *paced {
	r := &paced{sent: map[int64]time.Time{}}
	for range workers {
		r.wg.Go(func() {
			for {
				k, err := p.wait(ctx)
				if err != nil {
					return
				}
				r.mu.Lock()
				if _, dup := r.sent[k]; dup {
					t.Errorf("request %d taken twice", k)
				}
				r.sent[k] = time.Now()
				r.mu.Unlock()
				send()
			}
		})
	}
	return r
}

// in is how many requests were sent before end, and checks that none was
// sent before it was due or more than maxLag after.
func (r *paced) in(t *testing.T, p *pacer, end time.Time) int64 {
	t.Helper()
	var n int64
	for k, at := range r.sent {
		if due := p.due(k); at.Before(due) || at.Sub(due) > maxLag {
			t.Errorf("request %d sent at %s, due at %s", k, at.Sub(p.start), due.Sub(p.start))
		}
		if at.Before(end) {
			n++
		}
	}
	return n
}

// A receiver that stops answering every so often for longer than the
// workers can cover: the requests that fall due meanwhile are sent late,
// as soon as a worker is free, and the window holds every request due in
// it (a rate.Limiter with a burst of one loses them).
func TestPacerSendsLateRequestsLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rate, workers, window = 200, 4, 10 * time.Second
		ctx, cancel := context.WithCancel(t.Context())
		start := time.Now()
		p := newPacer(start, rate)
		// No answer in the first 50ms of every 500ms (all four workers
		// are held), else one in a millisecond.
		r := runPaced(ctx, t, p, workers, func() {
			if phase := time.Since(start) % (500 * time.Millisecond); phase < 50*time.Millisecond {
				time.Sleep(50*time.Millisecond - phase)
			}
			time.Sleep(time.Millisecond)
		})
		time.Sleep(window)
		cancel()
		r.wg.Wait()
		end := start.Add(window)
		if n, due := r.in(t, p, end), p.dueBefore(end); n < due-1 || n > due+1 || due != rate*10 {
			t.Errorf("%d requests sent in %s, %d due: want %d ± 1", n, window, due, rate*10)
		}
		if s := p.skippedCount(); s != 0 {
			t.Errorf("%d requests skipped, none more than %s late", s, maxLag)
		}
	})
}

// A receiver that stops answering for longer than maxLag: the requests
// more than maxLag late when the worker is free again are skipped and
// counted, the rest sent late, and sent and skipped add up to those due.
func TestPacerSkipsWhatIsTooLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rate, window = 100, 6 * time.Second
		ctx, cancel := context.WithCancel(t.Context())
		start := time.Now()
		p := newPacer(start, rate)
		// One worker; the answer to the request sent at 1s takes 3s.
		r := runPaced(ctx, t, p, 1, func() {
			if time.Since(start) == time.Second {
				time.Sleep(3 * time.Second)
				return
			}
			time.Sleep(time.Millisecond)
		})
		time.Sleep(window)
		cancel()
		r.wg.Wait()
		end := start.Add(window)
		// At 4s, requests 101 to 299 (due before 3s) are more than maxLag
		// late; 300 on are sent, 300 exactly maxLag late.
		n, due, skipped := r.in(t, p, end), p.dueBefore(end), p.skippedCount()
		if skipped != 199 || n+skipped != due {
			t.Errorf("%d sent and %d skipped in %s, %d due: want 199 skipped, the rest sent", n, skipped, window, due)
		}
		if _, ok := r.sent[300]; !ok {
			t.Errorf("request 300, due 1s before the receiver answered again, was not sent")
		}
	})
}

// Without a rate every request is due at once: wait never waits.
func TestPacerWithoutRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPacer(time.Now(), 0)
		for want := range int64(1000) {
			if k, err := p.wait(t.Context()); k != want || err != nil {
				t.Fatalf("wait: %d, %v; want %d", k, err, want)
			}
		}
		if d := time.Since(p.start); d != 0 {
			t.Errorf("1000 requests took %s", d)
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := p.wait(ctx); err == nil {
			t.Errorf("wait after the context ended: no error")
		}
	})
}

// The report shows each collector's offered load beside what was sent and
// accepted, so that an unequal load shows in it; without --rate there is
// no offered load.
func TestOTLPReportShowsOfferedLoad(t *testing.T) {
	offered := 20000.0
	rep := OTLPReport{Signal: "traces", Protocol: "http", Batch: 100, Summary: Summary[OTLPResult, OTLPRatio]{Results: []OTLPResult{
		{Name: "otelstep", OfferedPerSecond: &offered, SentPerSecond: 19990, ItemsPerSecond: 19980},
		{Name: "otelcol", OfferedPerSecond: &offered, SentPerSecond: 18700, ItemsPerSecond: 18690, Skipped: 65},
		{Name: "unpaced", SentPerSecond: 51000, ItemsPerSecond: 50900},
	}}}
	var out bytes.Buffer
	WriteOTLP(&out, &rep)
	var row, skipped []string
	for _, line := range strings.Split(out.String(), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "spans offered / sent /s"); ok {
			row = strings.Fields(rest)
		}
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "requests skipped (over 1s late)"); ok {
			skipped = strings.Fields(rest)
		}
	}
	if want := strings.Fields("20000 / 19990 20000 / 18700 n/a / 51000"); strings.Join(row, " ") != strings.Join(want, " ") {
		t.Errorf("offered / sent row %q, want %q:\n%s", row, want, out.String())
	}
	if strings.Join(skipped, " ") != "0 65 0" {
		t.Errorf("skipped row %q, want 0 65 0:\n%s", skipped, out.String())
	}
	b, err := json.Marshal(rep.Results)
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	for i, want := range []any{20000.0, 20000.0, nil} {
		if got := rows[i]["offered_items_per_second"]; got != want {
			t.Errorf("%s: offered_items_per_second %v, want %v", rows[i]["name"], got, want)
		}
	}
	if rows[1]["sent_items_per_second"] != 18700.0 || rows[1]["skipped_requests"] != 65.0 {
		t.Errorf("otelcol's row: %v", rows[1])
	}
}
