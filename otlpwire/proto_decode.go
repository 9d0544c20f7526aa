package otlpwire

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
)

// A reflection-free protobuf decoder for the three OTLP export requests.
//
// proto.Unmarshal walks the message descriptors through reflection-driven
// coders and allocates every string, byte slice and message on its own.
// This decoder's per-message code (generated_proto_decode.go: the field
// tables, the decode switch of every message, the lists and slabs) is
// generated from the descriptors of go.opentelemetry.io/proto/otlp and
// otelstep's choices (internal/gen/choices.go); it fills the same
// generated types, and pipeline types above the records. This file holds
// the rules and the primitives.
//
// Memory. The body is copied once into a buffer the result owns; every
// string field is a substring of one string over that buffer and every
// bytes field a sub-slice of it, so a string or an id costs no allocation
// and the result never aliases the caller's buffer (callers reuse theirs).
// Messages come from per-type chunks (slab) and each repeated field is an
// exact-size slice carved from a chunk of pointers (list), so a request
// costs a few allocations per message type instead of several per message.
// The price: any one string, id or message of the result keeps the whole
// request's body and chunks alive. Pipelines handle a request's data as a
// whole, so that is the same lifetime in practice.
//
// Spans and log records are checked like everything else but kept as the
// wire records they came in (pipeline.Records): with pipeline.TracesProto and LogsProto
// applied, which decode those records into messages, what follows holds.
//
// Semantics: for any input proto.Unmarshal (DiscardUnknown) accepts, the
// result is proto.Equal to its result, with three deliberate differences:
//   - unknown fields are skipped (validated as proto.Unmarshal does, but
//     not kept: an OTLP receiver has no use for them); so compare with
//     proto.UnmarshalOptions{DiscardUnknown: true}. Those inside a span or
//     log record kept as its record stay in the record's bytes, and the
//     protobuf encoder, which copies records, writes them (the OTLP/JSON
//     encoder does not);
//   - a known field with an unexpected wire type is an error (proto.Unmarshal
//     keeps it as an unknown field; gogo-style generated decoders, the
//     Collector's pdata among them, reject it). decoder.lenient restores
//     proto.Unmarshal's behaviour for the tests that compare the two on
//     arbitrary input;
//   - a trace or span id (of a span, link, log record or exemplar) that is
//     neither empty nor 16 or 8 bytes long is an error, as in pdata
//     (proto_validate.go): every occurrence is checked, the one proto.Unmarshal
//     keeps and any before it.
//
// As in proto.Unmarshal: scalars are last-one-wins; repeated occurrences of
// a singular message field (resource, scope, status, value, body, a
// metric's data, exponential-histogram buckets) merge, that is decode into
// the same message; a oneof member replaces another member, and a message
// member merges into the same member; packed and unpacked encodings of
// repeated scalars are both accepted; proto3 strings must be valid UTF-8;
// nesting deeper than protowire.DefaultRecursionLimit messages (the
// request counting as one) is an error; an end-group tag outside a group,
// field number 0 or above 2^29-1, reserved wire types 6 and 7, truncated
// values, overlong varints and lengths past the end of the enclosing
// message are errors. Errors are *DecodeError, naming the field path and
// the byte offset in the body.

// maxDepth is the deepest message nesting accepted, the request being at
// depth 1: proto.Unmarshal's default limit, so that both accept the same
// inputs. Only AnyValue (arrays and kvlists) can nest without bound; every
// KeyValue, AnyValue, ArrayValue and KeyValueList decode checks its depth.
const maxDepth = protowire.DefaultRecursionLimit

// DecodeError is a malformed request: what is wrong, where in the message
// tree (e.g. "resource_spans[0].scope_spans[1].spans[3].name") and at which
// byte offset of the body.
type DecodeError struct {
	Path   string
	Offset int
	Msg    string
	// segs is the path while the error travels up, innermost first (each
	// level appends its name: prepending to a string would cost quadratic
	// time in the nesting depth).
	segs []string
	// wireType is set for a known field with an unexpected wire type, which
	// proto.Unmarshal would keep as an unknown field (tests tell the
	// deliberate difference apart with it).
	wireType bool
}

func (e *DecodeError) Error() string {
	if e.Path == "" {
		return e.Msg + " at byte " + strconv.Itoa(e.Offset)
	}
	return e.Path + ": " + e.Msg + " at byte " + strconv.Itoa(e.Offset)
}

// in adds the field name to the error's path (errors are built at the
// innermost field and named on the way out, so the happy path never
// formats anything).
func (e *DecodeError) in(name string) *DecodeError {
	e.segs = append(e.segs, name)
	return e
}

// at adds element i of the repeated field name to the error's path.
func (e *DecodeError) at(name string, i int) *DecodeError {
	return e.in(name + "[" + strconv.Itoa(i) + "]")
}

