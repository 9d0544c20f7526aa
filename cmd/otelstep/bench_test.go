package main

import (
	"encoding/json"
	"testing"

	"github.com/otelstep/otelstep/bench"
)

// TestBenchScrapeRuns runs `otelstep bench scrape` briefly as a user would
// and checks the report is whole and consistent: it measured something,
// and what reached the discard backend is what the JSONL file holds.
func TestBenchScrapeRuns(t *testing.T) {
	code, out := runBinary(t, nil, "bench", "scrape", "--pages", "vllm,gen:120:12", "--targets", "2",
		"--interval", "250ms", "--warmup", "600ms", "--duration", "1s", "--json")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	var rep bench.ScrapeReport
	if err := json.Unmarshal([]byte(jsonPart(out)), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(rep.Results) != 1 || rep.Targets != 4 || rep.TextparseSamplesPerSecond <= 0 {
		t.Fatalf("report: %+v", rep)
	}
	r := rep.Results[0]
	if r.Samples <= 0 || r.SamplesPerSecond <= 0 || r.PeakRSSBytes <= 0 || r.AllocsPerSample == nil {
		t.Errorf("nothing measured: %+v", r)
	}
	if r.BackendPoints == 0 || r.JSONLPoints != r.BackendPoints || r.Dropped != 0 || r.BadRequests != 0 {
		t.Errorf("points: JSONL %d, backend %d, dropped %d, bad requests %d", r.JSONLPoints, r.BackendPoints, r.Dropped, r.BadRequests)
	}
	if r.ScrapeP99Seconds <= 0 || r.JSONLBytesPerSample <= 0 || r.BackendBytesPerSample <= 0 {
		t.Errorf("per-sample figures missing: %+v", r)
	}
}

func TestBenchOTLPRuns(t *testing.T) {
	for _, proto := range []string{"grpc", "http"} {
		code, out := runBinary(t, nil, "bench", "otlp", "--protocol", proto, "--signal", "traces", "--batch", "50",
			"--workers", "2", "--warmup", "300ms", "--duration", "700ms", "--json")
		if code != 0 {
			t.Fatalf("%s: exit %d:\n%s", proto, code, out)
		}
		var rep bench.OTLPReport
		if err := json.Unmarshal([]byte(jsonPart(out)), &rep); err != nil {
			t.Fatalf("%s: not JSON: %v\n%s", proto, err, out)
		}
		r := rep.Results[0]
		if r.Items <= 0 || r.ItemsPerCPUSecond <= 0 || r.Errors != 0 {
			t.Errorf("%s: %+v", proto, r)
		}
		if r.BackendItems != r.Sent {
			t.Errorf("%s: %d spans accepted, %d reached the backend", proto, r.Sent, r.BackendItems)
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
