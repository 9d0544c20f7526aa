package main

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/otelstep/otelstep/bench"
)

// The bench tests measure a set amount of work (--count), not a window of
// time, and check that the report is whole and its counts agree: what
// reached the discard backend is what the JSONL file holds, or what the
// load generator had accepted. How fast it went is not checked: that is
// the machine's, and on a busy one a short window can hold nothing.

// TestBenchScrapeRuns runs `otelstep bench scrape` as a user would.
func TestBenchScrapeRuns(t *testing.T) {
	const count = 1000
	code, out := runBinary(t, nil, "bench", "scrape", "--pages", "vllm,gen:120:12", "--targets", "2",
		"--interval", "250ms", "--warmup", "0s", "--count", fmt.Sprint(count), "--json")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	var rep bench.ScrapeReport
	if err := json.Unmarshal([]byte(jsonPart(out)), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(rep.Results) != 1 || rep.Targets != 4 || rep.SamplesPerPass <= 0 {
		t.Fatalf("report: %+v", rep)
	}
	r := rep.Results[0]
	if r.Samples < count || r.WindowSeconds <= 0 || r.PeakRSSBytes <= 0 {
		t.Errorf("window: %d samples in %gs (want at least %d), peak RSS %d", r.Samples, r.WindowSeconds, count, r.PeakRSSBytes)
	}
	if r.CPUSeconds < 0 || (r.CPUSeconds > 0 && r.SamplesPerCPUSecond != float64(r.Samples)/r.CPUSeconds) {
		t.Errorf("%d samples, %g CPU seconds, %g samples per CPU-second", r.Samples, r.CPUSeconds, r.SamplesPerCPUSecond)
	}
	// SIGTERM scrapes every target once more: the backend has points
	// however few scrapes the window held.
	if r.BackendPoints == 0 || r.JSONLPoints != r.BackendPoints || r.Dropped != 0 || r.BadRequests != 0 {
		t.Errorf("points: JSONL %d, backend %d, dropped %d, bad requests %d", r.JSONLPoints, r.BackendPoints, r.Dropped, r.BadRequests)
	}
}

func TestBenchOTLPRuns(t *testing.T) {
	const count = 500
	for _, proto := range []string{"grpc", "http"} {
		code, out := runBinary(t, nil, "bench", "otlp", "--protocol", proto, "--signal", "traces", "--batch", "50",
			"--workers", "2", "--warmup", "0s", "--count", fmt.Sprint(count), "--json")
		if code != 0 {
			t.Fatalf("%s: exit %d:\n%s", proto, code, out)
		}
		var rep bench.OTLPReport
		if err := json.Unmarshal([]byte(jsonPart(out)), &rep); err != nil {
			t.Fatalf("%s: not JSON: %v\n%s", proto, err, out)
		}
		r := rep.Results[0]
		if r.Items < count || r.Errors != 0 || r.PeakRSSBytes <= 0 {
			t.Errorf("%s: %d spans accepted in the window (want at least %d), %d errors: %+v", proto, r.Items, count, r.Errors, r)
		}
		if r.Sent < r.Items || r.BackendItems != r.Sent {
			t.Errorf("%s: %d spans accepted in all, %d in the window, %d reached the backend", proto, r.Sent, r.Items, r.BackendItems)
		}
		if r.BackendBytes <= 0 || r.BackendBytesPerItem != float64(r.BackendBytes)/float64(r.BackendItems) {
			t.Errorf("%s: the backend received %d bytes for %d spans, reported as %g a span", proto, r.BackendBytes, r.BackendItems, r.BackendBytesPerItem)
		}
	}
}

// jsonPart is the output from its first '{' (the progress lines come
// first: stdout and stderr are combined).
func jsonPart(s string) string {
	for i, c := range s {
		if c == '{' {
			return s[i:]
		}
	}
	return s
}
