package pipeline

import (
	"bytes"
	"fmt"
)

// UnmarshalRequest decodes a protobuf export request of signal s (an
// ExportMetricsServiceRequest, ExportTraceServiceRequest or
// ExportLogsServiceRequest) into a Batch: what an OTLP/HTTP receiver and a
// test or benchmark backend all do with a request body. It uses the
// reflection-free decoder (protodec.go); the batch does not alias data.
func UnmarshalRequest(s Signal, data []byte) (*Batch, error) {
	return UnmarshalOwnedRequest(s, bytes.Clone(data))
}

// UnmarshalOwnedRequest is UnmarshalRequest without the copy: the caller
// hands buf over (as the OTLP/HTTP receiver does with a body it read into a
// buffer of its own), and nobody may modify buf afterwards: the batch's
// strings and ids point into it.
func UnmarshalOwnedRequest(s Signal, buf []byte) (*Batch, error) {
	b := &Batch{Signal: s}
	var err error
	switch s {
	case Metrics:
		b.Metrics, err = DecodeMetricsOwned(buf)
	case Traces:
		b.Traces, err = DecodeTracesOwned(buf)
	case Logs:
		b.Logs, err = DecodeLogsOwned(buf)
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
