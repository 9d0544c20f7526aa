package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// peerToken is the token the collector's own files carry (report/testdata).
const peerToken = "example-ingest-token"

// copyJob copies the collector's files of report/testdata/peer into a job
// folder's otel/ and returns the job folder.
func copyJob(t *testing.T) string {
	t.Helper()
	job := t.TempDir()
	otel := filepath.Join(job, "otel")
	if err := os.Mkdir(otel, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"metrics.jsonl", "traces.jsonl", "logs.jsonl"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "report", "testdata", "peer", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(otel, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return job
}

// listing is a folder's files with their sizes and times.
func listing(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		b.WriteString(p + " " + fi.Mode().String() + " " + fi.ModTime().Format(time.RFC3339Nano) + " " + strconv.FormatInt(fi.Size(), 10) + "\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestReportCommand runs `otelstep report` on the collector's files: the
// summary on stdout, the page where --out says, the job's folder untouched
// and the token in no output.
func TestReportCommand(t *testing.T) {
	job := copyJob(t)
	before := listing(t, job)
	out := filepath.Join(t.TempDir(), "page.html")
	cmd := exec.Command(buildBinary(t), "report", "--summary", "json", "--out", out, job)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	var doc struct {
		Jobs []struct {
			Dir     string
			Targets []struct{ Job string }
			Spans   []struct{ Service string }
		}
	}
	if err := json.Unmarshal([]byte(stdout.String()), &doc); err != nil {
		t.Fatalf("summary: %v\n%s", err, stdout.String())
	}
	if len(doc.Jobs) != 1 || doc.Jobs[0].Dir != job || len(doc.Jobs[0].Targets) != 1 || doc.Jobs[0].Targets[0].Job != "vllm" || len(doc.Jobs[0].Spans) != 3 {
		t.Errorf("summary: %+v", doc)
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(page), "<!DOCTYPE html>") || !strings.Contains(string(page), `data-panel="kv_cache_usage"`) {
		t.Errorf("page: %.200s", page)
	}
	for what, s := range map[string]string{"stdout": stdout.String(), "stderr": stderr.String(), "page": string(page)} {
		if strings.Contains(s, peerToken) {
			t.Errorf("%s holds the token", what)
		}
	}
	if after := listing(t, job); after != before {
		t.Errorf("the job's folder changed:\nbefore\n%s\nafter\n%s", before, after)
	}

	// Markdown is the default without --out; two DIRs are compared.
	code, md := runBinary(t, nil, "report", job, filepath.Join(job, "otel"))
	if code != 0 || !strings.Contains(md, "## Jobs compared") || strings.Contains(md, peerToken) {
		t.Errorf("exit %d:\n%s", code, md)
	}
}

func TestReportCommandErrors(t *testing.T) {
	if code, out := runBinary(t, nil, "report"); code != exitUsage || !strings.Contains(out, "no DIR") {
		t.Errorf("no DIR: exit %d: %s", code, out)
	}
	empty := t.TempDir()
	if code, out := runBinary(t, nil, "report", empty); code != exitFailure || !strings.Contains(out, empty) {
		t.Errorf("empty folder: exit %d: %s", code, out)
	}
	bad := filepath.Join(t.TempDir(), "panels.yaml")
	if err := os.WriteFile(bad, []byte("- id: mine\n  query: 'rate(x[5m]'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := runBinary(t, nil, "report", "--panels", bad, copyJob(t)); code != exitUsage || !strings.Contains(out, bad+": panels[0] (mine): query") {
		t.Errorf("bad panel: exit %d: %s", code, out)
	}
	if code, out := runBinary(t, nil, "report", "--summary", "xml", copyJob(t)); code != exitUsage || !strings.Contains(out, "--summary") {
		t.Errorf("bad --summary: exit %d: %s", code, out)
	}
}
