// Package otlpjson encodes and decodes OTLP export requests in OTLP/JSON as the
// OTLP specification defines it: lowerCamelCase field names, 64-bit integers as
// decimal strings, enums as integers, trace and span ids as lowercase hex.
//
// protojson is not used for encoding: it writes ids in base64 and is several
// times slower than appending bytes directly (see PERFORMANCE notes in
// sink/). Encoders append to a caller-owned buffer so it can be reused.
//
// Encoding (AppendMetrics, AppendTraces, AppendLogs) writes fields in .proto
// declaration order like protojson, omits proto3 zero values, nil messages and
// empty lists, always writes the set member of a oneof (even "asDouble":0),
// writes NaN and infinities as "NaN", "Infinity" and "-Infinity", formats
// floats exactly like encoding/json, base64-encodes AnyValue bytesValue, and
// replaces invalid UTF-8 by U+FFFD. With a large enough dst it does not
// allocate.
//
// Decoding (DecodeMetrics, DecodeTraces, DecodeLogs) rewrites hex id values
// (traceId, spanId, parentSpanId and their snake_case forms) to base64 and
// hands the result to protojson with DiscardUnknown, so it accepts everything
// protojson accepts: camelCase or snake_case names, 64-bit integers as strings
// or numbers, enums as numbers or names.
package otlpjson
