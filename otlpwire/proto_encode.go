package otlpwire

import (
	"github.com/otelstep/otelstep/pipeline"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/encoding/protowire"
)

// ProtoEncoder writes export requests in protobuf wire format without
// reflection. It runs in two passes, both generated from one walk of each
// message's fields (generated_proto_encode.go): sizes are computed once,
// bottom-up, and kept in pre-order; the append pass reads them back in the
// same order, so no message is sized twice.
//
// Every field is written as proto.Marshal writes it, in field-number
// order; unknown fields of the input messages are not written. Spans and
// log records kept as received (pipeline.Records) are copied as they came.
// The output decodes to a message proto.Equal to the input
// (proto_encode_*_test.go, FuzzEncode*).
//
// Data-point attributes and metrics' metadata that are a shared set's
// (pipeline.AttrSet, whose pipeline.AttrEncodings Shared finds: the
// scraper sends every series again with its set's slice each scrape) are
// encoded once and the bytes stored with the set, shared by every encoder
// and freed with the series. The output is the same with and without
// Shared.
//
// The zero value is ready to use (and reuses nothing). A ProtoEncoder is
// not safe for concurrent use.
type ProtoEncoder struct {
	// Shared finds the sets whose stored encodings are used and filled;
	// nil: none.
	Shared *pipeline.SharedAttrs

	sizes []int
	pos   int

	// attrs holds, in pre-order like sizes, what the size pass found for
	// each non-empty data-point attribute slice and metadata slice while
	// Shared is set: the bytes stored with its set, or nil for "encoded
	// the usual way". The append pass reads it back, so both passes agree
	// even if the set is collected in between, and nothing is looked up
	// twice.
	attrs   [][]byte
	apos    int
	sub     *ProtoEncoder // encodes a set's KeyValues to be stored
	scratch []byte

	// flush, when set, is called between two data points (and two
	// metrics) once dst holds flushAt bytes or more. It takes what dst
	// holds, the request's bytes since the last flush, and returns the
	// slice to go on appending to. The lengths are known from the size
	// pass, so nothing already appended is ever looked at again: a request
	// can go out in pieces, and one resource of 20,000 series is not held
	// whole.
	flush   func(dst []byte) []byte
	flushAt int
}

// SetFlush sets the flush function and its threshold (see the flush
// field); a nil flush appends a whole request to dst.
func (e *ProtoEncoder) SetFlush(flush func(dst []byte) []byte, at int) {
	e.flush, e.flushAt = flush, at
}

// maybeFlush hands dst to e.flush once it holds e.flushAt bytes.
func (e *ProtoEncoder) maybeFlush(dst []byte) []byte {
	if e.flush != nil && len(dst) >= e.flushAt {
		return e.flush(dst)
	}
	return dst
}

// reset readies the encoder for a request: both passes start afresh, and
// no reference to a series' stored encoding outlives the request.
func (e *ProtoEncoder) reset() {
	e.sizes, e.pos = e.sizes[:0], 0
	clear(e.attrs)
	e.attrs, e.apos = e.attrs[:0], 0
}

// mark reserves the next size slot of the size pass.
func (e *ProtoEncoder) mark() int { e.sizes = append(e.sizes, 0); return len(e.sizes) - 1 }

// next is the append pass reading the next recorded size.
func (e *ProtoEncoder) next() int { n := e.sizes[e.pos]; e.pos++; return n }

// msg writes the tag and the length (the next recorded size) of a nested
// message field.
func (e *ProtoEncoder) msg(dst []byte, num protowire.Number) []byte {
	dst = appendTag(dst, num, protowire.BytesType)
	return appendUvarint(dst, uint64(e.next()))
}

// sizePointAttrs is sizeKeyValues for a data point's attributes (or a
// metric's metadata): a set's slice is sized from its stored encoding.
// Without Shared it costs one check (and one call: this does not fit the
// inlining budget).
func (e *ProtoEncoder) sizePointAttrs(num protowire.Number, kvs []*commonpb.KeyValue) int {
	if e.Shared == nil || len(kvs) == 0 {
		return e.sizeKeyValues(num, kvs)
	}
	return e.sizeSharedAttrs(num, kvs)
}

// sizeSharedAttrs looks kvs's set up (storing its encoding if it has none
// yet) and records the outcome for appendSharedAttrs.
func (e *ProtoEncoder) sizeSharedAttrs(num protowire.Number, kvs []*commonpb.KeyValue) int {
	b := e.storedKeyValues(num, kvs)
	e.attrs = append(e.attrs, b)
	if b == nil {
		return e.sizeKeyValues(num, kvs)
	}
	return len(b)
}

// appendPointAttrs is appendKeyValues for a data point's attributes (or a
// metric's metadata), following what the size pass recorded.
func (e *ProtoEncoder) appendPointAttrs(dst []byte, num protowire.Number, kvs []*commonpb.KeyValue) []byte {
	if e.Shared == nil || len(kvs) == 0 {
		return e.appendKeyValues(dst, num, kvs)
	}
	return e.appendSharedAttrs(dst, num, kvs)
}

// appendSharedAttrs writes what sizeSharedAttrs recorded for kvs: the
// stored bytes, or the usual encoding when kvs is no set's.
func (e *ProtoEncoder) appendSharedAttrs(dst []byte, num protowire.Number, kvs []*commonpb.KeyValue) []byte {
	b := e.attrs[e.apos]
	e.apos++
	if b == nil {
		return e.appendKeyValues(dst, num, kvs)
	}
	return append(dst, b...)
}

// storedKeyValues returns the field-num-tagged KeyValue messages of kvs as
// stored with its set, encoding and storing them if the set has none under
// num; nil if kvs is no set's.
func (e *ProtoEncoder) storedKeyValues(num protowire.Number, kvs []*commonpb.KeyValue) []byte {
	set := e.Shared.Find(kvs)
	if set == nil {
		return nil
	}
	if b := set.Proto(int32(num)); b != nil {
		return b
	}
	// A separate encoder, because e is in the middle of its size pass.
	if e.sub == nil {
		e.sub = &ProtoEncoder{}
	}
	s := e.sub
	s.sizes, s.pos = s.sizes[:0], 0
	s.sizeKeyValues(num, kvs)
	e.scratch = s.appendKeyValues(e.scratch[:0], num, kvs)
	return set.StoreProto(int32(num), e.scratch)
}

// ---- primitives (the generated code writes each field by its kind) ----

// appendUvarint is protowire.AppendVarint with the one-byte case, most
// lengths, inlined.
func appendUvarint(dst []byte, v uint64) []byte {
	if v < 0x80 {
		return append(dst, byte(v))
	}
	return protowire.AppendVarint(dst, v)
}

// appendTag is protowire.AppendTag with a short way for the one-byte tags
// (fields 1 to 15).
func appendTag(dst []byte, num protowire.Number, typ protowire.Type) []byte {
	if num < 16 {
		return append(dst, byte(num)<<3|byte(typ))
	}
	return protowire.AppendTag(dst, num, typ)
}

// lenField is the size of a length-delimited field of n bytes.
func lenField(num protowire.Number, n int) int {
	return protowire.SizeTag(num) + protowire.SizeBytes(n)
}
