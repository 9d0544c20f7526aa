package backfill

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/otelstep/otelstep/internal/fakebackend"
	"github.com/otelstep/otelstep/internal/livetest"
	"github.com/otelstep/otelstep/internal/pipelinetest"
	"github.com/otelstep/otelstep/internal/testlog"
	"github.com/otelstep/otelstep/replay"
	"github.com/otelstep/otelstep/sink"
)

const token = "backfill-Test-Token-5e1a7" // must never be printed

// Answers of a backend by mode: down (503), refusing (401), up (200).
const (
	down = iota
	refusing
	up
)

// backend is the fake backend answering by its mode, counting the
// requests answered in each.
type backend struct {
	*fakebackend.Backend
	mode atomic.Int32
	hits [3]atomic.Int32
}

func newBackend(t *testing.T, mode int32) *backend {
	b := &backend{Backend: fakebackend.New(t)}
	b.mode.Store(mode)
	b.Answer(func(*fakebackend.Request) fakebackend.Reply {
		m := b.mode.Load()
		b.hits[m].Add(1)
		return fakebackend.Reply{Status: [3]int{http.StatusServiceUnavailable, http.StatusUnauthorized, http.StatusOK}[m]}
	})
	return b
}

// spans counts the spans the backend took by name, and gives their names
// in the order they arrived.
func spans(reqs []*fakebackend.Request) (byName map[string]int, order []string) {
	byName = map[string]int{}
	for _, r := range reqs {
		if r.Status != http.StatusOK {
			continue
		}
		for _, sp := range fakebackend.Spans(r.Traces.GetResourceSpans()) {
			byName[sp.Name]++
			order = append(order, sp.Name)
		}
	}
	return byName, order
}

// waitSpans waits until every span prefix-0..n-1 has arrived.
func waitSpans(t *testing.T, b *backend, prefix string, n int) {
	t.Helper()
	b.Wait(t, fmt.Sprintf("the spans %s-0..%d", prefix, n-1), func(reqs []*fakebackend.Request) bool {
		got, _ := spans(reqs)
		return livetest.Arrived(got, prefix, n, 1)
	})
}

// wantStamped requires the token in every accepted request's header and
// once, as sent, on every resource.
func wantStamped(t *testing.T, b *backend) {
	t.Helper()
	for _, r := range b.Accepted() {
		if h := r.Header.Get("Authorization"); h != "Bearer "+token {
			t.Errorf("request %d without the Authorization header", r.N)
		}
		for _, res := range r.Resources() {
			if !fakebackend.StampedOnce(res, token) {
				t.Errorf("request %d: a resource without the token stamped once", r.N)
			}
		}
	}
}

// live is one run's sinks (package livetest's), the record its Fanout
// tracks delivery in, and its backfill.
type live struct {
	*livetest.Sinks
	rec  *replay.Record
	stop context.CancelFunc
	done chan struct{}
}

// startLive starts a run; queue is the exporter's queue size, every and
// logEvery the record's (0: its defaults).
func startLive(t *testing.T, path, endpoint string, queue int, every, logEvery time.Duration, log *slog.Logger) *live {
	t.Helper()
	l := &live{done: make(chan struct{})}
	l.Sinks = livetest.Start(t, path, endpoint, token, queue, log, func() sink.DeliveryRecord {
		rec, err := replay.OpenRecord(replay.RecordOptions{File: path, Endpoint: endpoint, Logger: log, Every: every, LogEvery: logEvery})
		if err != nil {
			t.Fatal(err)
		}
		l.rec = rec
		return rec
	})
	ctx, cancel := context.WithCancel(context.Background())
	l.stop = cancel
	go func() {
		defer close(l.done)
		Run(ctx, Options{Record: l.rec, Exporter: l.HTTP, Token: sink.BearerToken(map[string]string{"authorization": "bearer " + token}),
			Retry: sink.RetryOptions{InitialInterval: time.Millisecond, MaxInterval: 10 * time.Millisecond, MaxElapsedTime: 50 * time.Millisecond},
			Pause: 10 * time.Millisecond, Logger: log})
	}()
	return l
}