// maxPathSegs bounds the path of an error: deeper ones (only nested
// AnyValues are) keep their first and last maxPathSegs/2 names.
const maxPathSegs = 40

// done sets Path from the names gathered on the way out.
func (e *DecodeError) done() *DecodeError {
	n, half := len(e.segs), maxPathSegs/2
	names := make([]string, 0, min(n, maxPathSegs+1))
	if n <= maxPathSegs {
		half = n
	}
	for i := n - 1; i >= n-half; i-- {
		names = append(names, e.segs[i])
	}
	if n > maxPathSegs {
		names = append(names, "("+strconv.Itoa(n-2*half)+" more)")
		for i := half - 1; i >= 0; i-- {
			names = append(names, e.segs[i])
		}
	}
	e.Path, e.segs = strings.Join(names, "."), nil
	return e
}

// decodeOwned runs one request's decode with a pooled decoder.
func decodeOwned[T any](buf []byte, decode func(*decoder) ([]T, *DecodeError)) ([]T, error) {
	d := getDecoder(buf)
	defer putDecoder(d)
	out, e := decode(d)
	if e != nil {
		return nil, e.done()
	}
	return out, nil
}

// decoder holds one request's decoding state. Positions are absolute byte
// offsets into b; a message is decoded from [p, end) of b.
type decoder struct {
	// b is the body, owned by the result. s is the same memory as a string.
	//
	// Why the aliasing is safe: nothing writes b once decoding starts
	// (the Owned functions' contract). Every string of the result is a
	// substring of s covering exactly one string field's payload, and every
	// []byte of the result is b[a:z:z] for exactly one bytes field's
	// payload. In a well-formed message each byte belongs to at most one
	// field's payload, so the ranges handed out as []byte and as string
	// never overlap: a caller writing into an id (allowed: it is a []byte)
	// changes no string. The capacity of every []byte is its length, so
	// appending to one reallocates instead of writing past it.
	b []byte
	s string
	n int // len(b), the total for the slabs' extrapolation

	// lenient skips known fields with an unexpected wire type, as
	// proto.Unmarshal does, instead of failing (tests only).
	lenient bool
	// checked skips the UTF-8 check of strings: b was checked when it was
	// received (a SpanDecoder's span records).
	checked bool

	// scratch decodes one record at a time and rewinds (see checkSpan):
	// created on first use and pooled with the decoder.
	scratch *decoder

	// The memory the result is carved from (generated from the schema).
	lists decoderLists
	slabs decoderSlabs
	items decoderItems // a scratch decoder's record messages
}

// Decoders are pooled for their scratch stacks only: getDecoder starts
// every slab empty, so no chunk is ever shared by two requests.
var decoderPool = sync.Pool{New: func() any { return new(decoder) }}

func getDecoder(buf []byte) *decoder {
	d := decoderPool.Get().(*decoder)
	d.b, d.n = buf, len(buf)
	// Invariant: nothing writes buf while a string of the result lives
	// (decoder.b). The Owned functions' callers hand buf over: a copy
	// (UnmarshalRequest), or otlpin's pooled body, which goes back to its
	// pool only with the last release of the batch's lease. Tested by
	// TestOwnedDecodeAliasesBody, TestUnmarshalRequestCopies and, in a
	// poison build, otlpin's TestDecodedStringsLiveUntilLastRelease.
	d.s = unsafe.String(unsafe.SliceData(buf), len(buf))
	return d
}

// putDecoder drops every reference into the request just decoded (body,
// slab chunks, stack contents) and pools the decoder with the storage of
// its scratch stacks (a stack left out here is merely not reused).
func putDecoder(d *decoder) {
	keep := decoder{lists: d.lists.keepStacks()}
	if sd := d.scratch; sd != nil {
		sd.forget()
		keep.scratch = sd
	}
	*d = keep
	decoderPool.Put(d)
}

// maxPooledStack bounds the scratch kept per stack: a huge request's
// stacks are dropped rather than pinned by the pool.
const maxPooledStack = 1 << 14

// clearStack empties s and zeroes its whole backing array (a failed decode
// leaves entries behind; a successful one, stale pointers past len).
func clearStack[T any](s []*T) []*T {
	if cap(s) > maxPooledStack {
		return nil
	}
	clear(s[:cap(s)])
	return s[:0]
}

// Primitives. Each reads a value at q, bounded by end (the end of the
// enclosing message), and returns the position after it.

func (d *decoder) errf(off int, format string, args ...any) *DecodeError {
	return &DecodeError{Offset: off, Msg: fmt.Sprintf(format, args...)}
}

// Message loops read a tag inline when it is one byte (fields 1 to 15,
// all of OTLP's but span flags) and call tagSlow otherwise.

