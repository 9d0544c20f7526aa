package otlpwire

// OTLP/JSON, as the OTLP specification defines it: lowerCamelCase field
// names, 64-bit integers as decimal strings, enums as integers, trace and
// span ids as lowercase hex.
//
// protojson is not used for encoding: it writes ids in base64, where
// OTLP/JSON wants hex, and is several times slower than appending bytes
// directly (BenchmarkAppendMetrics). Encoders append to a caller-owned
// buffer so it can be reused.
//
// Encoding (AppendMetrics, AppendTraces, AppendLogs) writes fields in .proto
// declaration order like protojson, omits proto3 zero values, nil messages and
// empty lists, always writes the set member of a oneof (even "asDouble":0),
// writes NaN and infinities as "NaN", "Infinity" and "-Infinity", formats
// floats exactly like encoding/json, base64-encodes AnyValue bytesValue, and
// replaces invalid UTF-8 by U+FFFD. With a large enough dst it does not
// allocate.
//
// Decoding (DecodeMetrics, DecodeTraces, DecodeLogs) is a single-pass
// scanner that fills the generated types directly, without protobuf
// reflection, by per-message code generated from the OTLP descriptors. It
// accepts what protojson (with DiscardUnknown) accepts, plus hex ids:
// camelCase or snake_case names, 64-bit integers as strings or numbers (in
// any notation denoting an integer, like "1e3"), enums as numbers or names
// (a name the enum does not have is an error, as in the collector), doubles
// as numbers or "NaN", "Infinity" and "-Infinity", base64 bytesValue, null
// for an absent field, and unknown fields of any shape, which are skipped.
// Like protojson it rejects invalid UTF-8, unpaired surrogate escapes,
// duplicate fields and a second member of a oneof. Errors name the field
// path and byte offset, never a value from the input. Trace and span ids
// must be hex, of 32 and 16 digits, or empty (an empty id), as the
// collector requires (ValidID); members named like ids inside unknown
// fields are not checked.
//
// Decoded messages of one type are allocated together in chunks, so keeping
// any part of a decoded request alive keeps the chunks it lies in.
