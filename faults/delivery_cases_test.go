package faults

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/otelstep/otelstep/internal/proctest"
)

// The delivery cases (issues 40 and 41): what the operator reads while the
// backend is down, then refusing, then up; the stop line's account; the
// replay command it prints; restarts in a crash loop.

// reportEvery is the exporter's summary period in these cases (a minute
// by default).
const reportEvery = "OTELSTEP_EXPORTER_REPORT_EVERY=300ms"

var (
	stopLineRE = regexp.MustCompile(`msg="otelstep stopped".*`)
	replayRE   = regexp.MustCompile(`replay="((?:[^"\\]|\\.)*)"`)
)

// stopField is the integer field name of the stop line in out.
func stopField(t *testing.T, out, name string) int {
	t.Helper()
	line := stopLineRE.FindString(out)
	m := regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `=(\d+)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("no %s in the stop line %q", name, line)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// levelLines counts the log lines of out at level holding msg.
func levelLines(out, level, msg string) int {
	n := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "level="+level) && strings.Contains(l, msg) {
			n++
		}
	}
	return n
}

// The backend is down, then refuses every request with 401, then takes
// them again. At the default level the log holds one WARN for the outage,
// one for the refusal naming the token's variable, a summary every period
// while it lasts, one INFO at recovery, and no ERROR. The stop line's
// fates sum to the spans otelstep answered 200, and the replay command it
// prints, run once the backend takes requests, sends exactly what the
// backend had not got: every span in the JSONL at the backend once.
func TestBackendDownRefusingThenUp(t *testing.T) {
	be := NewBackend(t)
	be.Set(Down)
	n := configure(t, Setup{Backend: be.URL(), Exporter: smallQueue})
	n.Env = append(n.Env, reportEvery)
	p := n.start(t)
	l := newLedger()
	post := func(prefix string, requests int) {
		t.Helper()
		for range requests {
			if code, _ := l.post(n.HTTP, prefix, 5); code != 200 {
				t.Fatalf("otelstep answered %d", code)
			}
		}
	}
	out := p.Out.String
	post("down", 10)
	waitFor(t, "the outage's WARN and a summary", func() bool {
		return levelLines(out(), "WARN", "export failed; retrying") == 1 && levelLines(out(), "WARN", "delivery still failing") > 0
	})
	be.SetFailing(401)
	post("refused", 5)
	waitFor(t, "the refusal's WARN and a summary of it", func() bool {
		return levelLines(out(), "WARN", "refuses the export") == 1 && strings.Contains(out(), "state=refused")
	})
	be.Set(Up)
	post("up", 3)
	waitFor(t, "the recovery's INFO", func() bool { return levelLines(out(), "INFO", "delivery works again") == 1 })
	waitFor(t, "the spans sent once up at the backend", func() bool {
		got := be.Got()
		for name := range l.Answered().Spans {
			if strings.HasPrefix(name, "up-") && got.Spans[name] == 0 {
				return false
			}
		}
		return true
	})
	e := p.Stop(t)
	figure := checkExit(t, p, e)
	log := out()
	n.checkNoToken(t, p)

	summaries := levelLines(log, "WARN", "delivery still failing")
	for what, c := range map[string]int{
		"WARN export failed; retrying": levelLines(log, "WARN", "export failed; retrying"),
		"WARN refuses the export":      levelLines(log, "WARN", "refuses the export"),
		"WARN naming OTEL_TOKEN":       levelLines(strings.Join(regexp.MustCompile(`.*refuses the export.*`).FindAllString(log, -1), "\n"), "WARN", "environment variable OTEL_TOKEN"),
		"INFO delivery works again":    levelLines(log, "INFO", "delivery works again"),
	} {
		if c != 1 {
			t.Errorf("%s: %d lines, want 1", what, c)
		}
	}
	if e := strings.Count(log, "level=ERROR"); e != 0 {
		t.Errorf("%d ERROR lines", e)
	}
	// Every WARN is one of the above, a summary, or the backfill's one
	// note that the backend refuses what it sends.
	if w := strings.Count(log, "level=WARN"); w > summaries+4 {
		t.Errorf("%d WARN lines for %d summaries: more than the outage's", w, summaries)
	}

	answered := l.Answered()
	accepted := stopField(t, log, "backend_accepted_items")
	sum := 0
	for _, f := range []string{"backend_delivered_items", "backend_left_queue_full_items", "backend_left_backend_down_items", "backend_left_backend_refused_items", "backend_left_unsent_at_stop_items"} {
		sum += stopField(t, log, f)
	}
	if accepted != answered.Total() || sum != accepted {
		t.Errorf("stop line: accepted %d, fates sum to %d; senders had %d answered 200", accepted, sum, answered.Total())
	}
	// The line leads with what became of what the backend was given, and
	// what is left is one figure: no "unsent=0" first while items wait.
	stop := stopLineRE.FindString(log)
	lead := regexp.MustCompile(`msg="otelstep stopped" stop=\S+ backend_accepted_items=\d+ backend_delivered_items=(\d+) backend_left_items=(\d+) `)
	if m := lead.FindStringSubmatch(stop); m == nil || strings.Contains(stop, "backend_unsent") {
		t.Errorf("the stop line does not lead with accepted, delivered and left items: %s", stop)
	} else if left, _ := strconv.Atoi(m[2]); left == 0 || left != accepted-stopField(t, log, "backend_delivered_items") {
		t.Errorf("stop line: backend_left_items=%d, want accepted %d - delivered, and not 0: %s", left, accepted, stop)
	}
	if stopField(t, log, "backend_left_backend_refused_items") == 0 {
		t.Errorf("no item left as refused: %s", stopLineRE.FindString(log))
	}
	m := replayRE.FindStringSubmatch(stopLineRE.FindString(log))
	if m == nil {
		t.Fatalf("no replay command in the stop line: %s", stopLineRE.FindString(log))
	}
	cmdline, err := strconv.Unquote(`"` + m[1] + `"`)
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Fields(cmdline)
	if args[0] != "otelstep" || args[1] != "replay" || !strings.Contains(cmdline, "--token-env OTEL_TOKEN") || !strings.Contains(cmdline, "--endpoint "+be.URL()) {
		t.Fatalf("replay command %q", cmdline)
	}
	before := be.Got()
	rp := proctest.Launch(t, proctest.Command(otelstepBin, n.Env, append([]string{"replay", "--progress", "none"}, args[2:]...)...))
	select {
	case <-rp.Done:
	case <-time.After(patience):
		t.Fatalf("replay still running after %v:\n%s", patience, rp.Out.String())
	}
	if code := rp.Cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("%s exited %d:\n%s", cmdline, code, rp.Out.String())
	}
	file := n.jsonl(t)
	got := be.Got()
	lost := file.Missing(answered) + got.Missing(file)
	twice := file.Missing(got)
	if twice != 0 || got.Missing(before) != 0 {
		t.Errorf("%d spans at the backend more often than in the JSONL", twice)
	}
	report(t, fmt.Sprintf("%d spans answered 200 (down, 401, up); stop line: %s accepted, the fates sum to %d; %d summaries; replay sent %d, at the backend %d spans, %d twice; %s",
		answered.Total(), strconv.Itoa(accepted), sum, summaries, got.Total()-before.Total(), got.Total(), twice, figure), lost)
	t.Logf("the run's log:\n%s\nthe replay:\n%s", log, rp.Out.String())
}

// A crash loop: otelstep killed (kill -9) again and again under load, each
// time after its delivery record holds what it had delivered and a few
// more requests were taken, restarted on the same folder. Each restart
// resends only what was delivered after the record last had it (within
// 200 ms of the kill: the delivery log), not the whole file: the
// duplicates at the backend are counted and bounded by what was taken
// after the wait.
func TestCrashLoopResendsLittle(t *testing.T) {
	be := NewBackend(t)
	n := configure(t, Setup{Backend: be.URL()})
	const cycles, settled, late = 4, 20, 4 // requests of 5 spans per cycle
	for c := range cycles {
		p := n.start(t)
		cycle := newLedger() // what a kill now must not have resent
		for range settled {
			if code, _ := cycle.post(n.HTTP, fmt.Sprintf("c%d", c), 5); code != 200 {
				t.Fatalf("otelstep answered %d", code)
			}
		}
		waitFor(t, "what was answered 200 at the backend and in the delivery log", func() bool {
			return be.Got().Missing(cycle.Answered()) == 0 && logCovers(n.Otel, "traces.jsonl")
		})
		lateLedger := newLedger()
		for range late {
			lateLedger.post(n.HTTP, fmt.Sprintf("c%d-late", c), 5)
		}
		if err := p.Cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-p.Done
	}
	p := n.start(t)
	waitFor(t, "everything in the JSONL at the backend", func() bool {
		it, err := readJSONL(n.Otel)
		return err == nil && be.Got().Missing(it) == 0
	})
	e := p.Stop(t)
	figure := checkExit(t, p, e)
	file := n.jsonl(t)
	got := be.Got()
	twice := got.Total() - file.Total()
	bound := cycles * late * 5
	if twice > bound {
		t.Errorf("%d spans at the backend twice, want at most %d (what came after the wait of each of %d kills)", twice, bound, cycles)
	}
	report(t, fmt.Sprintf("%d kill -9 under load, %d spans in the JSONL, %d at the backend: %d twice (bound %d); %s",
		cycles, file.Total(), got.Total(), twice, bound, figure), got.Missing(file))
}

// logCovers reports whether the delivery record beside the JSONL file name
// in dir, its checkpoint and its delivery log together, holds every line
// of the file: what a kill now would not resend.
func logCovers(dir, name string) bool {
	fi, err := os.Stat(filepath.Join(dir, name))
	if err != nil {
		return false
	}
	var ranges [][2]int64
	records, _ := filepath.Glob(filepath.Join(dir, "."+name+".replay-*.json"))
	for _, rp := range records {
		var cp struct {
			Offset int64
			Done   []struct{ Start, End int64 }
		}
		data, _ := os.ReadFile(rp)
		if json.Unmarshal(data, &cp) != nil {
			return false // being replaced: look again
		}
		ranges = append(ranges, [2]int64{0, cp.Offset})
		for _, d := range cp.Done {
			ranges = append(ranges, [2]int64{d.Start, d.End})
		}
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "."+name+".replay-*.log"))
	for _, lp := range logs {
		data, _ := os.ReadFile(lp)
		for _, line := range strings.Split(string(data), "\n") {
			var a, b, c, d int64
			if n, _ := fmt.Sscan(line, &a, &b, &c, &d); n == 4 {
				ranges = append(ranges, [2]int64{a, b})
			}
		}
	}
	sort.Slice(ranges, func(i, j int) bool { return ranges[i][0] < ranges[j][0] })
	at := int64(0)
	for _, r := range ranges {
		if r[0] > at {
			return false
		}
		at = max(at, r[1])
	}
	return at >= fi.Size()
}
