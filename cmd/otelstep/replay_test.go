package main

import (
	"bytes"
	"fmt"
	"github.com/otelstep/otelstep/internal/fakebackend"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// checkReplay replays the live run's JSONL folder into a second backend and
// requires it to receive exactly what the live backend did: the same
// resource-level messages (resources, points, spans, log records), each as
// many times, every resource with the token stamped and the header set.
// Then the same command again sends nothing.
func checkReplay(t *testing.T, otel string, live *backend) {
	t.Helper()
	be := newBackend(t)
	env := []string{"OTEL_TOKEN=" + testToken}
	code, out := runBinary(t, env, "replay", "--endpoint", be.URL(), "--progress", "plain", otel)
	if code != 0 {
		t.Fatalf("replay exited %d:\n%s", code, out)
	}
	t.Logf("replay:\n%s", out)
	if strings.Contains(out, testToken) {
		t.Error("token found in replay's output")
	}
	got := be.seen()
	if got.dropped != 0 || got.badHeader != 0 {
		t.Errorf("replay: %d resources without the token attribute, %d requests with a bad header", got.dropped, got.badHeader)
	}
	if len(got.canon) == 0 {
		t.Fatal("replay delivered nothing")
	}
	liveGot := live.seen()
	for k, n := range liveGot.canon {
		if got.canon[k] != n {
			t.Errorf("a %s message the live backend got %d times reached the replay backend %d times", strings.SplitN(k, "\x00", 2)[0], n, got.canon[k])
		}
	}
	for k, n := range got.canon {
		if _, ok := liveGot.canon[k]; !ok {
			t.Errorf("replay sent a %s message (%d times) the live backend never got", strings.SplitN(k, "\x00", 2)[0], n)
		}
	}
	first := got.requests

	code, out = runBinary(t, env, "replay", "--endpoint", be.URL(), otel)
	again := be.seen().requests - first
	if code != 0 || again != 0 {
		t.Errorf("second replay: exit %d, %d requests, want 0 and 0:\n%s", code, again, out)
	}
	// The checkpoints beside the files do not hold the token either.
	states, _ := filepath.Glob(filepath.Join(otel, ".*.replay-*.json"))
	if len(states) == 0 {
		t.Error("no checkpoint written beside the JSONL files")
	}
	for _, p := range states {
		data, _ := os.ReadFile(p)
		if bytes.Contains(data, []byte(testToken)) {
			t.Errorf("token found in %s", p)
		}
	}
}

func TestReplayMissingToken(t *testing.T) {
	be := newBackend(t)
	dir := t.TempDir()
	f := filepath.Join(dir, "traces.jsonl")
	if err := os.WriteFile(f, []byte(`{"resourceSpans":[]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"OTEL_TOKEN=", "MY_TOKEN="}
	for _, args := range [][]string{
		{"replay", "--endpoint", be.URL(), f},
		{"replay", "--endpoint", be.URL(), "--token-env", "MY_TOKEN", f},
	} {
		code, out := runBinary(t, env, args...)
		name := "OTEL_TOKEN"
		if len(args) > 4 {
			name = "MY_TOKEN"
		}
		if code != 2 || !strings.Contains(out, name) || !strings.Contains(out, "not set") {
			t.Errorf("%v: exit %d, want 2 and a message naming %s:\n%s", args, code, name, out)
		}
	}
	if be.seen().requests != 0 {
		t.Errorf("%d requests sent without a token", be.seen().requests)
	}
	code, out := runBinary(t, []string{"OTEL_TOKEN=x"}, "replay", "--endpoint", be.URL(), filepath.Join(dir, "nope", "*.jsonl"))
	if code != 2 || !strings.Contains(out, "matches nothing") {
		t.Errorf("bad path: exit %d:\n%s", code, out)
	}
}

func TestReplayExitStatus(t *testing.T) {
	be := newBackend(t)
	dir := t.TempDir()
	f := filepath.Join(dir, "logs.jsonl")
	good := `{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":{"stringValue":"one"}}]}]}]}`
	os.WriteFile(f, []byte(good+"\n{\"resourceLogs\":[{]}\n"), 0o644)
	env := []string{"OTEL_TOKEN=" + testToken}
	code, out := runBinary(t, env, "replay", "--endpoint", be.URL(), "--state", filepath.Join(dir, "st"), f)
	if code != 1 || !strings.Contains(out, f+":2: corrupt") || !strings.Contains(out, "not everything was sent") {
		t.Errorf("corrupt line: exit %d, want 1 naming %s:2:\n%s", code, f, out)
	}
	if !be.seen().logs["one"] {
		t.Error("the good line was not sent")
	}
}

// TestReplaySignalStopsCleanly sends SIGINT to a replay whose backend is
// slow: it exits non-zero saying it stopped, and the same command then
// sends the rest, nothing twice.
func TestReplaySignalStopsCleanly(t *testing.T) {
	be := fakebackend.New(t)
	be.AnswerAll(fakebackend.Reply{Delay: 20 * time.Millisecond})
	dir := t.TempDir()
	f := filepath.Join(dir, "traces.jsonl")
	var buf bytes.Buffer
	const n = 200
	for i := range n {
		fmt.Fprintf(&buf, `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","name":"s-%d"}]}]}]}`+"\n", i)
	}
	os.WriteFile(f, buf.Bytes(), 0o644)
	// --from-start: the hint printed at the stop must not repeat it.
	args := []string{"replay", "--endpoint", be.URL(), "--from-start", "--batch-bytes", "1", "--concurrency", "2", f}
	cmd := exec.Command(buildBinary(t), args...)
	cmd.Env = append(os.Environ(), "OTEL_TOKEN="+testToken)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	be.WaitRequests(t, 1)
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 || !strings.Contains(out.String(), "stopped before the end") {
		t.Fatalf("after SIGINT: %v, want exit 1 saying it stopped:\n%s", err, out.String())
	}
	first := be.Count(nil)
	if first >= n {
		t.Fatalf("SIGINT stopped nothing: %d requests", first)
	}
	_, hint, ok := strings.Cut(out.String(), "otelstep replay: to continue: otelstep ")
	hint, _, _ = strings.Cut(hint, "\n")
	if !ok || strings.Contains(hint, "from-start") || strings.Contains(hint, testToken) {
		t.Fatalf("no hint to continue, or one that sends everything again:\n%s", out.String())
	}
	code, out2 := runBinary(t, []string{"OTEL_TOKEN=" + testToken}, strings.Fields(hint)...)
	if code != 0 {
		t.Fatalf("resume: exit %d:\n%s", code, out2)
	}
	// The resumed run's words add up: lines sent earlier and now are all.
	var earlier, now int
	if _, err := fmt.Sscanf(after(out2, "  traces   "), "%d lines", &now); err != nil {
		t.Fatalf("no traces line in:\n%s", out2)
	}
	if m := regexp.MustCompile(`\n  (\d+) lines? (was|were) sent by earlier runs`).FindStringSubmatch(out2); m != nil {
		earlier, _ = strconv.Atoi(m[1])
	}
	if earlier+now != n || earlier == 0 {
		t.Errorf("resumed run: %d lines now, %d sent earlier, want %d in all:\n%s", now, earlier, n, out2)
	}
	// The stopped run counted what it sent, which the resumed run calls
	// sent earlier.
	var firstLines int
	if m := regexp.MustCompile(`  traces   (\d+) lines?,`).FindStringSubmatch(out.String()); m != nil {
		firstLines, _ = strconv.Atoi(m[1])
	}
	if firstLines != earlier {
		t.Errorf("the stopped run says %d lines, the resumed one %d sent earlier:\n%s\n%s", firstLines, earlier, out.String(), out2)
	}
	// Every request that arrived, answered or not (the client gone
	// during the backend's delay).
	got := map[string]int{}
	for _, r := range be.Requests() {
		if r.Header.Get("Content-Encoding") != "gzip" || r.Traces == nil {
			t.Errorf("request %d: %s %q %v", r.N, r.Path, r.Header.Get("Content-Encoding"), r.DecodeErr)
		}
		for _, sp := range fakebackend.Spans(r.Traces.GetResourceSpans()) {
			got[sp.Name]++
		}
	}
	for i := range n {
		if c := got[fmt.Sprintf("s-%d", i)]; c != 1 {
			t.Errorf("s-%d arrived %d times", i, c)
		}
	}
	t.Logf("stopped after %d of %d requests; resumed", first, n)
}

// after is what follows the first sep in s ("" when none).
func after(s, sep string) string {
	_, a, _ := strings.Cut(s, sep)
	return a
}
