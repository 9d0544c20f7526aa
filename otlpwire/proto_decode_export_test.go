package otlpwire

import (
	"errors"

	"github.com/otelstep/otelstep/pipeline"
)

// Internals for the external tests of the protobuf decoder (proto_decode_*_test.go).

// DecodeLenient decodes like UnmarshalRequest but, as proto.Unmarshal does,
// skips a known field with an unexpected wire type instead of failing, so
// tests can compare the two on any input.
func DecodeLenient(s pipeline.Signal, data []byte) (*pipeline.Batch, error) {
	d := getDecoder(append([]byte(nil), data...))
	defer putDecoder(d)
	d.lenient = true
	b := &pipeline.Batch{Signal: s}
	var e *DecodeError
	switch s {
	case pipeline.Traces:
		b.Traces, e = d.traces()
	case pipeline.Logs:
		b.Logs, e = d.logs()
	default:
		b.Metrics, e = d.metrics()
	}
	if e != nil {
		return nil, e.done()
	}
	return b, nil
}

// IsWireTypeError reports whether err is the decoder's error for a known
// field with an unexpected wire type (which proto.Unmarshal accepts as an
// unknown field).
func IsWireTypeError(err error) bool {
	var e *DecodeError
	return errors.As(err, &e) && e.wireType
}

const MaxDepth = maxDepth

// CheckItem runs both checks of a span (Traces) or log record (Logs)
// record: the validator and decoding into scratch.
func CheckItem(s pipeline.Signal, rec []byte, lenient bool) (valid, decodes bool) {
	d := getDecoder(append([]byte(nil), rec...))
	defer putDecoder(d)
	d.lenient = lenient
	sd := d.scratchDecoder()
	if s == pipeline.Traces {
		return d.validSpan(0, len(rec)), sd.span(sd.span0(), 0, len(rec)) == nil
	}
	return d.validLogRecord(0, len(rec)), sd.logRecord(sd.logRecord0(), 0, len(rec)) == nil
}
