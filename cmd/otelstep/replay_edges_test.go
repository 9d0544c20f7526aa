package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// logsLine is a logs export request of n records prefix-0..n-1.
func logsLine(prefix string, n int) string {
	recs := make([]string, n)
	for i := range recs {
		recs[i] = fmt.Sprintf(`{"body":{"stringValue":"%s-%d"}}`, prefix, i)
	}
	return `{"resourceLogs":[{"scopeLogs":[{"logRecords":[` + strings.Join(recs, ",") + `]}]}]}`
}

// Replay's edges through the binary: a line longer than --batch-bytes is
// sent in pieces (exit 0), one longer than --max-line-bytes is reported
// and skipped (exit 1); a last line with no newline yet is left for the
// next run, not skipped (exit 0, 1 with --strict); and a run over a file
// whose lines an earlier run skipped exits 1, saying so once, until
// --accept-skipped acknowledges them.
func TestReplayEdgesExitStatus(t *testing.T) {
	be := newBackend(t)
	dir := t.TempDir()
	env := []string{"OTEL_TOKEN=" + testToken}
	replay := func(f string, extra ...string) (int, string) {
		args := append([]string{"replay", "--endpoint", be.URL(), "--progress", "none", "--state", filepath.Join(dir, "st")}, extra...)
		return runBinary(t, env, append(args, f)...)
	}

	long := filepath.Join(dir, "long.jsonl")
	line := logsLine("long", 2000)
	os.WriteFile(long, []byte(logsLine("short", 1)+"\n"+line+"\n"), 0o644)
	code, out := replay(long, "--batch-bytes", "4096")
	seen := be.seen()
	requests, got := seen.requests, 0
	for i := range 2000 {
		if seen.logs[fmt.Sprintf("long-%d", i)] {
			got++
		}
	}
	if code != 0 || got != 2000 || requests < len(line)/4096 {
		t.Errorf("a line of %d bytes with --batch-bytes 4096: exit %d, %d of 2000 records in %d requests:\n%s", len(line), code, got, requests, shown(out))
	}

	tooLong := filepath.Join(dir, "toolong.jsonl")
	os.WriteFile(tooLong, []byte(logsLine("fits", 1)+"\n"+logsLine("over", 200)+"\n"), 0o644)
	code, out = replay(tooLong, "--max-line-bytes", "1000")
	if code != 1 || !strings.Contains(out, tooLong+":2: line too long") || !be.seen().logs["fits-0"] {
		t.Errorf("a line over --max-line-bytes: exit %d, want 1 naming it:\n%s", code, shown(out))
	}

	partial := filepath.Join(dir, "partial.jsonl")
	whole := logsLine("part", 1)
	os.WriteFile(partial, []byte(logsLine("done", 1)+"\n"+whole[:len(whole)/2]), 0o644)
	code, out = replay(partial)
	if code != 0 || !strings.Contains(out, partial+":2: the last line has no newline yet") || strings.Contains(out, "skipped") {
		t.Errorf("a last line being written: exit %d, want 0, left for the next run:\n%s", code, shown(out))
	}
	fh, _ := os.OpenFile(partial, os.O_WRONLY|os.O_APPEND, 0)
	fh.WriteString(whole[len(whole)/2:] + "\n")
	fh.Close()
	code, out = replay(partial)
	if code != 0 || !be.seen().logs["part-0"] {
		t.Errorf("the line finished: exit %d, sent %v:\n%s", code, be.seen().logs["part-0"], shown(out))
	}

	corrupt := filepath.Join(dir, "corrupt.jsonl")
	os.WriteFile(corrupt, []byte("{\"resourceLogs\":[{]}\n"), 0o644)
	if code, out = replay(corrupt); code != 1 {
		t.Errorf("a corrupt line: exit %d, want 1:\n%s", code, shown(out))
	}
	code, out = replay(corrupt)
	if code != 1 || !strings.Contains(out, "1 line was skipped by earlier runs and never sent") || strings.Contains(out, "sent by earlier runs") ||
		strings.Contains(out, corrupt+":1") {
		t.Errorf("a rerun over the skipped line: exit %d, want 1 saying why, once, not listing it again, nor calling it sent:\n%s", code, shown(out))
	}
	// Acknowledged once, it fails no later run.
	code, out = replay(corrupt, "--accept-skipped")
	if code != 0 || !strings.Contains(out, "1 line was skipped by earlier runs, never sent, and accepted (--accept-skipped, 1 of them by this run)") {
		t.Errorf("--accept-skipped: exit %d, want 0:\n%s", code, shown(out))
	}
	code, out = replay(corrupt)
	if code != 0 || !strings.Contains(out, "1 line was skipped by earlier runs, never sent, and accepted (--accept-skipped)") {
		t.Errorf("a run after --accept-skipped: exit %d, want 0:\n%s", code, shown(out))
	}

	// An enum name OTLP does not have is refused, as the collector
	// refuses it, not sent as 0.
	enum := filepath.Join(dir, "enum.jsonl")
	os.WriteFile(enum, []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","name":"nope","kind":"SPAN_KIND_NOPE"}]}]}]}`+"\n"), 0o644)
	code, out = replay(enum)
	if code != 1 || !strings.Contains(out, enum+":1: corrupt") || !strings.Contains(out, "kind") || !strings.Contains(out, "unknown enum name") || be.seen().spans["nope"] {
		t.Errorf("an unknown enum name: exit %d, want 1 naming the line, nothing sent:\n%s", code, shown(out))
	}

	// A killed job's cut last line: reported, kept, exit 0; 1 with --strict.
	cut := filepath.Join(dir, "cut.jsonl")
	os.WriteFile(cut, []byte(logsLine("before-cut", 1)+"\n"+whole[:len(whole)/3]), 0o644)
	code, out = replay(cut, "--strict")
	if code != 1 || !strings.Contains(out, cut+":2: the last line has no newline yet") || !strings.Contains(out, "--strict: 1 file ends in a line with no newline") || !be.seen().logs["before-cut-0"] {
		t.Errorf("a cut last line with --strict: exit %d, want 1:\n%s", code, shown(out))
	}
	code, out = replay(cut)
	if code != 0 || !strings.Contains(out, "1 file ends in a line with no newline") || !strings.Contains(out, cut+":2:") ||
		!strings.Contains(out, "1 line was sent by earlier runs") || !strings.Contains(out, "1 file,") {
		t.Errorf("a cut last line, again: exit %d, want 0, still kept:\n%s", code, shown(out))
	}
}
