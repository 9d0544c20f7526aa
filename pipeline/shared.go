package pipeline

import (
	"sync/atomic"
	"unsafe"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
)

// Shared attribute slices.
//
// A scrape re-sends every series of a target with the same attributes, so
// the sinks' encoders can encode a series' data-point attributes once and
// reuse the bytes while the series exists. They may only do that when the
// producer promises the slice does not change: MarkShared is that promise,
// carried by the slice itself so it survives batching, splitting and
// fan-out without a side table.
//
// The contract for a producer that calls MarkShared(kvs):
//   - it never mutates the returned slice, its elements (the *KeyValue and
//     everything they point to) or its backing array again, and neither may
//     anyone downstream (the scraper's rule for point attributes already);
//   - it reuses the returned slice for the same series across batches (that
//     is where the saving comes from; marking a slice used once is harmless
//     but only costs a cache entry).
//
// Appending to a marked slice is NOT safe: the header's slot is within the
// slice's capacity, so an append of one element writes into it, in the
// backing array every holder of the series' slice shares. The producer's
// slice then reads as unmarked (its encodings are lost), and two appends
// to one marked slice race. So the contract forbids appending, as it
// forbids any other mutation. Shortening it (kvs[:k]) or taking a suffix
// (kvs[i:]) reads as unmarked: the header names the one slice it was made
// for.
//
// The sinks keep the encodings of a shared slice in its header
// (Encoded/SetEncoded), so every sink and goroutine shares one copy, and it
// lives exactly as long as the series' slice: no side table to look up,
// bound or sweep.

// header sits in the slot just past a shared slice's length. The slot
// holds &h.kv, which is how a header is recognised (its Value is the
// package's marker, compared by address, which only MarkShared puts there)
// and converted back to the header (kv is the first field). It is outside
// every slice's length, so encoders never see it as an attribute.
type header struct {
	kv    commonpb.KeyValue // first: the slot points here
	first **commonpb.KeyValue
	n     int
	enc   [2]atomic.Pointer[encoded] // [0] JSON, [1] protobuf
}

// encoded is one stored encoding: kind says which (the protobuf one
// depends on the field number it was written under).
type encoded struct {
	kind Encoding
	b    []byte
}

// marker identifies a header's KeyValue by address.
var marker = &commonpb.AnyValue{}

// Encoding names an encoding of a shared slice the sinks store:
// EncodingJSON, or ProtoField(n) for the KeyValue messages under protobuf
// field number n.
type Encoding int32

// EncodingJSON is the OTLP/JSON array text of the KeyValues.
const EncodingJSON Encoding = 0

// ProtoField is the protobuf encoding of the KeyValues as repeated field
// number n (n > 0).
func ProtoField(n int32) Encoding { return Encoding(n) }

func (k Encoding) slot() int {
	if k == EncodingJSON {
		return 0
	}
	return 1
}

// MarkShared returns a copy of kvs whose backing array holds one extra slot
// past len with the header IsShared checks (cap is exactly len+1: an append
// of one element overwrites the header, see above). The caller promises
// what the contract above says. An empty slice is returned as is, never marked:
// it has no encoding worth keeping and no element to identify it by.
func MarkShared(kvs []*commonpb.KeyValue) []*commonpb.KeyValue {
	if len(kvs) == 0 || IsShared(kvs) {
		return kvs
	}
	out := make([]*commonpb.KeyValue, len(kvs), len(kvs)+1)
	copy(out, kvs)
	h := &header{first: &out[0], n: len(out)}
	h.kv.Value = marker
	out[:len(kvs)+1][len(kvs)] = &h.kv
	return out
}

// headerOf returns the header of shared kvs, or nil.
func headerOf(kvs []*commonpb.KeyValue) *header {
	if len(kvs) == 0 || cap(kvs) == len(kvs) {
		return nil
	}
	kv := kvs[:len(kvs)+1][len(kvs)]
	if kv == nil || kv.Value != marker {
		return nil
	}
	h := (*header)(unsafe.Pointer(kv)) // only MarkShared makes such a KeyValue, as a header's first field
	if h.first != &kvs[0] || h.n != len(kvs) {
		return nil // a suffix of the slice it was made for
	}
	return h
}

// IsShared reports whether kvs was returned by MarkShared and has not been
// appended to since.
func IsShared(kvs []*commonpb.KeyValue) bool { return headerOf(kvs) != nil }

// Encoded returns the encoding of kind stored for shared kvs, or nil. The
// bytes must not be modified.
func Encoded(kvs []*commonpb.KeyValue, kind Encoding) []byte {
	h := headerOf(kvs)
	if h == nil {
		return nil
	}
	if e := h.enc[kind.slot()].Load(); e != nil && e.kind == kind {
		return e.b
	}
	return nil
}

// SetEncoded stores a copy of b as the encoding of kind of shared kvs and
// returns the copy, or nil (storing nothing) if kvs is not shared or b is
// empty. Safe for concurrent use: encoders racing on one slice store equal
// bytes. A slice keeps one protobuf encoding: a later one under another
// field number replaces it.
func SetEncoded(kvs []*commonpb.KeyValue, kind Encoding, b []byte) []byte {
	h := headerOf(kvs)
	if h == nil || len(b) == 0 {
		return nil
	}
	own := append([]byte(nil), b...)
	h.enc[kind.slot()].Store(&encoded{kind: kind, b: own})
	return own
}
