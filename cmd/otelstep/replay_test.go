package main

import (
	"bytes"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkReplay replays the live run's JSONL folder into a second backend and
// requires it to receive exactly what the live backend did: the same
// resource-level messages (resources, points, spans, log records), each as
// many times, every resource with the token stamped and the header set.
// Then the same command again sends nothing.
func checkReplay(t *testing.T, otel string, live *backend) {
	t.Helper()
	be := &backend{spans: map[string]bool{}, logs: map[string]bool{}}
	srv := httptest.NewServer(be)
	defer srv.Close()
	env := []string{"OTEL_TOKEN=" + testToken}
	code, out := runBinary(t, env, "replay", "--endpoint", srv.URL, "--progress", "plain", otel)
	if code != 0 {
		t.Fatalf("replay exited %d:\n%s", code, out)
	}
	t.Logf("replay:\n%s", out)
	if strings.Contains(out, testToken) {
		t.Error("token found in replay's output")
	}
	be.mu.Lock()
	if be.dropped != 0 || be.badHeader != 0 {
		t.Errorf("replay: %d resources without the token attribute, %d requests with a bad header", be.dropped, be.badHeader)
	}
	if len(be.canon) == 0 {
		t.Fatal("replay delivered nothing")
	}
	for k, n := range live.canon {
		if be.canon[k] != n {
			t.Errorf("a %s message the live backend got %d times reached the replay backend %d times", strings.SplitN(k, "\x00", 2)[0], n, be.canon[k])
		}
	}
	for k, n := range be.canon {
		if _, ok := live.canon[k]; !ok {
			t.Errorf("replay sent a %s message (%d times) the live backend never got", strings.SplitN(k, "\x00", 2)[0], n)
		}
	}
	first := be.requests
	be.mu.Unlock()

	code, out = runBinary(t, env, "replay", "--endpoint", srv.URL, otel)
	be.mu.Lock()
	again := be.requests - first
	be.mu.Unlock()
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
	be := &backend{spans: map[string]bool{}, logs: map[string]bool{}}
	srv := httptest.NewServer(be)
	defer srv.Close()
	dir := t.TempDir()
	f := filepath.Join(dir, "traces.jsonl")
	if err := os.WriteFile(f, []byte(`{"resourceSpans":[]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"OTEL_TOKEN=", "MY_TOKEN="}
	for _, args := range [][]string{
		{"replay", "--endpoint", srv.URL, f},
		{"replay", "--endpoint", srv.URL, "--token-env", "MY_TOKEN", f},
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
	if be.requests != 0 {
		t.Errorf("%d requests sent without a token", be.requests)
	}
	code, out := runBinary(t, []string{"OTEL_TOKEN=x"}, "replay", "--endpoint", srv.URL, filepath.Join(dir, "nope", "*.jsonl"))
	if code != 2 || !strings.Contains(out, "matches nothing") {
		t.Errorf("bad path: exit %d:\n%s", code, out)
	}
}
