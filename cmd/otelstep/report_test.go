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
	var doc struct {
		Jobs []struct {
			Dir     string
			Targets []struct{ Job string }
			Spans   []struct{ Service string }
		}
	}
	page := reportJSON(t, job, peerToken, &doc)
	if len(doc.Jobs) != 1 || doc.Jobs[0].Dir != job || len(doc.Jobs[0].Targets) != 1 || doc.Jobs[0].Targets[0].Job != "vllm" || len(doc.Jobs[0].Spans) != 3 {
		t.Errorf("summary: %+v", doc)
	}
	if !strings.HasPrefix(page, "<!DOCTYPE html>") || !strings.Contains(page, `data-panel="kv_cache_usage"`) {
		t.Errorf("page: %.200s", page)
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
	// A query that parses but fails when evaluated is reported; the rest is written.
	broken := filepath.Join(t.TempDir(), "panels.yaml")
	if err := os.WriteFile(broken, []byte(`- {id: broken, query: 'label_replace(up, "a", "$1", "job", "(")'}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := runBinary(t, nil, "report", "--panels", broken, "--summary", "json", copyJob(t)); code != exitOK || !strings.Contains(out, "panel broken: ") || !strings.Contains(out, `"jobs"`) {
		t.Errorf("panel failing at evaluation: exit %d: %s", code, out)
	}
	if code, out := runBinary(t, nil, "report", "--summary", "xml", copyJob(t)); code != exitUsage || !strings.Contains(out, "--summary") {
		t.Errorf("bad --summary: exit %d: %s", code, out)
	}
}

// checkReport runs `otelstep report` on the files otelstep itself wrote in
// TestEndToEnd (vllm and node pages scraped, dcgm down, the SDK's spans and
// logs): the figures are those of what was sent, the folder is untouched
// and the token is nowhere.
func checkReport(t *testing.T, job, token string, nSpans, nLogs int) {
	t.Helper()
	var doc struct {
		Jobs []struct {
			Resource map[string]string
			Panels   map[string]struct {
				Series []struct{ Labels map[string]string }
			}
			Spans []struct {
				Service, Name string
				Count         int
			}
			Logs struct {
				BySeverity map[string]int `json:"by_severity"`
			}
			Targets []struct {
				Job, Instance string
				UpRatio       float64 `json:"up_ratio"`
				Scrapes       int
			}
			Files []struct{ Skipped int }
		}
	}
	reportJSON(t, job, token, &doc)
	if len(doc.Jobs) != 1 {
		t.Fatalf("report summary: %d jobs, want 1", len(doc.Jobs))
	}
	j := doc.Jobs[0]
	// The job's resource processor sets every resource's service.name, so
	// Prometheus's job label is the registered service's: the scrape job is
	// told by the instance.
	up := map[string]float64{}
	for _, tg := range j.Targets {
		name := tg.Instance
		if n, ok := jobByInstance.Load(tg.Instance); ok {
			name = n.(string)
		}
		if tg.Job != "my-registered-service" {
			t.Errorf("report: target %+v: job label is not service.name's", tg)
		}
		up[name] = tg.UpRatio
		if tg.Scrapes < 2 {
			t.Errorf("report: target %s: %d scrapes, want the first and the final", tg.Job, tg.Scrapes)
		}
	}
	if up["vllm-policy"] != 1 || up["node"] != 1 || up["dcgm"] != 0 || len(up) != 3 {
		t.Errorf("report: targets' up ratios %v, want vllm-policy and node 1, dcgm 0", up)
	}
	for i, s := range j.Spans {
		if s.Service != "gym-vllm" || s.Count != 1 {
			t.Errorf("report: span %d: %+v, want one of service.name.override gym-vllm", i, s)
		}
	}
	for _, id := range []string{"requests_running", "kv_cache_usage", "node_memory_used"} {
		if len(j.Panels[id].Series) == 0 {
			t.Errorf("report: panel %s has no series", id)
		}
	}
	if len(j.Spans) != nSpans {
		t.Errorf("report: %d span names, want %d", len(j.Spans), nSpans)
	}
	if j.Logs.BySeverity["INFO"] != nLogs {
		t.Errorf("report: logs %v, want %d INFO", j.Logs.BySeverity, nLogs)
	}
	if j.Resource["benchmark"] != "scicode" || j.Resource["slurm_job_id"] != "12345" {
		t.Errorf("report: resource %v", j.Resource)
	}
	for _, f := range j.Files {
		if f.Skipped != 0 {
			t.Errorf("report: skipped lines in otelstep's own files: %+v", j.Files)
		}
	}
}

// reportJSON runs `otelstep report --summary json --out page.html job`,
// decodes the summary into doc and returns the page. The command must
// succeed, leave the job's folder as it was and hold the token in no
// output.
func reportJSON(t *testing.T, job, token string, doc any) string {
	t.Helper()
	before := listing(t, job)
	out := filepath.Join(t.TempDir(), "page.html")
	cmd := exec.Command(buildBinary(t), "report", "--summary", "json", "--out", out, job)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("report: %v: %s", err, stderr.String())
	}
	if err := json.Unmarshal([]byte(stdout.String()), doc); err != nil {
		t.Fatalf("report summary: %v\n%s", err, stdout.String())
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for what, s := range map[string]string{"stdout": stdout.String(), "stderr": stderr.String(), "page": string(page)} {
		if strings.Contains(s, token) {
			t.Errorf("report: %s holds the token", what)
		}
	}
	if after := listing(t, job); after != before {
		t.Errorf("report changed the job's folder:\nbefore\n%s\nafter\n%s", before, after)
	}
	return string(page)
}
