package faults

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/otelstep/otelstep/internal/proctest"
)

// The backfill cases (issue 34 item 6): the exporter's queue holds 4
// batches and gives a batch up after a second of retries; the outage lasts
// 40 batches or more. What the exporter gives up on is in the JSONL, and
// otelstep sends it from there once the backend is back, or on its next
// start on the folder.

const smallQueue = "    sending_queue:\n      queue_size: 4\n    retry_on_failure:\n      initial_interval: 20ms\n      max_interval: 50ms\n      max_elapsed_time: 1s\n"

// outageLines is how many lines (batches) the JSONL files take while the
// backend is down: 10 times what the exporter's queue holds.
const outageLines = 40

// backfillJob is one job's otelstep with a backend and a scrape target.
type backfillJob struct {
	t  *testing.T
	be *Backend
	tg *Target
	n  *Node
	l  *Ledger
	// downLines is how many lines the JSONL files took while the backend
	// was down.
	downLines int
}

func newBackfillJob(t *testing.T) *backfillJob {
	be := NewBackend(t)
	tg := NewTarget(t, 20)
	n := configure(t, Setup{Backend: be.URL(), Exporter: smallQueue, Targets: []string{tg.Addr()}, ScrapeInterval: 200 * time.Millisecond})
	return &backfillJob{t: t, be: be, tg: tg, n: n, l: newLedger()}
}

// inJSONL is what the JSONL files hold now; ok is false while a line is
// being written.
func (j *backfillJob) inJSONL() (Items, bool) {
	it, err := readJSONL(j.n.Otel)
	return it, err == nil
}

// post sends requests requests of 5 spans, each of which must be answered
// 200.
func (j *backfillJob) post(prefix string, requests int) {
	j.t.Helper()
	for range requests {
		if code, _ := j.l.post(j.n.HTTP, prefix, 5); code != 200 {
			j.t.Fatalf("otelstep answered %d", code)
		}
	}
}

// outage: spans and scrapes delivered live, then the backend down while
// 20 requests of spans, each its own batch, and the scrapes are taken,
// until the JSONL files have taken outageLines lines since it went down.
func (j *backfillJob) outage() {
	j.t.Helper()
	j.post("up", 5)
	waitFor(j.t, "the first spans and a scrape at the backend", func() bool {
		got := j.be.Got()
		return got.Missing(j.l.Answered()) == 0 && got.Points["fault_target_value"] > 0
	})
	j.be.Set(Down)
	before := j.lines()
	defer func() { j.downLines = j.lines() - before }()
	for range 20 {
		j.post("down", 1)
		waitFor(j.t, "the spans answered 200 in the JSONL", func() bool {
			it, ok := j.inJSONL()
			return ok && it.Missing(j.l.Answered()) == 0
		})
	}
	waitFor(j.t, fmt.Sprintf("%d lines in the JSONL while the backend is down", outageLines), func() bool {
		return j.lines() >= before+outageLines
	})
}

// lines is how many lines the JSONL files hold.
func (j *backfillJob) lines() int {
	n := 0
	for _, sig := range []string{"metrics", "traces", "logs"} {
		data, _ := os.ReadFile(filepath.Join(j.n.Otel, sig+".jsonl"))
		n += bytes.Count(data, []byte{'\n'})
	}
	return n
}

// waitAllDelivered waits until the backend has everything the JSONL holds
// and otelstep knows it: its exporter's backlog in the files (to backfill,
// and left for replay) is empty. The backend having the lines is not
// enough: a backfill request the backend has answered may not have been
// read by otelstep yet, and a stop then cuts it, leaving its lines to the
// next run and to replay (README: delivery is at least once).
func (j *backfillJob) waitAllDelivered() {
	j.t.Helper()
	waitFor(j.t, "everything in the JSONL at the backend, and nothing left to backfill in otelstep's status", func() bool {
		it, ok := j.inJSONL()
		return ok && j.be.Got().Missing(it) == 0 && exporterBacklog(j.t, j.n.Health) == 0
	})
}

// exporterBacklog is the batches the OTLP/HTTP exporters' JSONL backlog
// holds (to backfill and left for replay), from the status document.
func exporterBacklog(t testing.TB, health string) int {
	t.Helper()
	var doc struct {
		Components map[string]struct {
			Components map[string]struct{ Details json.RawMessage }
		}
	}
	b := statusDoc(t, health, &doc)
	type lines struct{ Batches int }
	n, found := 0, false
	for _, p := range doc.Components {
		for id, c := range p.Components {
			if !strings.HasPrefix(id, "exporter:otlp_http") {
				continue
			}
			var d struct {
				ToBackfill    lines `json:"to_backfill"`
				LeftForReplay lines `json:"left_for_replay"`
			}
			if err := json.Unmarshal(c.Details, &d); err != nil {
				t.Fatalf("status document: %s: %v\n%s", id, err, b)
			}
			// One exporter's backlog, shown in each pipeline it is in.
			n, found = max(n, d.ToBackfill.Batches+d.LeftForReplay.Batches), true
		}
	}
	if !found {
		t.Fatalf("status document: no OTLP/HTTP exporter in it:\n%s", b)
	}
	return n
}

