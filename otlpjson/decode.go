package otlpjson

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

var unmarshalOpts = protojson.UnmarshalOptions{DiscardUnknown: true}

// DecodeMetrics parses an OTLP/JSON ExportMetricsServiceRequest as the spec
// and the OpenTelemetry Collector write it: hex trace and span ids, camelCase
// or snake_case field names, 64-bit integers as strings or numbers, enums as
// integers or names. Unknown fields are ignored.
func DecodeMetrics(data []byte) (*colmetricspb.ExportMetricsServiceRequest, error) {
	req := &colmetricspb.ExportMetricsServiceRequest{}
	if err := decode(data, req); err != nil {
		return nil, fmt.Errorf("otlpjson: decode metrics: %w", err)
	}
	return req, nil
}

// DecodeTraces parses an OTLP/JSON ExportTraceServiceRequest; see DecodeMetrics.
func DecodeTraces(data []byte) (*coltracepb.ExportTraceServiceRequest, error) {
	req := &coltracepb.ExportTraceServiceRequest{}
	if err := decode(data, req); err != nil {
		return nil, fmt.Errorf("otlpjson: decode traces: %w", err)
	}
	return req, nil
}

// DecodeLogs parses an OTLP/JSON ExportLogsServiceRequest; see DecodeMetrics.
func DecodeLogs(data []byte) (*collogspb.ExportLogsServiceRequest, error) {
	req := &collogspb.ExportLogsServiceRequest{}
	if err := decode(data, req); err != nil {
		return nil, fmt.Errorf("otlpjson: decode logs: %w", err)
	}
	return req, nil
}

func decode(data []byte, m proto.Message) error {
	fixed, err := hexIDsToBase64(data)
	if err != nil {
		return err
	}
	return unmarshalOpts.Unmarshal(fixed, m)
}

// isIDKey reports whether an object key names a trace or span id field in
// any OTLP message (Span, Span.Link, LogRecord, Exemplar). OTLP user data
// never appears as JSON object keys (attributes are {key,value} lists), so
// rewriting every such key is safe.
func isIDKey(k []byte) bool {
	switch string(k) {
	case "traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id":
		return true
	}
	return false
}

// hexIDsToBase64 rewrites the string values of id keys from hex (OTLP/JSON)
// to base64 (what protojson expects for bytes). It returns data unchanged
// when there is nothing to rewrite. It does not validate the JSON beyond
// what it needs; protojson does that afterwards.
func hexIDsToBase64(data []byte) ([]byte, error) {
	var out []byte // nil until the first rewrite
	last := 0      // data[last:] not yet copied to out
	var idbuf [64]byte
	for i := 0; i < len(data); {
		if data[i] != '"' {
			i++
			continue
		}
		// A string token: find its end.
		start := i
		end, esc := scanString(data, i)
		if end < 0 {
			return nil, fmt.Errorf("unterminated string at offset %d", start)
		}
		i = end
		// Is it an object key? (a string followed by ':')
		j := skipSpace(data, i)
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
		if !isIDKey(k) {
			continue
		}
		v := skipSpace(data, j+1)
		if v >= len(data) || data[v] != '"' {
			continue // null or garbage: leave it to protojson
		}
		vend, vesc := scanString(data, v)
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
			continue // empty id stays empty
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

// scanString returns the offset just past the closing quote of the string
// starting at data[i] == '"', and whether it contains escapes; -1 if it is
// unterminated.
func scanString(data []byte, i int) (int, bool) {
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

func skipSpace(data []byte, i int) int {
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