// shutdown stops the run as the service does: the backfill, the sinks,
// then the record (unless crash: a kill -9 writes nothing more).
func (l *live) shutdown(t *testing.T, crash bool) {
	t.Helper()
	l.stop()
	<-l.done
	l.Sinks.Shutdown(t)
	if !crash {
		if err := l.rec.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// waitBackfilled waits until the backfill has marked everything it sent
// done: a stop before its answer came would leave the lines to the next
// run.
func waitBackfilled(t *testing.T, rec *replay.Record) {
	t.Helper()
	pipelinetest.WaitFor(t, pipelinetest.Patience, func() bool { return rec.Pending() == 0 }, "nothing left to backfill")
}

// replaySendsNothing requires a replay afterwards to send no request and
// to find the sent lines already sent.
func replaySendsNothing(t *testing.T, b *backend, dir string, sent int64) {
	t.Helper()
	before := len(b.Requests())
	s := replayAfter(t, b, dir)
	if after := len(b.Requests()); after != before || s.AlreadySent != sent {
		t.Errorf("replay afterwards sent %d requests and found %d lines sent, want 0 and %d", after-before, s.AlreadySent, sent)
	}
}

// replayAfter replays the folder to the backend as a user would afterwards.
func replayAfter(t *testing.T, b *backend, dir string) *replay.Summary {
	t.Helper()
	s, err := replay.Run(context.Background(), replay.Options{Endpoint: b.URL(), Token: token, Paths: []string{dir}, Progress: &bytes.Buffer{},
		Retry: sink.RetryOptions{InitialInterval: 5 * time.Millisecond, MaxInterval: 20 * time.Millisecond, MaxElapsedTime: 5 * time.Second}})
	if err != nil {
		t.Fatalf("replay afterwards: %v", err)
	}
	if !s.OK() {
		t.Fatalf("replay afterwards: %s", s.Reason())
	}
	return s
}

func noToken(t *testing.T, what, s string) {
	t.Helper()
	if strings.Contains(s, token) {
		t.Errorf("%s holds the token", what)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestBackfillWhileRunning: the backend is down while batches flow, far
// more than the exporter's queue holds; once it is up, everything reaches
// it exactly once (what the queue held live, the rest backfilled from the
// file, stamped as replay stamps it), and a replay afterwards sends nothing.
func TestBackfillWhileRunning(t *testing.T) {
	b := newBackend(t, down)
	dir := t.TempDir()
	path := filepath.Join(dir, "traces.jsonl")
	log, logs := testlog.New()
	l := startLive(t, path, b.URL(), 3, 20*time.Millisecond, 0, log)
	const n = 40
	l.Send(t, "down", 0, n)
	b.mode.Store(up)
	l.Send(t, "up", 0, 5)
	waitSpans(t, b, "down", n)
	waitSpans(t, b, "up", 5)
	waitBackfilled(t, l.rec)
	l.shutdown(t, false)

	if st := l.HTTP.Stats(); st.Dropped+st.Failed < n-3-2 {
		t.Fatalf("the exporter gave up on %d batches, want at least %d: the test did not outlast its queue", st.Dropped+st.Failed, n-5)
	}
	got, _ := spans(b.Requests())
	livetest.WantTimes(t, got, "down", n, 1)
	livetest.WantTimes(t, got, "up", 5, 1)
	wantStamped(t, b)
	noToken(t, "the record", readFile(t, l.rec.Path()))
	noToken(t, "the log", logs.String())
	noToken(t, "the file", readFile(t, path))

	replaySendsNothing(t, b, dir, n+5)
}

// TestBackfillAfterRestart: otelstep is stopped while the backend is down;
// restarted on the same file with the backend up, it sends what the first
// run never delivered, oldest first, beside its own live lines, each once;
// a replay afterwards sends nothing.
func TestBackfillAfterRestart(t *testing.T) {
	b := newBackend(t, down)
	dir := t.TempDir()
	path := filepath.Join(dir, "traces.jsonl")
	log, logs := testlog.New()
	l := startLive(t, path, b.URL(), 3, time.Hour, 0, log)
	l.Send(t, "first", 0, 30)
	l.shutdown(t, false)
	if n := len(b.Accepted()); n > 0 {
		t.Fatalf("the backend is down, yet it took %d requests", n)
	}

	b.mode.Store(up)
	l = startLive(t, path, b.URL(), 3, time.Hour, 0, log)
	if got := l.rec.Pending(); got != 30 {
		t.Errorf("the record resumed with %d lines to backfill, want 30", got)
	}
	l.Send(t, "second", 0, 10)
	waitSpans(t, b, "first", 30)
	waitSpans(t, b, "second", 10)
	waitBackfilled(t, l.rec)
	l.shutdown(t, false)
	got, order := spans(b.Requests())
	livetest.WantTimes(t, got, "first", 30, 1)
	livetest.WantTimes(t, got, "second", 10, 1)
	// Oldest first: the backfill sent first-0 before first-29.
	if i, j := indexOf(order, "first-0"), indexOf(order, "first-29"); i < 0 || j < 0 || i > j {
		t.Errorf("first-0 arrived at %d, first-29 at %d: not oldest first", i, j)
	}
	wantStamped(t, b)
	noToken(t, "the log", logs.String())

	replaySendsNothing(t, b, dir, 40)
}

// TestBackfillAfterAKill: the lines a run delivered but had not yet put in
// its delivery log when it was killed (here: a log never written) are
// sent again by the next run's backfill, once each, and a replay
// afterwards sends nothing: delivery is at least once.
func TestBackfillAfterAKill(t *testing.T) {
	b := newBackend(t, up)
	dir := t.TempDir()
	path := filepath.Join(dir, "traces.jsonl")
	log, _ := testlog.New()
	l := startLive(t, path, b.URL(), 100, time.Hour, time.Hour, log)
	l.Send(t, "unlogged", 0, 5)
	waitSpans(t, b, "unlogged", 5)
	l.shutdown(t, true)

	l = startLive(t, path, b.URL(), 3, time.Hour, 0, log)
	b.Wait(t, "the unlogged lines twice", func(reqs []*fakebackend.Request) bool {
		got, _ := spans(reqs)
		return livetest.Arrived(got, "unlogged", 5, 2)
	})
	waitBackfilled(t, l.rec)
	l.shutdown(t, false)
	got, _ := spans(b.Requests())
	// Twice: live, then backfilled.
	livetest.WantTimes(t, got, "unlogged", 5, 2)
	replaySendsNothing(t, b, dir, 5)
}

// A batch the backend refuses is posted once, recorded as refused (not
// done, not skipped), left alone by the backfill, and `otelstep replay`
// afterwards sends it, once the backend takes it.
func TestRefusedLeftToReplay(t *testing.T) {
	b := newBackend(t, refusing)
	dir := t.TempDir()
	path := filepath.Join(dir, "traces.jsonl")
	log, logs := testlog.New()
	l := startLive(t, path, b.URL(), 100, 10*time.Millisecond, 0, log)
	const n = 10
	l.Send(t, "refused", 0, n)
	pipelinetest.WaitFor(t, pipelinetest.Patience, func() bool { return l.rec.Backlog().ForReplay.Batches == n }, "every line recorded refused")
	b.mode.Store(up)
	l.Send(t, "up", 0, 2)
	waitSpans(t, b, "up", 2)
	l.shutdown(t, false)
	if got := b.hits[refusing].Load(); got != n {
		t.Fatalf("the backend refused %d requests, want %d: a refused batch is posted once", got, n)
	}
	if bl := l.rec.Backlog(); bl.ForReplay.Batches != n || bl.ForReplay.Items != n || bl.ToBackfill != (sink.Lines{}) || l.rec.Pending() != 0 {
		t.Fatalf("backlog %+v, pending %d: want the %d refused lines left to replay, none to backfill", bl, l.rec.Pending(), n)
	}
	noToken(t, "the log", logs.String())

	s := replayAfter(t, b, dir)
	got, _ := spans(b.Requests())
	livetest.WantTimes(t, got, "refused", n, 1)
	livetest.WantTimes(t, got, "up", 2, 1)
	if s.Signals[0].Lines+s.Signals[1].Lines+s.Signals[2].Lines != n || s.AlreadySent != 2 || s.Failures() != 0 {
		t.Fatalf("replay sent %+v, found %d sent, %d failures: want the %d refused lines, 2 sent, none skipped", s.Signals, s.AlreadySent, s.Failures(), n)
	}
}

// Lines the backend was down for, then refused by it when the backfill
// sends them (the token changed under it), are posted once by the
// backfill, recorded refused, not skipped, and replay sends them.
func TestBackfillRefusedLeftToReplay(t *testing.T) {
	b := newBackend(t, down)
	dir := t.TempDir()
	path := filepath.Join(dir, "traces.jsonl")
	log, _ := testlog.New()
	l := startLive(t, path, b.URL(), 100, 10*time.Millisecond, 0, log)
	const n = 6
	l.Send(t, "down", 0, n)
	pipelinetest.WaitFor(t, pipelinetest.Patience, func() bool { return l.HTTP.Stats().Failed == n }, "every batch given up on")
	b.mode.Store(refusing)
	pipelinetest.WaitFor(t, pipelinetest.Patience, func() bool {
		bl := l.rec.Backlog()
		return l.rec.Pending() == 0 && bl.ForReplay.Batches == n && bl.ToBackfill.Batches == 0
	}, "the backfill's lines refused")
	refusedHits := b.hits[refusing].Load()
	b.mode.Store(up)
	l.Send(t, "up", 0, 1)
	waitSpans(t, b, "up", 1)
	l.shutdown(t, false)
	if refusedHits != 1 || b.hits[refusing].Load() != 1 {
		t.Fatalf("the backfill was refused %d times (%d by the end), want once", refusedHits, b.hits[refusing].Load())
	}
	s := replayAfter(t, b, dir)
	got, _ := spans(b.Requests())
	livetest.WantTimes(t, got, "down", n, 1)
	if s.Failures() != 0 || s.AlreadySent != 1 {
		t.Fatalf("replay: %d failures, %d found sent", s.Failures(), s.AlreadySent)
	}
}

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}