// delivered compares the backend with the JSONL after the last stop: lost
// is what was answered 200 and is not in the JSONL, or is in the JSONL and
// not at the backend; twice is what the backend got more often than the
// JSONL holds it.
func (j *backfillJob) delivered() (lost, twice int, figure string) {
	j.t.Helper()
	file := j.n.jsonl(j.t)
	got := j.be.Got()
	lost = file.Missing(j.l.Answered()) + got.Missing(file)
	twice = file.Missing(got)
	figure = fmt.Sprintf("%d spans answered 200 and %d points scraped, in the JSONL, %d lines of it while the backend was down (the queue holds 4); at the backend %d spans, %d points",
		count(j.l.Answered().Spans), count(file.Points), j.downLines, count(got.Spans), count(got.Points))
	return lost, twice, figure
}

func count(m map[string]int) int {
	n := 0
	for _, c := range m {
		n += c
	}
	return n
}

// replay runs otelstep replay on the job's folder to the backend and
// returns how many requests reached it.
func (j *backfillJob) replay() int {
	j.t.Helper()
	before := j.be.Requests(Up)
	p := proctest.Launch(j.t, proctest.Command(otelstepBin, j.n.Env, "replay", "--endpoint", j.be.URL(), "--progress", "none", j.n.Otel))
	select {
	case <-p.Done:
	case <-time.After(patience):
		j.t.Fatalf("replay still running after %v:\n%s", patience, p.Out.String())
	}
	if code := p.Cmd.ProcessState.ExitCode(); code != 0 {
		j.t.Fatalf("replay exited %d:\n%s", code, p.Out.String())
	}
	if strings.Contains(p.Out.String(), token) {
		j.t.Error("the token is in replay's output")
	}
	return j.be.Requests(Up) - before
}

// The backend is down longer than the exporter's queue holds while OTLP
// and scrapes flow, then up: everything in the JSONL (everything answered
// 200) reaches it exactly once, what the queue dropped sent from the JSONL;
// a replay afterwards sends nothing.
func TestBackfillBackendDownThenUp(t *testing.T) {
	j := newBackfillJob(t)
	p := j.n.start(t)
	j.outage()
	j.be.Set(Up)
	j.post("after", 5)
	j.waitAllDelivered()
	e := p.Stop(t)
	exit := checkExit(t, p, e)
	lost, twice, figure := j.delivered()
	if out := p.Out.String(); !strings.Contains(out, "backfill: sent what the exporter had not delivered") {
		t.Errorf("nothing was backfilled:\n%s", out)
	}
	if twice > 0 {
		t.Errorf("%d items reached the backend more than once", twice)
	}
	j.n.checkNoToken(t, p)
	replayed := j.replay()
	if replayed != 0 {
		t.Errorf("replay afterwards sent %d requests, want 0", replayed)
	}
	report(t, fmt.Sprintf("%s; %d twice; replay after: %d requests; %s", figure, twice, replayed, exit), lost)
}

// otelstep is stopped while the backend is down, then started again on the
// same folder with the backend up: it sends what the first run did not
// deliver, and everything reaches the backend exactly once; a replay
// afterwards sends nothing.
func TestBackfillAfterRestart(t *testing.T) {
	j := newBackfillJob(t)
	p := j.n.start(t)
	j.outage()
	e := p.Stop(t)
	exit := checkExit(t, p, e)
	j.be.Set(Up)
	p2 := j.n.start(t)
	j.waitAllDelivered()
	e2 := p2.Stop(t)
	exit2 := checkExit(t, p2, e2)
	lost, twice, figure := j.delivered()
	if !strings.Contains(p2.Out.String(), "an earlier run did not deliver part of the file") {
		t.Errorf("the second run did not resume the record:\n%s", p2.Out.String())
	}
	if twice > 0 {
		t.Errorf("%d items reached the backend more than once", twice)
	}
	j.n.checkNoToken(t, p)
	j.n.checkNoToken(t, p2)
	replayed := j.replay()
	if replayed != 0 {
		t.Errorf("replay afterwards sent %d requests, want 0", replayed)
	}
	report(t, fmt.Sprintf("%s; %d twice; replay after: %d requests; stopped while down: %s; restarted: %s", figure, twice, replayed, exit, exit2), lost)
}

// otelstep is stopped while the backend is down and not started again: a
// replay of the folder once the backend is up sends exactly what never
// arrived, not what was delivered live.
func TestReplayAfterAStopWhileDown(t *testing.T) {
	j := newBackfillJob(t)
	p := j.n.start(t)
	j.outage()
	e := p.Stop(t)
	exit := checkExit(t, p, e)
	j.be.Set(Up)
	replayed := j.replay()
	lost, twice, figure := j.delivered()
	if twice > 0 {
		t.Errorf("%d items reached the backend more than once: replay resent what was delivered", twice)
	}
	if replayed == 0 {
		t.Error("replay sent nothing")
	}
	report(t, fmt.Sprintf("%s; %d twice; replay: %d requests; %s", figure, twice, replayed, exit), lost)
}

// otelstep is killed (SIGKILL) with batches undelivered and others
// delivered in the moments before; started again with the backend up, it
// sends what the record does not say was delivered: everything reaches the
// backend at least once (what was delivered after the record's last write
// arrives twice).
func TestBackfillAfterKill(t *testing.T) {
	j := newBackfillJob(t)
	p := j.n.start(t)
	j.outage()
	if err := p.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.Done
	j.be.Set(Up)
	p2 := j.n.start(t)
	j.waitAllDelivered()
	e2 := p2.Stop(t)
	exit := checkExit(t, p2, e2)
	lost, twice, figure := j.delivered()
	j.n.checkNoToken(t, p2)
	report(t, fmt.Sprintf("%s; %d twice (at least once); restarted: %s", figure, twice, exit), lost)
}
