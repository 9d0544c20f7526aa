package replay

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
)

func TestNormalizeEndpoint(t *testing.T) {
	same := []string{
		"http://backend.example:4318",
		"http://backend.example:4318/",
		"HTTP://Backend.Example:4318//",
		" http://user:secret@backend.example:4318/?x=1#f",
	}
	for _, s := range same {
		got, err := NormalizeEndpoint(s)
		if err != nil || got != "http://backend.example:4318" {
			t.Errorf("%q: %q, %v", s, got, err)
		}
	}
	for in, want := range map[string]string{
		"http://b.example:80/":        "http://b.example",
		"https://b.example:443/otlp/": "https://b.example/otlp",
		"https://b.example:80":        "https://b.example:80",
		"http://[::1]:80/":            "http://[::1]",
		"http://[::1]:4318":           "http://[::1]:4318",
	} {
		if got, err := NormalizeEndpoint(in); err != nil || got != want {
			t.Errorf("%q: %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "backend:4318", "ftp://b.example", "http://"} {
		if _, err := NormalizeEndpoint(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// The exporter's delivery record and a replay to the same backend, each
// spelling the endpoint its own way, are one file.
func TestRecordAndReplayShareTheCheckpoint(t *testing.T) {
	f := filepath.Join(t.TempDir(), "traces.jsonl")
	if err := os.WriteFile(f, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec, err := OpenRecord(RecordOptions{File: f, Endpoint: "http://Backend.Example:80/", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	ins, err := resolve([]string{f})
	if err != nil {
		t.Fatal(err)
	}
	ep, err := NormalizeEndpoint("http://backend.example")
	if err != nil {
		t.Fatal(err)
	}
	if got := statePath(ins[0], "", stateKey(ep)); got != rec.Path() {
		t.Errorf("replay's checkpoint %s, the record %s", got, rec.Path())
	}
}
