package replay

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/otelstep/otelstep/sink"
)

// FuzzReplayFile replays a file of any content to a backend on loopback
// that takes whatever decodes, with small batch and line limits (so that
// lines are split into requests, and some are too long), then replays it
// again. Nothing may panic, and the summary must account for every line:
// each newline-terminated line is decoded as a signal or skipped as no
// export request, too long or blank, a last line without a newline is left
// pending; the backend refuses nothing replay sends, has every item the
// summary says was sent, each resource stamped with the token once; and
// the second replay sends nothing.
func FuzzReplayFile(f *testing.F) {
	for _, name := range []string{"traces.peer.jsonl", "logs.peer.jsonl", "metrics.peer-gym-v1.jsonl"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		for i, line := range bytes.SplitAfter(data, []byte("\n")) {
			if i == 3 {
				break
			}
			if len(line) < 4<<10 {
				f.Add(line)
			}
		}
	}
	f.Add([]byte(traceLineString("a") + "\n\n" + "not json\n" + traceLineString("b")))
	f.Add([]byte(`{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"g","gauge":{"dataPoints":[{"asDouble":1}]}}]}]}]}` + "\n" +
		`{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":{"stringValue":"x"}}]}]}]}` + "\n"))
	f.Add([]byte(`{"resource_spans":[{"scope_spans":[{"spans":[{"trace_id":"0102030405060708090a0b0c0d0e0f10","span_id":"0102030405060708"}]}]}]}` + "\n"))

	be := newBackend()
	srv := be
	defer srv.Close()
	f.Fuzz(func(t *testing.T, content []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "traces.jsonl")
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		since := len(be.Requests()) // this input's requests come after
		o := Options{Endpoint: srv.URL(), Token: token, Paths: []string{path}, StateDir: filepath.Join(dir, "state"),
			BatchBytes: 1 << 10, MaxLineBytes: 8 << 10, Concurrency: 2, CheckpointEvery: time.Hour,
			Retry: sink.RetryOptions{InitialInterval: time.Millisecond, MaxInterval: time.Millisecond, MaxElapsedTime: time.Second}}
		s, err := Run(context.Background(), o)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if s.Err != nil {
			t.Fatalf("the replay stopped: %v", s.Err)
		}
		lines := int64(bytes.Count(content, []byte("\n")))
		pending := 0
		if len(content) > 0 && content[len(content)-1] != '\n' {
			pending = 1
		}
		var counted, items int64
		for _, ss := range s.Signals {
			counted += ss.Lines
			items += ss.Items
			if ss.Skipped[reasonRejected] > 0 {
				t.Fatalf("the backend refused what replay sent: %v", s.Problems)
			}
		}
		for _, n := range s.Other {
			counted += n
		}
		if counted != lines || s.Pending != pending {
			t.Fatalf("%d lines and %d pending, the summary counts %d and %d: %+v", lines, pending, counted, s.Pending, s)
		}
		v := be.viewSince(since)
		got := int64(v.points + v.logs)
		for _, n := range v.spans {
			got += int64(n)
		}
		badHeader, badAttr, requests := v.badHeader, v.badAttr, v.requests
		if got != items || badHeader != 0 || badAttr != 0 {
			t.Fatalf("the backend has %d items (the summary says %d sent), %d requests without the token, %d resources not stamped once", got, items, badHeader, badAttr)
		}
		s2, err := Run(context.Background(), o)
		if err != nil {
			t.Fatalf("Run again: %v", err)
		}
		again := be.viewSince(since).requests - requests
		if again != 0 || s2.Err != nil {
			t.Fatalf("a second replay sent %d requests (%v)", again, s2.Err)
		}
	})
}

// traceLineString is traceLine as a string.
func traceLineString(name string) string { return string(traceLine(name)) }
