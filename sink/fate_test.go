package sink

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/otelstep/otelstep/pipeline"
)

// An outage as the operator reads it at the default level: one WARN when
// exports start failing, one when the backend turns to refusing (saying
// which variable holds the token), a summary every ReportEvery while it
// lasts, one INFO when delivery works again; no line per batch. Each batch
// ends in exactly one fate, and the fates sum to what the sink took.
func TestHTTPOutageLoggedOnceThenSummedThenRecovered(t *testing.T) {
	var mode atomic.Int32 // 0: 503, 1: 401, 2: 200
	var hits [3]atomic.Int32
	be := newBackend(t, func(_ int32, w http.ResponseWriter) bool {
		m := mode.Load()
		hits[m].Add(1)
		switch m {
		case 0:
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		case 1:
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte("invalid token k3y-v4lue " + strings.Repeat("x", 2000)))
			return true
		}
		return false
	})
	h, logs := newTestHTTP(t, be.URL(), HTTPOptions{TokenEnv: "OTEL_TOKEN", ReportEvery: 20 * time.Millisecond,
		Retry: RetryOptions{Enabled: true, InitialInterval: time.Millisecond, MaxInterval: time.Millisecond, MaxElapsedTime: 20 * time.Millisecond}})
	_ = h.Start(context.Background())
	defer h.Shutdown(ctxT(patience))
	count := func(s string) int { return strings.Count(logs.String(), s) }
	// lines counts the log lines holding every one of subs.
	lines := func(subs ...string) int {
		n := 0
		for _, l := range strings.Split(logs.String(), "\n") {
			all := true
			for _, s := range subs {
				all = all && strings.Contains(l, s)
			}
			if all {
				n++
			}
		}
		return n
	}

	// Down: retried until the retries run out, then left for the backfill.
	for i := range 3 {
		_ = h.Enqueue(context.Background(), metricsBatch("down"+string(rune('0'+i)), 2))
	}
	waitFor(t, patience, func() bool { return h.Stats().Fates[LeftBackendDown].Batches == 3 }, "3 batches left: backend down")
	if s := h.Status(); s.State != StateFailing || s.Since.IsZero() || !strings.Contains(s.LastError, "503") || s.LastStatus != 503 {
		t.Fatalf("status while down: %+v", s)
	}
	waitFor(t, patience, func() bool { return count("delivery still failing") >= 2 }, "the periodic summary")

	// Refusing: each batch posted once, left for replay.
	mode.Store(1)
	_ = h.Enqueue(context.Background(), metricsBatch("refused", 5))
	waitFor(t, patience, func() bool { return h.Stats().Fates[LeftRefused].Batches == 1 }, "1 batch refused")
	if n := hits[1].Load(); n != 1 {
		t.Fatalf("the refused batch was posted %d times, want 1", n)
	}
	if s := h.Status(); s.State != StateRefused || s.LastStatus != 401 || len(s.LastError) > 400 || strings.Contains(s.LastError, "k3y-v4lue") {
		t.Fatalf("status while refused: %+v", s)
	}

	// Up again.
	mode.Store(2)
	_ = h.Enqueue(context.Background(), metricsBatch("up", 7))
	waitFor(t, patience, func() bool { return h.Stats().SentBatches == 1 }, "delivered")
	if s := h.Status(); s.State != StateOK || s.LastStatus != 401 {
		t.Fatalf("status once up: %+v", s)
	}
	h.Shutdown(ctxT(patience))

	l := logs.String()
	for what, want := range map[string]int{
		"export failed; retrying":            1,
		"the backend now refuses the export": 1,
		"delivery works again":               1,
		"level=ERROR":                        0,
	} {
		if got := count(what); got != want {
			t.Errorf("%q logged %d times, want %d:\n%s", what, got, want, l)
		}
	}
	if n := lines("the backend now refuses the export", "level=WARN", "check=\"the ingest token: the environment variable OTEL_TOKEN"); n != 1 {
		t.Errorf("the refusal's WARN naming OTEL_TOKEN: %d lines, want 1:\n%s", n, l)
	}
	if strings.Contains(l, "k3y-v4lue") || strings.Contains(l, strings.Repeat("x", 300)) {
		t.Errorf("the backend's answer is not redacted and cut:\n%s", l)
	}
	st := h.Stats()
	want := [numFates]FateCount{Delivered: {1, 7}, LeftBackendDown: {3, 6}, LeftRefused: {1, 5}}
	if st.Fates != want || st.Accepted() != (FateCount{5, 18}) {
		t.Fatalf("fates %+v, want %+v", st.Fates, want)
	}
}

