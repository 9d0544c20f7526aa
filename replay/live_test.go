package replay

import (
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
	"github.com/otelstep/otelstep/pipeline"
	"github.com/otelstep/otelstep/sink"
)

// switchable is a backend that answers 503 while down.
type switchable struct {
	*fakeBackend
	down atomic.Bool
}

func newSwitchable(down bool) (*switchable, *fakeBackend) {
	b := &switchable{fakeBackend: newBackend()}
	b.down.Store(down)
	b.answer = func(int, []string, http.ResponseWriter) int {
		if b.down.Load() {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	}
	srv := b.fakeBackend
	return b, srv
}

// live is one run's sinks (package livetest's), with the record its
// Fanout tracks delivery in (the live backfill, which sends what the HTTP
// sink did not deliver, is package backfill's; its tests run the same
// sinks).
type live struct {
	*livetest.Sinks
	rec *Record
}

// startLive starts a run; queue is the exporter's queue size.
func startLive(t *testing.T, path, endpoint string, queue int, every time.Duration, log *slog.Logger) *live {
	t.Helper()
	l := &live{}
	l.Sinks = livetest.Start(t, path, endpoint, token, queue, log, func() sink.DeliveryRecord {
		rec, err := OpenRecord(RecordOptions{File: path, Endpoint: endpoint, Logger: log, Every: every})
		if err != nil {
			t.Fatal(err)
		}
		l.rec = rec
		return rec
	})
	return l
}

// shutdown stops the run as the service does: the sinks, then the record
// (unless crash: a kill -9 writes nothing more).
func (l *live) shutdown(t *testing.T, crash bool) {
	t.Helper()
	l.Sinks.Shutdown(t)
	if !crash {
		if err := l.rec.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// waitSpans waits until every span prefix-0..n-1 has arrived.
func waitSpans(t *testing.T, b *switchable, prefix string, n int) {
	t.Helper()
	b.Wait(t, fmt.Sprintf("the spans %s-0..%d", prefix, n-1), func([]*fakebackend.Request) bool {
		_, spans := b.snapshot()
		return livetest.Arrived(spans, prefix, n, 1)
	})
}

// replayAfter replays the folder to the backend as a user would afterwards.
func replayAfter(t *testing.T, srv *fakeBackend, dir string) *Summary {
	t.Helper()
	s := mustRun(t, context.Background(), opts(srv, dir))
	if !s.OK() {
		t.Fatalf("replay afterwards: %s", s.Reason())
	}
	return s
}

// TestReplayAfterAStopWithoutBackfill: stopped while the backend is down
// and not restarted, the record says what never arrived, and a replay
// afterwards sends exactly that: not the lines delivered live.
func TestReplayAfterAStopWithoutBackfill(t *testing.T) {
	b, srv := newSwitchable(false)
	defer srv.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "traces.jsonl")
	log, _ := testlog.New()
	l := startLive(t, path, srv.URL(), 100, time.Hour, log)
	l.Send(t, "up", 0, 10)
	waitSpans(t, b, "up", 10)
	b.down.Store(true)
	l.Send(t, "down", 0, 20)
	l.shutdown(t, false)
	b.down.Store(false)

	s := replayAfter(t, srv, dir)
	_, spans := b.snapshot()
	wantEach(t, spans, "up", 10)
	wantEach(t, spans, "down", 20)
	if s.AlreadySent != 10 || s.Signals[pipeline.Traces].Lines != 20 {
		t.Errorf("replay found %d lines sent and sent %d, want 10 and 20", s.AlreadySent, s.Signals[pipeline.Traces].Lines)
	}
}

// TestDeliveryLogAfterAKill: a run killed leaves the lines it delivered
// in its delivery log (appended within LogEvery of their delivery), and
// the next run's record holds only what the log does not as undelivered:
// the lines delivered in the last LogEvery before a kill -9 are sent again
// (here: those of a run whose log was never written, by the replay
// afterwards; package backfill's tests have the backfill send them), the
// rest once.
func TestDeliveryLogAfterAKill(t *testing.T) {
	b, srv := newSwitchable(false)
	defer srv.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "traces.jsonl")
	log, _ := testlog.New()
	l := startLive(t, path, srv.URL(), 100, time.Hour, log)
	l.Send(t, "logged", 0, 10)
	waitSpans(t, b, "logged", 10)
	logPathOf := logPath(l.rec.Path())
	pipelinetest.WaitFor(t, pipelinetest.Patience, func() bool {
		ss, _ := readDeliveryLog(l.rec.Path(), 1<<40)
		var set spanSet
		for _, s := range ss {
			set.add(s)
		}
		return set.lines() == 10
	}, "10 lines in the delivery log "+logPathOf)
	l.shutdown(t, true)

	// A run killed before its log was written: its lines are sent again.
	l = startLive(t, path, srv.URL(), 100, time.Hour, log)
	l.rec.mu.Lock()
	l.rec.logEvery = time.Hour
	l.rec.mu.Unlock()
	if n := l.rec.Pending(); n != 0 {
		t.Fatalf("after a kill, %d lines the log holds are to backfill again", n)
	}
	l.Send(t, "unlogged", 0, 5)
	waitSpans(t, b, "unlogged", 5)
	l.shutdown(t, true)

	l = startLive(t, path, srv.URL(), 3, time.Hour, log)
	if n := l.rec.Pending(); n != 5 {
		t.Fatalf("after the second kill, %d lines to backfill, want the 5 unlogged", n)
	}
	l.shutdown(t, false)
	if _, err := os.Stat(logPathOf); !os.IsNotExist(err) {
		t.Errorf("the delivery log is left after a clean stop: %v", err)
	}
	s := replayAfter(t, srv, dir)
	_, spans := b.snapshot()
	wantEach(t, spans, "logged", 10)
	// Twice: live, then sent again.
	livetest.WantTimes(t, spans, "unlogged", 5, 2)
	if s.AlreadySent != 10 || s.Signals[pipeline.Traces].Lines != 5 {
		t.Errorf("replay afterwards found %d lines sent and sent %d, want 10 and 5", s.AlreadySent, s.Signals[pipeline.Traces].Lines)
	}
}

// A file that holds lines from before its record (written by a run
// without one) is not backfilled: the fate of those lines is unknown, and
// replay sends them; the lines after are recorded with their numbers in
// the file.
func TestRecordOfAFileWrittenWithoutOne(t *testing.T) {
	b, srv := newSwitchable(false)
	defer srv.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "traces.jsonl")
	writeTraces(t, path, "old", 5)
	log, _ := testlog.New()
	l := startLive(t, path, srv.URL(), 100, time.Hour, log)
	if p := l.rec.pending(); len(p) != 0 {
		t.Errorf("the record begins with %v to backfill, want nothing", p)
	}
	l.Send(t, "live", 0, 3)
	waitSpans(t, b, "live", 3)
	l.shutdown(t, false)
	if _, spans := b.snapshot(); spans["old-0"] != 0 {
		t.Fatal("a line from before the record was backfilled")
	}
	cp, err := loadCheckpoint(l.rec.Path(), input{abs: l.rec.in.abs, size: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	if len(cp.Done) != 1 || cp.Done[0].FirstLine != 6 || cp.Done[0].Lines != 3 || cp.Live.From == 0 || cp.Live.FromLine != 5 {
		t.Errorf("record: offset %d, done %+v, live %+v; want lines 6-8 done, from line 5", cp.Offset, cp.Done, cp.Live)
	}
	s := replayAfter(t, srv, dir)
	_, spans := b.snapshot()
	wantEach(t, spans, "old", 5)
	wantEach(t, spans, "live", 3)
	if s.AlreadySent != 3 {
		t.Errorf("replay found %d lines sent, want 3", s.AlreadySent)
	}
}

// A record whose file was replaced since (another file copied over it) is
// not resumed: a new one begins, and nothing is backfilled from the new
// file.
func TestRecordOfAReplacedFile(t *testing.T) {
	b, srv := newSwitchable(true)
	defer srv.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "traces.jsonl")
	log, logs := testlog.New()
	l := startLive(t, path, srv.URL(), 100, time.Hour, log)
	l.Send(t, "first", 0, 3)
	l.shutdown(t, false)
	writeTraces(t, path, "other", 8) // longer, other lines
	b.down.Store(false)
	l = startLive(t, path, srv.URL(), 100, time.Hour, log)
	if p := l.rec.pending(); len(p) != 0 {
		t.Errorf("the new record begins with %v to backfill, want nothing", p)
	}
	l.shutdown(t, false)
	if !strings.Contains(logs.String(), "does not match the file") {
		t.Errorf("the replaced file was not noticed:\n%s", logs.String())
	}
	if _, spans := b.snapshot(); len(spans) != 0 {
		t.Errorf("%d spans sent from the replaced file", len(spans))
	}
}
