package replay

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/otelstep/otelstep/sink"
)

// modal is a backend that answers 503 (mode 0), 401 (1) or takes the
// request (2), counting the requests of each.
type modal struct {
	*fakeBackend
	mode atomic.Int32
	hits [3]atomic.Int32
}

func newModal(mode int32) (*modal, *httptest.Server) {
	b := &modal{fakeBackend: newBackend()}
	b.mode.Store(mode)
	b.answer = func(int, []string, http.ResponseWriter) int {
		m := b.mode.Load()
		b.hits[m].Add(1)
		return [3]int{http.StatusServiceUnavailable, http.StatusUnauthorized, http.StatusOK}[m]
	}
	return b, httptest.NewServer(b)
}

// A batch the backend refuses is posted once, recorded as refused (not
// done, not skipped), left alone by the backfill, and `otelstep replay`
// afterwards sends it, once the backend takes it.
func TestRefusedLeftToReplay(t *testing.T) {
	b, srv := newModal(1)
	defer srv.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "traces.jsonl")
	log, logs := testLog()
	l := startLive(t, path, srv.URL, 100, 10*time.Millisecond, true, log)
	const n = 10
	l.send(t, "refused", 0, n)
	waitUntil(t, func() bool { return l.rec.Backlog().ForReplay.Batches == n }, "every line recorded refused")
	b.mode.Store(2)
	l.send(t, "up", 0, 2)
	waitSpans(t, &switchable{fakeBackend: b.fakeBackend}, "up", 2)
	l.shutdown(t, false)
	if got := b.hits[1].Load(); got != n {
		t.Fatalf("the backend refused %d requests, want %d: a refused batch is posted once", got, n)
	}
	if bl := l.rec.Backlog(); bl.ForReplay.Batches != n || bl.ForReplay.Items != n || bl.ToBackfill != (sink.Lines{}) || len(l.rec.pending()) != 0 {
		t.Fatalf("backlog %+v, pending %d: want the %d refused lines left to replay, none to backfill", bl, len(l.rec.pending()), n)
	}
	noToken(t, "the log", logs.String())

	s := replayAfter(t, srv, dir)
	_, spans := b.snapshot()
	wantEach(t, spans, "refused", n)
	wantEach(t, spans, "up", 2)
	if s.Signals[0].Lines+s.Signals[1].Lines+s.Signals[2].Lines != n || s.AlreadySent != 2 || s.Failures() != 0 {
		t.Fatalf("replay sent %+v, found %d sent, %d failures: want the %d refused lines, 2 sent, none skipped", s.Signals, s.AlreadySent, s.Failures(), n)
	}
}

// Lines the backend was down for, then refused by it when the backfill
// sends them (the token changed under it), are posted once by the
// backfill, recorded refused, not skipped, and replay sends them.
func TestBackfillRefusedLeftToReplay(t *testing.T) {
	b, srv := newModal(0)
	defer srv.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "traces.jsonl")
	log, _ := testLog()
	l := startLive(t, path, srv.URL, 100, 10*time.Millisecond, true, log)
	const n = 6
	l.send(t, "down", 0, n)
	waitUntil(t, func() bool { return l.http.Stats().Failed == n }, "every batch given up on")
	b.mode.Store(1)
	waitUntil(t, func() bool {
		return len(l.rec.pending()) == 0 && l.rec.Backlog().ForReplay.Batches == n && l.rec.Backlog().ToBackfill.Batches == 0
	}, "the backfill's lines refused")
	refusedHits := b.hits[1].Load()
	b.mode.Store(2)
	l.send(t, "up", 0, 1)
	waitSpans(t, &switchable{fakeBackend: b.fakeBackend}, "up", 1)
	l.shutdown(t, false)
	if refusedHits != 1 || b.hits[1].Load() != 1 {
		t.Fatalf("the backfill was refused %d times (%d by the end), want once", refusedHits, b.hits[1].Load())
	}
	s := replayAfter(t, srv, dir)
	_, spans := b.snapshot()
	wantEach(t, spans, "down", n)
	if s.Failures() != 0 || s.AlreadySent != 1 {
		t.Fatalf("replay: %d failures, %d found sent", s.Failures(), s.AlreadySent)
	}
}

func waitUntil(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