// The first summary of a run of failures comes a period after its WARN,
// however long after the exporter's start the run began (a ticker from the
// start would skip the tick less than a period after the WARN and log the
// first summary up to two periods after it), and then one every period.
func TestHTTPFirstSummaryAPeriodAfterTheWarn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const period = time.Minute
		h, logs := newTestHTTP(t, "http://127.0.0.1:1", HTTPOptions{ReportEvery: period})
		h.AddBacklog(func() Backlog {
			return Backlog{ToBackfill: Lines{Batches: 2, Bytes: 20}, ForReplay: Lines{Batches: 3, Bytes: 30}}
		})
		_ = h.Start(context.Background())
		defer h.Shutdown(context.Background())
		summaries := func() int { return strings.Count(logs.String(), "delivery still failing") }

		time.Sleep(period / 2)
		h.observe(pipeline.Metrics, Result{Retryable: true, Err: errors.New("connection refused")})
		synctest.Wait()
		if n := strings.Count(logs.String(), "export failed; retrying"); n != 1 {
			t.Fatalf("%d WARNs at the failure, want 1:\n%s", n, logs.String())
		}
		time.Sleep(period - time.Second)
		synctest.Wait()
		if n := summaries(); n != 0 {
			t.Fatalf("%d summaries less than a period after the WARN, want 0:\n%s", n, logs.String())
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if n := summaries(); n != 1 {
			t.Fatalf("%d summaries a period after the WARN, want 1:\n%s", n, logs.String())
		}
		time.Sleep(period)
		synctest.Wait()
		if n := summaries(); n != 2 {
			t.Fatalf("%d summaries two periods after the WARN, want 2:\n%s", n, logs.String())
		}
		// What the backfill will send and what the backend refused (left
		// for replay) are told apart.
		if !strings.Contains(logs.String(), "to_backfill_batches=2 to_backfill_bytes=20 left_for_replay_batches=3 left_for_replay_bytes=30") {
			t.Errorf("the summary does not split the backlog:\n%s", logs.String())
		}
		if !strings.Contains(logs.String(), "for=2m0s") {
			t.Errorf("the second summary does not say for=2m0s:\n%s", logs.String())
		}
	})
}

// A backend that flaps (every other request failing) is logged once at
// WARN and once at INFO, not at every flip.
func TestHTTPFlappingBackendLoggedOncePerPeriod(t *testing.T) {
	be := newBackend(t, func(n int32, w http.ResponseWriter) bool {
		if n%2 == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	h, logs := newTestHTTP(t, be.URL(), HTTPOptions{ReportEvery: time.Hour})
	_ = h.Start(context.Background())
	const n = 10
	for i := range n {
		_ = h.Enqueue(context.Background(), metricsBatch(string(rune('a'+i)), 1))
		waitFor(t, patience, func() bool { return h.Stats().SentBatches == uint64(i+1) }, "delivered after one retry")
	}
	_ = h.Shutdown(ctxT(patience))
	if be.hits.Load() != 2*n {
		t.Fatalf("%d requests, want %d: every batch failed once", be.hits.Load(), 2*n)
	}
	l := logs.String()
	if w, i := strings.Count(l, "level=WARN"), strings.Count(l, "delivery works again"); w != 1 || i != 1 {
		t.Fatalf("%d failures and recoveries: %d WARN and %d recovery lines, want 1 and 1:\n%s", n, w, i, l)
	}
}

// A backend that flaps faster than the period: one WARN and one INFO for
// the first run of failures, then one summary a period while it flaps,
// counting the failed requests and runs of failures since the last one,
// then, once a whole period passes without a failure, one INFO.
func TestHTTPFlappingBackendSummedEveryPeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const period = time.Minute
		h, logs := newTestHTTP(t, "http://127.0.0.1:1", HTTPOptions{ReportEvery: period})
		_ = h.Start(context.Background())
		defer h.Shutdown(context.Background())
		flip := func() {
			h.observe(pipeline.Metrics, Result{Retryable: true, Status: 503, Err: errors.New("503 Service Unavailable")})
			time.Sleep(time.Second)
			h.observe(pipeline.Metrics, Result{Status: 200})
		}
		// A run at 0s, then one every 10s from 13s to 173s: 5 in the
		// first period (its first run told by its WARN and INFO), 6 in
		// each of the next two.
		flip()
		time.Sleep(12 * time.Second)
		for range 17 {
			flip()
			time.Sleep(9 * time.Second)
		}
		time.Sleep(3 * period)
		synctest.Wait()
		l := logs.String()
		var summaries []string
		for _, line := range strings.Split(l, "\n") {
			if strings.Contains(line, "delivery failing on and off") {
				summaries = append(summaries, line)
			}
		}
		if len(summaries) != 3 {
			t.Fatalf("%d summaries over three periods of flapping, want 3:\n%s", len(summaries), l)
		}
		for i, want := range []string{"failed_requests=5 failure_runs=5", "failed_requests=6 failure_runs=6", "failed_requests=6 failure_runs=6"} {
			if !strings.Contains(summaries[i], want) {
				t.Errorf("summary %d does not say %s:\n%s", i+1, want, summaries[i])
			}
		}
		if n := strings.Count(l, "export failed; retrying"); n != 1 {
			t.Errorf("%d WARNs at a run's start, want 1:\n%s", n, l)
		}
		if n := strings.Count(l, "delivery works again"); n != 2 {
			t.Errorf("%d recovery INFOs, want 2 (the first run's, the flapping's once it stays ok):\n%s", n, l)
		}
		if n := strings.Count(l, "level=WARN"); n != 4 {
			t.Errorf("%d WARN lines, want 4 (the run's start, three summaries):\n%s", n, l)
		}
	})
}