func (d *decoder) tagSlow(p, end int) (uint64, int, *DecodeError) {
	v, n := protowire.ConsumeVarint(d.b[p:end])
	if n < 0 {
		return 0, 0, d.errf(p, "malformed tag: %v", wireErr(n))
	}
	if num := v >> 3; num < uint64(protowire.MinValidNumber) || num > uint64(protowire.MaxValidNumber) {
		return 0, 0, d.errf(p, "invalid field number %d", num)
	}
	return v, p + n, nil
}

func (d *decoder) varint(q, end int) (uint64, int, *DecodeError) {
	if q < end {
		if c := d.b[q]; c < 0x80 {
			return uint64(c), q + 1, nil
		}
	}
	return d.varintSlow(q, end)
}

func (d *decoder) varintSlow(q, end int) (uint64, int, *DecodeError) {
	v, n := protowire.ConsumeVarint(d.b[q:end])
	if n < 0 {
		return 0, 0, d.errf(q, "malformed varint: %v", wireErr(n))
	}
	return v, q + n, nil
}

func (d *decoder) fixed64(q, end int) (uint64, int, *DecodeError) {
	if end-q >= 8 {
		return binary.LittleEndian.Uint64(d.b[q : q+8]), q + 8, nil
	}
	return 0, 0, d.errf(q, "truncated fixed64: %d bytes left", end-q)
}

func (d *decoder) fixed32(q, end int) (uint32, int, *DecodeError) {
	if end-q >= 4 {
		return binary.LittleEndian.Uint32(d.b[q : q+4]), q + 4, nil
	}
	return 0, 0, d.errf(q, "truncated fixed32: %d bytes left", end-q)
}

// lenPrefix reads a length prefix at q and returns the payload's bounds.
func (d *decoder) lenPrefix(q, end int) (int, int, *DecodeError) {
	if q < end {
		if n := int(d.b[q]); n < 0x80 && n < end-q {
			return q + 1, q + 1 + n, nil
		}
	}
	return d.lenSlow(q, end)
}

func (d *decoder) lenSlow(q, end int) (int, int, *DecodeError) {
	v, n := protowire.ConsumeVarint(d.b[q:end])
	if n < 0 {
		return 0, 0, d.errf(q, "malformed length: %v", wireErr(n))
	}
	a := q + n
	if v > uint64(end-a) {
		return 0, 0, d.errf(q, "length %d exceeds the %d bytes left", v, end-a)
	}
	return a, a + int(v), nil
}

// str reads a length-delimited proto3 string, which must be valid UTF-8.
// (It does lenPrefix's work itself: lenPrefix is too big for the compiler
// to inline, and strings are most fields.)
func (d *decoder) str(q, end int) (string, int, *DecodeError) {
	a, z := q+1, -1
	if q < end {
		if n := int(d.b[q]); n < 0x80 && n < end-q {
			z = a + n
		}
	}
	if z < 0 {
		var e *DecodeError
		if a, z, e = d.lenSlow(q, end); e != nil {
			return "", 0, e
		}
	}
	if d.checked {
		return d.s[a:z], z, nil
	}
	if !validUTF8(d.b[a:z]) {
		return "", 0, d.errf(a+invalidUTF8At(d.s[a:z]), "invalid UTF-8")
	}
	return d.s[a:z], z, nil
}

// validUTF8 is utf8.Valid for b, a slice of the request's body. Most
// strings are ASCII: it checks 8 bytes at a time, and leaves the rest from
// the first byte above 0x7f to utf8.Valid (an ASCII prefix is valid on its
// own).
func validUTF8(b []byte) bool {
	for len(b) >= 8 && binary.LittleEndian.Uint64(b)&0x8080808080808080 == 0 {
		b = b[8:]
	}
	if n := len(b); n > 0 && n < 8 && cap(b) >= 8 {
		// The last n < 8 bytes in one load too, the bytes after them
		// (still the body's) masked off: keys are short.
		if binary.LittleEndian.Uint64(b[:8])&(0x8080808080808080>>(64-8*n)) == 0 {
			b = b[n:]
		}
	}
	for len(b) > 0 && b[0] < 0x80 {
		b = b[1:]
	}
	return len(b) == 0 || utf8.Valid(b)
}

// invalidUTF8At is the offset of the first invalid byte of s.
func invalidUTF8At(s string) int {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return 0
}

// id reads a length-delimited id field of size bytes, which must be empty
// or exactly size bytes long (ValidID); an empty one is nil, as
// proto.Unmarshal leaves it. A checked record's ids are not checked again
// (see str).
func (d *decoder) id(q, end, size int) ([]byte, int, *DecodeError) {
	a, z, e := d.lenPrefix(q, end)
	switch {
	case e != nil:
		return nil, 0, e
	case a == z:
		return nil, z, nil
	case !d.checked && !ValidID(z-a, size):
		return nil, 0, idError(a, z-a, size)
	}
	return d.b[a:z:z], z, nil
}

