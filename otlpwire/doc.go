// Package otlpwire is otelstep's codec for the OTLP wire formats: protobuf
// and OTLP/JSON, in both directions, for every signal (metrics, traces,
// logs). Every OTLP export request otelstep's receivers, sinks and replay
// read or write is decoded or encoded here; outside it, only
// pipeline.Records walks the framing of the spans and log records kept as
// received.
//
//   - Protobuf decoding (proto_decode*.go): UnmarshalRequest and
//     UnmarshalOwnedRequest turn an export request body into a
//     pipeline.Batch, with the collector's validation rules
//     (proto_validate.go: ValidID, IDSizeError). Spans and log records are
//     checked and kept as their wire records; SpanDecoder and
//     LogRecordDecoder decode them one at a time; ScanSpan and ScanValue
//     (span_scan.go) read a span record's name, kind, times, status code
//     and chosen attributes without decoding it.
//   - The protobuf decoder's per-message code, its validators and record
//     checks are generated (generated_proto_decode.go,
//     generated_proto_validate.go), and so is the OTLP/JSON decoder's
//     (generated_json_decode.go). Each signal's entry points below are
//     generated from its export request (generated_api.go).
//   - Protobuf encoding (proto_encode.go, generated_proto_encode.go):
//     ProtoEncoder appends an export request of any signal to a
//     caller-owned buffer; every field in field-number order, as
//     proto.Marshal writes it.
//   - OTLP/JSON decoding (json_decode*.go, json_scan*.go): DecodeMetrics,
//     DecodeTraces and DecodeLogs.
//   - OTLP/JSON encoding (json_encode*.go, generated_json_encode.go):
//     AppendMetrics, AppendTraces, AppendLogs and MetricsEncoder, one JSONL
//     line per request, every field in declaration order, as protojson
//     writes it (ids in hex). Spans and log records kept as their records
//     are written from their bytes (generated_json_records.go over
//     json_encode_records.go).
//
// The codecs use no protobuf reflection at run time, for speed. Their
// per-message code is generated (generated_*.go, by go generate from
// internal/gen, which reads the OTLP message descriptors and otelstep's
// choices in internal/gen/choices.go); the primitives, the decoder's
// memory and the attribute caches are written by hand. Their semantics are
// those of proto.Marshal, proto.Unmarshal and protojson with the
// differences each file's comment lists, and the tests hold them to those
// references.
//
// The metrics encoders given a pipeline.SharedAttrs (ProtoEncoder.Shared,
// MetricsEncoder.Shared) write the data-point attributes and metadata that
// are a producer's pipeline.AttrSet from the encodings stored with the
// set, storing them at first sight; the bytes are those written without.
package otlpwire

//go:generate go run ./internal/gen
