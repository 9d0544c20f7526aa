package otlpwire

import (
	"bytes"
	"os"
	"testing"

	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
)

// forLines calls fn with every line of a JSONL fixture.
func forLines(t testing.TB, path string, fn func(line []byte)) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		fn(l)
	}
}

func logsFixture(t testing.TB) []*logspb.ResourceLogs {
	t.Helper()
	var out []*logspb.ResourceLogs
	forLines(t, "testdata/logs.peer.jsonl", func(l []byte) {
		req, err := DecodeLogs(l)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, req.ResourceLogs...)
	})
	return out
}
