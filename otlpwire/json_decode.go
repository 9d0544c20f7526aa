package otlpwire

import (
	"fmt"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
)

// The decoders are written out per message rather than driven by protobuf
// reflection: protojson spends most of its time in reflection and
// allocation. The per-message code is generated from the OTLP descriptors
// (generated_json_decode.go, by otlpwire/internal/gen): each message has an
// index function mapping both JSON spellings of a field name to a small
// field number and the canonical name (for error paths), and a decode
// method that fills the generated struct with the scanner's primitives
// (json_scan*.go). What is written by hand is that, the member loop below,
// the pools (json_decode_pool.go) and the fast paths (json_decode_fast.go).

// DecodeMetrics parses an OTLP/JSON ExportMetricsServiceRequest as the spec
// and the OpenTelemetry Collector write it: hex trace and span ids, camelCase
// or snake_case field names, 64-bit integers as strings or numbers, enums as
// integers or names (a name the enum does not have is an error, as in the
// collector). Unknown fields are ignored.
func DecodeMetrics(data []byte) (*colmetricspb.ExportMetricsServiceRequest, error) {
	req := &colmetricspb.ExportMetricsServiceRequest{}
	d := newDecoder(data)
	if err := d.document(func() error { return d.decodeExportMetricsServiceRequest(req) }); err != nil {
		return nil, fmt.Errorf("otlpwire: decode OTLP/JSON metrics: %w", err)
	}
	return req, nil
}

// DecodeTraces parses an OTLP/JSON ExportTraceServiceRequest; see DecodeMetrics.
func DecodeTraces(data []byte) (*coltracepb.ExportTraceServiceRequest, error) {
	req := &coltracepb.ExportTraceServiceRequest{}
	d := newDecoder(data)
	if err := d.document(func() error { return d.decodeExportTraceServiceRequest(req) }); err != nil {
		return nil, fmt.Errorf("otlpwire: decode OTLP/JSON traces: %w", err)
	}
	return req, nil
}

// DecodeLogs parses an OTLP/JSON ExportLogsServiceRequest; see DecodeMetrics.
func DecodeLogs(data []byte) (*collogspb.ExportLogsServiceRequest, error) {
	req := &collogspb.ExportLogsServiceRequest{}
	d := newDecoder(data)
	if err := d.document(func() error { return d.decodeExportLogsServiceRequest(req) }); err != nil {
		return nil, fmt.Errorf("otlpwire: decode OTLP/JSON logs: %w", err)
	}
	return req, nil
}

func newDecoder(data []byte) *jsonDecoder {
	return &jsonDecoder{b: data}
}

// document decodes the whole input as one value with decode: whitespace
// around it is allowed, anything else after it is an error.
func (d *jsonDecoder) document(decode func() error) error {
	d.skipWS()
	if err := decode(); err != nil {
		return err
	}
	d.skipWS()
	if d.pos != len(d.b) {
		return d.fail(d.pos, "unexpected data after the top-level object")
	}
	return nil
}

// unknownField names the members skipped as unknown in error paths: their
// names come from the input and might be anything.
const unknownField = "(unknown field)"

// message decodes a JSON object as a protobuf message. index maps a member
// name to a field number below 32 and its canonical name, or -1 for
// unknown members, which are skipped. oneof has a bit set for each field in
// the message's oneof. field decodes the value of field f at d.pos.
//
// Like protojson it rejects a field given twice (under either name) and two
// members of a oneof, and treats null as an absent field: null does not
// count towards the oneof, but still counts as the field's one occurrence.
func (d *jsonDecoder) message(index func([]byte) (int, string), oneof uint32, field func(f int) error) error {
	start := d.pos
	if d.peek() != '{' {
		return d.typeError(start, "an object")
	}
	if d.depth++; d.depth > maxJSONDepth {
		return d.fail(start, "nesting too deep")
	}
	d.pos++
	d.skipWS()
	if d.peek() == '}' {
		d.pos++
		d.depth--
		return nil
	}
	return d.members(index, oneof, 0, field)
}

// members decodes the members of an object that message has opened, from
// d.pos at a member name to the closing '}'. seen holds the fields already
// decoded (the fast paths start here after decoding some themselves).
func (d *jsonDecoder) members(index func([]byte) (int, string), oneof, seen uint32, field func(f int) error) error {
	oneofSet := oneof&seen != 0
	for {
		keyOff := d.pos
		k, err := d.key()
		if err != nil {
			return err
		}
		f, name := index(k)
		switch {
		case f < 0:
			if err := d.skip(maxJSONDepth - d.depth); err != nil {
				return within(err, unknownField)
			}
		case seen&(1<<f) != 0:
			return within(d.fail(keyOff, "duplicate field"), name)
		default:
			seen |= 1 << f
			if d.null() {
				break
			}
			if oneof&(1<<f) != 0 {
				if oneofSet {
					return within(d.fail(keyOff, "a second field of a oneof"), name)
				}
				oneofSet = true
			}
			if err := field(f); err != nil {
				return within(err, name)
			}
		}
		more, err := d.separator('}')
		if err != nil {
			return err
		}
		if !more {
			d.depth--
			return nil
		}
	}
}
