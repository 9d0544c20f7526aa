package pipeline

import (
	"runtime"
	"sync"
	"sync/atomic"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
)

// Shared attribute sets.
//
// A scrape sends every series of a target again with the same point
// attributes, and the span_metrics connector every series it keeps at each
// flush, so the sinks' encoders encode a series' attributes once and reuse
// the bytes while the series exists (encoding them afresh for every point
// is a sizeable part of the scrape path's CPU). Three types carry that:
//
//   - AttrSet is what a producer's series holds for its attributes, for as
//     long as it sends them: it owns an AttrEncodings.
//   - AttrEncodings is the attribute slice and the encodings of it that the
//     sinks' encoders stored.
//   - SharedAttrs leads from a data point's Attributes (the generated OTLP
//     types hold a plain slice) to the AttrEncodings of the set it is, while
//     the set exists. One is made per running service and handed to the
//     producers, which make their sets with Share, and to the sinks'
//     encoders, which Find them.
//
// A point whose Attributes are not a set's slice (decoded from a request,
// replaced or appended to by a processor, re-sliced) is simply not found,
// and is encoded afresh.

// AttrSet is the attributes a producer sends with every data point of a
// series: its series holds the *AttrSet for as long as it sends them, and
// the set's entry in the SharedAttrs that made it goes once the set is
// garbage. Its slice and stored encodings are its AttrEncodings.
type AttrSet struct {
	enc *AttrEncodings
}

// AttrEncodings is an attribute slice and the encodings of it that the
// sinks' encoders stored: the OTLP/JSON array of the KeyValues, and their
// protobuf encoding as a repeated field, one per field number (a series'
// attributes are field 7 of number and summary points, 9 of histogram
// points, and a metric's metadata is field 12).
//
// The slice is immutable: once the set is made, nobody (the producer, a
// processor, a sink) changes it, an element of it (the *KeyValue and what
// it points to) or its backing array. Its capacity is its length, so an
// append makes a new array: the result is another slice, encoded afresh,
// and the set's stays as it was.
//
// Safe for concurrent use: encoders racing to store an encoding store
// equal bytes, and either copy is kept.
type AttrEncodings struct {
	kvs   []*commonpb.KeyValue
	json  atomic.Pointer[[]byte]
	proto atomic.Pointer[protoEncoding] // one per field number, newest first
}

// protoEncoding is the protobuf encoding of a set's KeyValues as repeated
// field number field; next is the one stored before under another field
// number. Immutable once stored.
type protoEncoding struct {
	field int32
	b     []byte
	next  *protoEncoding
}

// NewAttrSet returns a set holding a copy of kvs, which may be scratch. It
// is found by no SharedAttrs: SharedAttrs.Share makes one that is.
func NewAttrSet(kvs []*commonpb.KeyValue) *AttrSet {
	e := &AttrEncodings{}
	if len(kvs) > 0 {
		e.kvs = make([]*commonpb.KeyValue, len(kvs)) // capacity = length: an append reallocates
		copy(e.kvs, kvs)
	}
	return &AttrSet{enc: e}
}

// KeyValues returns the set's slice, to be sent as a data point's
// attributes. It must not be changed (see AttrEncodings).
func (a *AttrSet) KeyValues() []*commonpb.KeyValue { return a.enc.kvs }

// Encodings returns the set's slice and stored encodings.
func (a *AttrSet) Encodings() *AttrEncodings { return a.enc }

// KeyValues returns the slice whose encodings e stores. It must not be
// changed.
func (e *AttrEncodings) KeyValues() []*commonpb.KeyValue { return e.kvs }

// JSON returns the stored OTLP/JSON array of the KeyValues, or nil. The
// bytes must not be changed.
func (e *AttrEncodings) JSON() []byte {
	if p := e.json.Load(); p != nil {
		return *p
	}
	return nil
}

// StoreJSON stores a copy of b, the OTLP/JSON array of the KeyValues, and
// returns the copy; it stores nothing and returns nil when b is empty.
func (e *AttrEncodings) StoreJSON(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	own := append([]byte(nil), b...)
	e.json.Store(&own)
	return own
}

