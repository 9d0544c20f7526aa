package main

import (
	"strings"
	"testing"
)

// Each request of the schema gets its signal's entry points, named for it;
// a request whose name is no field of pipeline.Batch fails the generation
// rather than writing entry points nothing calls.
func TestAPIEverySignal(t *testing.T) {
	s, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	files, err := genAPI(s)
	if err != nil {
		t.Fatal(err)
	}
	src := string(files[0].Src)
	for _, want := range []string{
		"func DecodeTracesOwned(", "func DecodeMetricsOwned(", "func DecodeLogsOwned(",
		"func (e *ProtoEncoder) AppendTracesRequest(", "func (e *ProtoEncoder) AppendMetricsRequest(", "func (e *ProtoEncoder) AppendLogsRequest(",
		"func DecodeTraces(", "func DecodeMetrics(", "func DecodeLogs(",
		"func AppendTraces(", "func AppendMetrics(", "func AppendLogs(",
		"func AppendResourceSpans(", "func (e *MetricsEncoder) AppendResourceMetrics(", "func AppendResourceLogs(",
		"case pipeline.Traces:", "case pipeline.Metrics:", "case pipeline.Logs:",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("generated_api.go has no %q", want)
		}
	}

	s.Message(coltrace + "ExportTraceServiceRequest").Choice.Name = "spans"
	if _, err := genAPI(s); err == nil || !strings.Contains(err.Error(), "Spans") {
		t.Errorf("a request named for no batch field: %v", err)
	}
}
