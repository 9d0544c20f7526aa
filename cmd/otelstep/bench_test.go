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

// TestBenchOTLPRuns runs `otelstep bench otlp` over gRPC at a --rate,
// and over HTTP as fast as accepted in two rounds: each round's row is
// whole, and the report's counts are the rounds' totals.
func TestBenchOTLPRuns(t *testing.T) {
	const count = 500
	for _, c := range []struct {
		proto  string
		rate   string
		rounds int
	}{{"grpc", "200", 1}, {"http", "0", 2}} {
		code, out := runBinary(t, nil, "bench", "otlp", "--protocol", c.proto, "--signal", "traces", "--batch", "50",
			"--workers", "2", "--warmup", "0s", "--count", fmt.Sprint(count), "--rate", c.rate, "--rounds", fmt.Sprint(c.rounds), "--json")
		if code != 0 {
			t.Fatalf("%s: exit %d:\n%s", c.proto, code, out)
		}
		var rep bench.OTLPReport
		if err := json.Unmarshal([]byte(jsonPart(out)), &rep); err != nil {
			t.Fatalf("%s: not JSON: %v\n%s", c.proto, err, out)
		}
		rows := []bench.OTLPResult{rep.Results[0]}
		if c.rounds > 1 {
			if len(rep.Rounds) != c.rounds {
				t.Fatalf("%s: %d rounds in the report, want %d", c.proto, len(rep.Rounds), c.rounds)
			}
			rows = nil
			var sent, backend int64
			for _, rd := range rep.Rounds {
				if len(rd.Results) != 1 || len(rd.Order) != 1 || rd.Order[0] != "otelstep" {
					t.Fatalf("%s: round %+v", c.proto, rd)
				}
				rows = append(rows, rd.Results[0])
				sent, backend = sent+rd.Results[0].Accepted, backend+rd.Results[0].BackendItems
			}
			if r := rep.Results[0]; r.Accepted != sent || r.BackendItems != backend {
				t.Errorf("%s: report: %d accepted, %d at the backend; the rounds' totals: %d, %d", c.proto, r.Accepted, r.BackendItems, sent, backend)
			}
		}
		for _, r := range rows {
			if r.Items < count || r.Errors != 0 || r.PeakRSSBytes <= 0 {
				t.Errorf("%s: %d spans accepted in the window (want at least %d), %d errors: %+v", c.proto, r.Items, count, r.Errors, r)
			}
			if r.Accepted < r.Items || r.BackendItems != r.Accepted {
				t.Errorf("%s: %d spans accepted in all, %d in the window, %d reached the backend", c.proto, r.Accepted, r.Items, r.BackendItems)
			}
			// Offered only at a rate. Accepted in the window is what was
			// sent in it, and up to a request a worker (2 of 50 spans)
			// sent before it.
			if (c.rate != "0") != (r.OfferedPerSecond != nil) || r.SentPerSecond*r.WindowSeconds+2*50+0.5 < float64(r.Items) {
				t.Errorf("%s at --rate %s: offered %v, sent %g, accepted %g spans/s", c.proto, c.rate, r.OfferedPerSecond, r.SentPerSecond, r.ItemsPerSecond)
			}
			if r.BackendBytes <= 0 || r.BackendBytesPerItem != float64(r.BackendBytes)/float64(r.BackendItems) {
				t.Errorf("%s: the backend received %d bytes for %d spans, reported as %g a span", c.proto, r.BackendBytes, r.BackendItems, r.BackendBytesPerItem)
			}
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