// Proto returns the stored protobuf encoding of the KeyValues as repeated
// field number field (each KeyValue's tag, length and message), or nil.
// The bytes must not be changed.
func (e *AttrEncodings) Proto(field int32) []byte {
	for p := e.proto.Load(); p != nil; p = p.next {
		if p.field == field {
			return p.b
		}
	}
	return nil
}

// StoreProto stores a copy of b, the protobuf encoding of the KeyValues as
// repeated field number field, and returns the bytes stored for field: the
// copy, or what another encoder stored first. It stores nothing and
// returns nil when b is empty.
func (e *AttrEncodings) StoreProto(field int32, b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	n := &protoEncoding{field: field, b: append([]byte(nil), b...)}
	for {
		head := e.proto.Load()
		for p := head; p != nil; p = p.next {
			if p.field == field {
				return p.b
			}
		}
		n.next = head
		if e.proto.CompareAndSwap(head, n) {
			return n.b
		}
	}
}

// attrKey is a set's key in a SharedAttrs: the address of its slice's
// first element. No other slice starts there while the entry (which holds
// the backing array) exists.
type attrKey = **commonpb.KeyValue

// SharedAttrs leads from a data point's attribute slice to the encodings
// of the set it is. A slice is a set's when it is the set's whole slice:
// the same first element (by address, &kvs[0]) and the same length.
//
// An entry goes once its AttrSet is garbage (runtime.AddCleanup), so the
// table holds the sets of the series that exist, with nothing to release
// when series end. The entry holds the encodings, not the AttrSet.
//
// The encoders look every data point up, on several goroutines, while new
// sets are rare once the first scrapes are done: a sync.Map, whose reads of
// stable keys take no lock.
//
// A nil *SharedAttrs shares nothing: Share makes sets no one finds, and
// Find finds none. Safe for concurrent use.
type SharedAttrs struct {
	m sync.Map // attrKey → *AttrEncodings
}

// NewSharedAttrs returns an empty table.
func NewSharedAttrs() *SharedAttrs { return &SharedAttrs{} }

// Share returns a new set holding a copy of kvs (which may be scratch),
// whose encodings r's Find finds while the set exists. An empty kvs makes
// an empty set, which is found by no one (there is nothing worth storing).
func (r *SharedAttrs) Share(kvs []*commonpb.KeyValue) *AttrSet {
	a := NewAttrSet(kvs)
	if r == nil || len(a.enc.kvs) == 0 {
		return a
	}
	k := &a.enc.kvs[0]
	r.m.Store(k, a.enc)
	runtime.AddCleanup(a, r.forget, k) // k does not keep a
	return a
}

// forget drops the entry of a set that is garbage. No newer set can have
// taken k: the entry's encodings hold the array k points into.
func (r *SharedAttrs) forget(k attrKey) { r.m.Delete(k) }

// Find returns the encodings of the set whose slice kvs is, or nil: for a
// nil r, an empty kvs, a slice no set of r's is (another slice, a part of
// a set's, an append to one) and a set that is garbage once its entry is
// dropped.
func (r *SharedAttrs) Find(kvs []*commonpb.KeyValue) *AttrEncodings {
	if r == nil || len(kvs) == 0 {
		return nil
	}
	v, ok := r.m.Load(&kvs[0])
	if !ok {
		return nil
	}
	return v.(*AttrEncodings).ifLen(len(kvs))
}

// ifLen returns e if its slice has n elements, else nil.
func (e *AttrEncodings) ifLen(n int) *AttrEncodings {
	if e == nil || len(e.kvs) != n {
		return nil
	}
	return e
}

// Len returns the number of entries: the sets that exist, and those that
// are garbage whose entry is not dropped yet.
func (r *SharedAttrs) Len() int {
	if r == nil {
		return 0
	}
	n := 0
	r.m.Range(func(_, _ any) bool { n++; return true })
	return n
}