// idError is id's error for an id of n bytes at a.
func idError(a, n, size int) *DecodeError {
	return &DecodeError{Offset: a, Msg: IDSizeError(n, size, false)}
}

// other handles a field no case of a message's switch took: an end-group
// tag (an error, as in proto.Unmarshal: OTLP has no groups), a known field
// (named in names) with an unexpected wire type (an error, or in lenient
// mode skipped like an unknown field), or an unknown field, which is
// skipped after checking it is well-formed as proto.Unmarshal does
// (protowire.ConsumeFieldValue, groups included).
func (d *decoder) other(tag uint64, p, q, end int, names []string) (int, *DecodeError) {
	num, wt := protowire.Number(tag>>3), protowire.Type(tag&7)
	if wt == protowire.EndGroupType {
		return 0, d.errf(p, "unexpected end-group tag for field %d", num)
	}
	if int(num) < len(names) && names[num] != "" && !d.lenient {
		e := d.errf(p, "unexpected wire type %s", wireTypeName(wt))
		e.wireType = true
		return 0, e.in(names[num])
	}
	n := protowire.ConsumeFieldValue(num, wt, d.b[q:end])
	if n < 0 {
		return 0, d.errf(p, "malformed unknown field %d (wire type %s): %v", num, wireTypeName(wt), wireErr(n))
	}
	return q + n, nil
}

// wireErr is protowire's message for its error code n without its
// "proto:" prefix (the protobuf module randomly follows it with a space or
// a no-break space, to keep callers from matching its messages).
func wireErr(n int) string {
	return strings.TrimLeft(strings.TrimPrefix(protowire.ParseError(n).Error(), "proto:"), " \u00a0")
}

func wireTypeName(t protowire.Type) string {
	switch t {
	case protowire.VarintType:
		return "varint"
	case protowire.Fixed64Type:
		return "fixed64"
	case protowire.BytesType:
		return "length-delimited"
	case protowire.StartGroupType:
		return "start-group"
	case protowire.EndGroupType:
		return "end-group"
	case protowire.Fixed32Type:
		return "fixed32"
	}
	return strconv.Itoa(int(t))
}

// Tags: field number and wire type as they appear on the wire.
const (
	wtVarint = uint64(protowire.VarintType)
	wtI64    = uint64(protowire.Fixed64Type)
	wtLen    = uint64(protowire.BytesType)
	wtI32    = uint64(protowire.Fixed32Type)
)

// sint32 decodes a zigzag-encoded sint32 as proto.Unmarshal does: the low
// 32 bits of the varint.
func sint32(v uint64) int32 { return int32(protowire.DecodeZigZag(v & math.MaxUint32)) }

// packed8 appends the packed fixed64 or double values (what) of the
// length-delimited field at q to dst, in storage from s. A length that is
// not a multiple of 8 is an error, as in proto.Unmarshal (its last element
// is truncated).
func packed8[T uint64 | float64](d *decoder, s *slab[T], what string, dst []T, q, end int) ([]T, int, *DecodeError) {
	a, z, e := d.lenPrefix(q, end)
	if e != nil {
		return nil, 0, e
	}
	n := z - a
	if n%8 != 0 {
		return nil, 0, d.errf(a, "packed %s length %d is not a multiple of 8", what, n)
	}
	if n == 0 {
		return dst, z, nil
	}
	out := s.alloc(n/8, a, d.n)
	for i := range out {
		bits := binary.LittleEndian.Uint64(d.b[a+8*i:])
		switch p := any(&out[i]).(type) {
		case *uint64:
			*p = bits
		case *float64:
			*p = math.Float64frombits(bits)
		}
	}
	if len(dst) > 0 {
		out = append(dst, out...)
	}
	return out, z, nil
}

// packedVarint appends the packed varints of the length-delimited field at q
// to dst.
func (d *decoder) packedVarint(dst []uint64, q, end int) ([]uint64, int, *DecodeError) {
	a, z, e := d.lenPrefix(q, end)
	if e != nil {
		return nil, 0, e
	}
	if a == z {
		return dst, z, nil
	}
	// Each varint ends with the one byte of it below 0x80.
	n := 0
	for _, c := range d.b[a:z] {
		if c < 0x80 {
			n++
		}
	}
	if d.b[z-1] >= 0x80 {
		return nil, 0, d.errf(z-1, "packed varint truncated")
	}
	out := d.slabs.packedUint64.alloc(n, a, d.n)
	for i, p := 0, a; p < z; i++ {
		v, next, e := d.varint(p, z)
		if e != nil {
			return nil, 0, e
		}
		out[i], p = v, next
	}
	if len(dst) > 0 {
		out = append(dst, out...)
	}
	return out, z, nil
}
