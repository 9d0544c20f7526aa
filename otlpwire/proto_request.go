package otlpwire

import (
	"bytes"
	"fmt"

	"github.com/otelstep/otelstep/pipeline"
)

// UnmarshalRequest decodes a protobuf export request of signal s (an
// ExportMetricsServiceRequest, ExportTraceServiceRequest or
// ExportLogsServiceRequest) into a pipeline.Batch: what an OTLP/HTTP receiver and a
// test or benchmark backend all do with a request body. It uses the
// reflection-free decoder (proto_decode.go); the batch does not alias data.
func UnmarshalRequest(s pipeline.Signal, data []byte) (*pipeline.Batch, error) {
	return UnmarshalOwnedRequest(s, bytes.Clone(data))
}

// UnmarshalOwnedRequest is UnmarshalRequest without the copy: the caller
// hands buf over (as the OTLP/HTTP receiver does with a body it read into a
// buffer of its own), and nobody may modify buf afterwards: the batch's
// strings and ids point into it.
func UnmarshalOwnedRequest(s pipeline.Signal, buf []byte) (*pipeline.Batch, error) {
	b := &pipeline.Batch{Signal: s}
	if err := DecodeRequestOwned(b, buf); err != nil {
		return nil, fmt.Errorf("%s export request: %w", s, err)
	}
	return b, nil
}
