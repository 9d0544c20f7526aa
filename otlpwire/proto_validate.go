package otlpwire

import (
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
)

// Trace and span ids.
//
// The collector's pdata holds a trace id as [16]byte and a span id as
// [8]byte, and refuses a request with an id of any other length: in
// protobuf, an id field of 0 bytes is "not set" and one of any length but
// 16 (8) fails the request; in OTLP/JSON, "" is "not set" and any hex
// string but one of 32 (16) digits fails it. That holds for every id of
// OTLP: a span's trace_id, span_id and parent_span_id, a link's trace_id
// and span_id, a log record's and an exemplar's trace_id and span_id. A
// backend built on pdata refuses the whole request such an id travels in,
// with every good item beside it, so otelstep's receivers refuse it
// first, as the collector's do: both decoders (protobuf here, OTLP/JSON in
// json_scan_value.go) check every id with ValidID and name it with IDSizeError.
const (
	TraceIDSize = 16
	SpanIDSize  = 8
)

// ValidID reports whether an id of n bytes may stand in a field of ids of
// size bytes (TraceIDSize or SpanIDSize): empty (not set) or exactly size.
func ValidID(n, size int) bool { return n == 0 || n == size }

// IDSizeError is the reason an id of n bytes is refused from a field of
// ids of size bytes; with hex, n is the id's length in hex digits, as
// OTLP/JSON writes ids. It never holds the id itself.
func IDSizeError(n, size int, hex bool) string {
	what := "span id"
	if size == TraceIDSize {
		what = "trace id"
	}
	if !hex {
		return what + " of " + strconv.Itoa(n) + " bytes, must be " + strconv.Itoa(size) + " bytes or empty"
	}
	odd := ""
	if n%2 != 0 {
		odd = " an odd number of hex digits,"
	}
	return what + " of " + strconv.Itoa(n) + " hex digits," + odd + " must be " + strconv.Itoa(2*size) +
		" hex digits (" + strconv.Itoa(size) + " bytes) or empty"
}

// Checking a span or log record without decoding it.
//
// The decoder checks every span and log record it keeps as a record
// (pipeline.Records). Decoding each into a scratch message to do so would
// fill and clear its slabs per record (clearing memory that holds pointers
// costs a write barrier per word while the GC runs). The validators
// (valid<Message>, generated for each record message and every message
// under it) walk the same fields with the same rules and store nothing.
// They only say yes or no: on no, the caller decodes the record into
// scratch after all, which names the error. So a validator may refuse more
// than the decoder (that costs a second walk), never accept more. Both are
// generated from one schema; TestValidItemsAgree, FuzzValidSpan and
// FuzzValidLogRecord hold the two to the same answer, and the decode
// fuzzers check that nothing proto.Unmarshal refuses is let in.
//
// The validators read with the decoder's primitives: an error there only
// means no (made on the way to the decode that names it, so it is rare).

// keyValueShape checks the common shapes of a KeyValue at depth lv, a key
// of under 128 bytes and then a value that is one string of under 128
// bytes, one int, bool or double, by position: what validKeyValue's loop
// would check of them, the value's depth included, without its field
// reads. decided is false for any other shape, which takes the loop.
func (d *decoder) keyValueShape(p, end, lv int) (ok, decided bool) {
	if n := end - p; n >= 6 && lv < maxDepth {
		b := d.b[p:end]
		if kl := int(b[1]); uint64(b[0]) == 1<<3|wtLen && kl < 0x80 && 6+kl <= n && uint64(b[2+kl]) == 2<<3|wtLen && b[3+kl] < 0x80 && int(b[3+kl]) == n-4-kl {
			v := b[4+kl:]
			switch uint64(v[0]) {
			case 1<<3 | wtLen:
				if v[1] < 0x80 && int(v[1]) == len(v)-2 {
					return validUTF8(b[2:2+kl]) && validUTF8(v[2:]), true
				}
			case 2<<3 | wtVarint, 3<<3 | wtVarint:
				if _, m := protowire.ConsumeVarint(v[1:]); m == len(v)-1 {
					return validUTF8(b[2 : 2+kl]), true
				}
			case 4<<3 | wtI64:
				if len(v) == 9 {
					return validUTF8(b[2 : 2+kl]), true
				}
			}
		}
	}
	return false, false
}
