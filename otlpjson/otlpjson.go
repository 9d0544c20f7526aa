// Package otlpjson encodes and decodes OTLP export requests in OTLP/JSON as the
// OTLP specification defines it: lowerCamelCase field names, 64-bit integers as
// decimal strings, enums as integers, trace and span ids as lowercase hex.
//
// protojson is not used for encoding: it writes ids in base64 and is several
// times slower than appending bytes directly (see PERFORMANCE notes in
// sink/). Encoders append to a caller-owned buffer so it can be reused.
package otlpjson
