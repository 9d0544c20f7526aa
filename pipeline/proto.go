package pipeline

import (
	"fmt"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// UnmarshalRequest decodes a protobuf export request of signal s (an
// ExportMetricsServiceRequest, ExportTraceServiceRequest or
// ExportLogsServiceRequest) into a Batch: what an OTLP/HTTP receiver and a
// test or benchmark backend all do with a request body.
func UnmarshalRequest(s Signal, data []byte) (*Batch, error) {
	b := &Batch{Signal: s}
	var err error
	switch s {
	case Metrics:
		var m colmetricspb.ExportMetricsServiceRequest
		err = proto.Unmarshal(data, &m)
		b.Metrics = m.ResourceMetrics
	case Traces:
		var m coltracepb.ExportTraceServiceRequest
		err = proto.Unmarshal(data, &m)
		b.Traces = m.ResourceSpans
	case Logs:
		var m collogspb.ExportLogsServiceRequest
		err = proto.Unmarshal(data, &m)
		b.Logs = m.ResourceLogs
	default:
		return nil, fmt.Errorf("unknown signal %d", s)
	}
	if err != nil {
		return nil, fmt.Errorf("%s export request: %w", s, err)
	}
	return b, nil
}

// SignalOfPath is the signal of an OTLP/HTTP path (/v1/metrics, /v1/traces,
// /v1/logs).
func SignalOfPath(path string) (Signal, bool) {
	switch path {
	case "/v1/metrics":
		return Metrics, true
	case "/v1/traces":
		return Traces, true
	case "/v1/logs":
		return Logs, true
	}
	return 0, false
}
