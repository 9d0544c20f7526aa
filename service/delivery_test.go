package service

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/otelstep/otelstep/config"
	"github.com/otelstep/otelstep/replay"
	"github.com/otelstep/otelstep/sink"
)

// The replay command names the endpoint without userinfo, the files with
// something left (quoted for a shell), the token's variable and the other
// headers by their variables, never a value.
func TestReplayCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "job 1", "otel")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "traces.jsonl")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rec, err := replay.OpenRecord(replay.RecordOptions{File: path, Endpoint: "https://user:pw@backend.example:4318"})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	line := "{\"resourceSpans\":[]}\n"
	if err := os.WriteFile(path, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &Service{
		cfg: &config.Config{OTLPHTTP: map[string]*config.OTLPHTTPExporter{"otlp_http": {
			Endpoint: "https://user:pw@backend.example:4318",
			Headers: map[string]string{"Authorization": "Bearer s3cret-token", "X-Scope-OrgID": "tenant-7",
				"X-Static": "static-v4lue"},
			HeaderVars: map[string][]string{"Authorization": {"OTEL_TOKEN"}, "X-Scope-OrgID": {"TENANT"}},
		}}},
	}
	recs := []*replay.Record{rec}
	if got := s.replayCommand("otlp_http", recs); got != "" {
		t.Fatalf("nothing left, yet a command: %s", got)
	}
	rec.Undelivered(sink.Line{Start: 0, End: int64(len(line)), Index: 0, Items: 3}, sink.LeftRefused)
	got := s.replayCommand("otlp_http", recs)
	want := `otelstep replay --endpoint https://backend.example:4318 --token-env OTEL_TOKEN --header "X-Scope-OrgID=${TENANT}" --header "X-Static=<X-Static as in the config>" '` + path + `'`
	if got != want {
		t.Fatalf("command\n%s\nwant\n%s", got, want)
	}
	for _, secret := range []string{"s3cret-token", "tenant-7", "static-v4lue", "pw@"} {
		if strings.Contains(got, secret) {
			t.Errorf("the command holds %q", secret)
		}
	}
	if bl := rec.Backlog(); bl.ForReplay.Batches != 1 || bl.ForReplay.Items != 3 || bl.ToBackfill != (sink.Lines{}) {
		t.Errorf("backlog %+v, want 1 refused batch of 3 items left for replay, none to backfill", bl)
	}
}
