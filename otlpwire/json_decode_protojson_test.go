package otlpwire

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// This file keeps the previous decoder (hex ids rewritten to base64, then
// protojson) as the reference the hand-written decoder is tested against,
// with the collector's rule for ids added: a trace id that is neither
// empty nor 16 bytes, or a span id neither empty nor 8, fails the request
// (pjCheckIDs); and the collector's (and protojson's, without
// DiscardUnknown) rule for enums: a name the enum does not have fails the
// request (pjCheckEnumNames).

var pjUnmarshalOpts = protojson.UnmarshalOptions{DiscardUnknown: true}

func pjDecodeMetrics(data []byte) (*colmetricspb.ExportMetricsServiceRequest, error) {
	req := &colmetricspb.ExportMetricsServiceRequest{}
	if err := pjDecode(data, req); err != nil {
		return nil, fmt.Errorf("otlpwire: decode OTLP/JSON metrics: %w", err)
	}
	return req, nil
}

func pjDecodeTraces(data []byte) (*coltracepb.ExportTraceServiceRequest, error) {
	req := &coltracepb.ExportTraceServiceRequest{}
	if err := pjDecode(data, req); err != nil {
		return nil, fmt.Errorf("otlpwire: decode OTLP/JSON traces: %w", err)
	}
	return req, nil
}

func pjDecodeLogs(data []byte) (*collogspb.ExportLogsServiceRequest, error) {
	req := &collogspb.ExportLogsServiceRequest{}
	if err := pjDecode(data, req); err != nil {
		return nil, fmt.Errorf("otlpwire: decode OTLP/JSON logs: %w", err)
	}
	return req, nil
}

func pjDecode(data []byte, m proto.Message) error {
	if err := pjCheckEnumNames(data); err != nil {
		return err
	}
	fixed, err := pjHexIDsToBase64(data)
	if err != nil {
		return err
	}
	if err := pjUnmarshalOpts.Unmarshal(fixed, m); err != nil {
		return err
	}
	return pjCheckIDs(m.ProtoReflect())
}

// pjCheckIDs fails on an id field (trace_id, span_id, parent_span_id) of m
// or of a message under it whose length the collector refuses. OTLP/JSON
// allows each field once, so the decoded message holds every id there was.
func pjCheckIDs(m protoreflect.Message) error {
	var err error
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Kind() == protoreflect.MessageKind:
			for i := 0; i < v.List().Len() && err == nil; i++ {
				err = pjCheckIDs(v.List().Get(i).Message())
			}
		case fd.Kind() == protoreflect.MessageKind && !fd.IsMap():
			err = pjCheckIDs(v.Message())
		case fd.Kind() == protoreflect.BytesKind && !fd.IsList():
			size := map[protoreflect.Name]int{"trace_id": 16, "span_id": 8, "parent_span_id": 8}[fd.Name()]
			if n := len(v.Bytes()); size > 0 && n != 0 && n != size {
				err = fmt.Errorf("%s %s of %d bytes", m.Descriptor().FullName(), fd.Name(), n)
			}
		}
		return err == nil
	})
	return err
}

func pjIsIDKey(k []byte) bool {
	switch string(k) {
	case "traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id":
		return true
	}
	return false
}

// pjHexIDsToBase64 rewrites the string values of id keys from hex to base64.
func pjHexIDsToBase64(data []byte) ([]byte, error) {
	var out []byte
	last := 0
	var idbuf [64]byte
	for i := 0; i < len(data); {
		if data[i] != '"' {
			i++
			continue
		}
		start := i
		end, esc := pjScanString(data, i)
		if end < 0 {
			return nil, fmt.Errorf("unterminated string at offset %d", start)
		}
		i = end
		j := pjSkipSpace(data, i)
		if j >= len(data) || data[j] != ':' {
			continue
		}
		k := data[start+1 : end-1]
		if esc {
			var s string
			if err := json.Unmarshal(data[start:end], &s); err != nil {
				return nil, fmt.Errorf("invalid key at offset %d: %v", start, err)
			}
			k = []byte(s)
		}
		if !pjIsIDKey(k) {
			continue
		}
		v := pjSkipSpace(data, j+1)
		if v >= len(data) || data[v] != '"' {
			continue
		}
		vend, vesc := pjScanString(data, v)
		if vend < 0 {
			return nil, fmt.Errorf("unterminated string at offset %d", v)
		}
		raw := data[v+1 : vend-1]
		if vesc {
			var s string
			if err := json.Unmarshal(data[v:vend], &s); err != nil {
				return nil, fmt.Errorf("invalid %q value at offset %d: %v", k, v, err)
			}
			raw = []byte(s)
		}
		i = vend
		if len(raw) == 0 {
			continue
		}
		if len(raw)%2 != 0 {
			return nil, fmt.Errorf("invalid %q %q at offset %d: odd number of hex digits", k, raw, v)
		}
		var id []byte
		if n := len(raw) / 2; n <= len(idbuf) {
			id = idbuf[:n]
		} else {
			id = make([]byte, n)
		}
		if _, err := hex.Decode(id, raw); err != nil {
			return nil, fmt.Errorf("invalid %q %q at offset %d: not hex: %v", k, raw, v, err)
		}
		if out == nil {
			out = make([]byte, 0, len(data))
		}
		out = append(out, data[last:v]...)
		out = append(out, '"')
		out = base64.StdEncoding.AppendEncode(out, id)
		out = append(out, '"')
		last = vend
	}
	if out == nil {
		return data, nil
	}
	return append(out, data[last:]...), nil
}

func pjScanString(data []byte, i int) (int, bool) {
	esc := false
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			esc = true
			j++
		case '"':
			return j + 1, esc
		}
	}
	return -1, esc
}

func pjSkipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// pjEnumNames are the enum fields' names, by JSON key, in both spellings.
var pjEnumNames = map[string]map[string]int32{
	"kind":                    tracepb.Span_SpanKind_value,
	"code":                    tracepb.Status_StatusCode_value,
	"severityNumber":          logspb.SeverityNumber_value,
	"severity_number":         logspb.SeverityNumber_value,
	"aggregationTemporality":  metricspb.AggregationTemporality_value,
	"aggregation_temporality": metricspb.AggregationTemporality_value,
}

// pjCheckEnumNames fails on a string value of an enum key that is not one
// of the enum's names. It looks at the text, so it also refuses such a
// value under an unknown field, which the decoder skips: the differential
// tests only ask the decoder to accept what this path accepts.
func pjCheckEnumNames(data []byte) error {
	for i := 0; i < len(data); {
		if data[i] != '"' {
			i++
			continue
		}
		start := i
		end, esc := pjScanString(data, i)
		if end < 0 {
			return nil // protojson reports it
		}
		i = end
		j := pjSkipSpace(data, i)
		if j >= len(data) || data[j] != ':' {
			continue
		}
		k := data[start+1 : end-1]
		if esc || bytes.IndexByte(k, '\\') >= 0 {
			var s string
			if json.Unmarshal(data[start:end], &s) != nil {
				continue
			}
			k = []byte(s)
		}
		names := pjEnumNames[string(k)]
		if names == nil {
			continue
		}
		v := pjSkipSpace(data, j+1)
		if v >= len(data) || data[v] != '"' {
			continue
		}
		vend, _ := pjScanString(data, v)
		if vend < 0 {
			return nil
		}
		var name string
		if json.Unmarshal(data[v:vend], &name) != nil {
			continue // protojson reports it
		}
		if _, ok := names[name]; !ok {
			return fmt.Errorf("unknown enum name %q for %s at offset %d", name, k, v)
		}
		i = vend
	}
	return nil
}
