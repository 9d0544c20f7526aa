package pipeline

import (
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
// Appending to a marked slice is safe: the result either has a new backing
// array, or (after re-slicing within the spare slot) overwrites the
// sentinel, and in both cases reads as unmarked. Shortening it (kvs[:k])
// reads as unmarked too; a suffix (kvs[i:]) stays marked and is a distinct,
// equally immutable slice to the caches.

// sharedSentinel marks a shared slice: it sits in the slot just past len.
// It is compared by address only and never mutated (like io.EOF); the
// encoders never see it, as it is outside every slice's length.
var sharedSentinel = &commonpb.KeyValue{Key: "otelstep.pipeline.shared"}

// MarkShared returns a copy of kvs whose backing array holds one extra slot
// past len with the sentinel that IsShared checks (cap is exactly len+1, so
// a plain append reallocates and drops the mark). The caller promises what
// the contract above says. An empty slice is returned as is, never marked:
// it has no encoding worth caching and no element to identify it by.
func MarkShared(kvs []*commonpb.KeyValue) []*commonpb.KeyValue {
	if len(kvs) == 0 || IsShared(kvs) {
		return kvs
	}
	out := make([]*commonpb.KeyValue, len(kvs), len(kvs)+1)
	copy(out, kvs)
	out[:len(kvs)+1][len(kvs)] = sharedSentinel
	return out
}

// IsShared reports whether kvs was returned by MarkShared (or is a suffix of
// such a slice) and has not been appended to since.
func IsShared(kvs []*commonpb.KeyValue) bool {
	return len(kvs) > 0 && cap(kvs) > len(kvs) && kvs[:len(kvs)+1][len(kvs)] == sharedSentinel
}

// Attribute-encoding cache.

const (
	// DefaultAttrCacheSweepEvery is how many encode calls (requests, file
	// lines) pass between sweeps. An entry survives a sweep if it was used
	// since the previous one, so a live series must appear at least once per
	// 1024 calls of one encoder: a scrape cycle of up to ~1000 targets (one
	// batch each per scrape) keeps every series cached. A dead series' entry
	// goes away within two periods.
	DefaultAttrCacheSweepEvery = 1024
	// DefaultAttrCacheMaxBytes bounds one cache's accounted memory (encoded
	// bytes plus attrEntryOverhead per entry). A series with 4-6 labels
	// costs ~165-260 B on the heap in protobuf and ~270-440 B in JSON, so
	// this holds ~30-45k series for protobuf and ~18-28k for JSON: a job's
	// targets with room to spare. Beyond it new slices are encoded uncached
	// until a sweep makes room. Three caches run per metrics pipeline (the
	// file sink and the HTTP sink's two workers): 24 MiB in the worst case,
	// so the bound is kept low; memory matters beside a benchmark job.
	DefaultAttrCacheMaxBytes = 8 << 20
)

// attrEntryOverhead is what one entry costs besides its encoded bytes: the
// map slot (key 24 B + value 32 B, at the swiss table's load factor, plus
// control bytes) and the copy's size-class rounding. TestAttrCacheEntryCost
// measures ~85 B; 112 leaves room for the map's growth steps.
const attrEntryOverhead = 112

// attrKey identifies a shared slice: its first element's address and its
// length, plus the caller's tag (the protobuf field number, since the same
// slice encodes differently under another field). Since the sentinel sits
// at one fixed index of an array only MarkShared creates, the address alone
// already implies the length (a suffix has another address); the length is
// kept as a cheap second check. Holding the address in the map keeps the backing array alive, so
// it cannot be freed and reused by a different slice while the entry
// exists: a hit always means the very same, immutable, elements.
type attrKey struct {
	first **commonpb.KeyValue
	n     int
	tag   int32
}

type attrEntry struct {
	b   []byte
	gen uint32 // the sweep generation it was last used in
}

// AttrCache maps shared attribute slices (see MarkShared) to bytes an
// encoder produced from them. It is not safe for concurrent use: give each
// encoding goroutine its own.
//
// Bound: Tick sweeps every sweepEvery calls, dropping the entries not used
// since the previous sweep, and Put refuses entries that would take the
// accounted size past maxBytes. So the map never holds more than
// maxBytes/attrEntryOverhead entries, nor more than maxBytes of encodings
// and overhead; the dead series it still references (and so keeps alive)
// are gone after at most 2*sweepEvery calls.
type AttrCache struct {
	m          map[attrKey]attrEntry
	gen        uint32
	calls      int
	bytes      int
	sweepEvery int
	maxBytes   int
}

// NewAttrCache returns an empty cache; values <= 0 take the defaults.
func NewAttrCache(sweepEvery, maxBytes int) *AttrCache {
	if sweepEvery <= 0 {
		sweepEvery = DefaultAttrCacheSweepEvery
	}
	if maxBytes <= 0 {
		maxBytes = DefaultAttrCacheMaxBytes
	}
	return &AttrCache{sweepEvery: sweepEvery, maxBytes: maxBytes}
}

// Tick counts one encode call; call it once per request encoded, before
// any Get, so a sweep never drops an entry between a Get and its use within
// one request.
func (c *AttrCache) Tick() {
	c.calls++
	if c.calls < c.sweepEvery {
		return
	}
	c.calls = 0
	for k, e := range c.m {
		if e.gen != c.gen {
			c.bytes -= entryCost(e.b)
			delete(c.m, k)
		}
	}
	c.gen++
}

// Get returns the bytes cached for kvs under tag. kvs must be shared
// (IsShared); callers check that first, so unshared slices never touch the
// map. The returned bytes must not be modified.
func (c *AttrCache) Get(kvs []*commonpb.KeyValue, tag int32) ([]byte, bool) {
	k := attrKey{first: &kvs[0], n: len(kvs), tag: tag}
	e, ok := c.m[k]
	if !ok {
		return nil, false
	}
	if e.gen != c.gen {
		// Write back only once per sweep period: the common hit is a
		// single lookup.
		e.gen = c.gen
		c.m[k] = e
	}
	return e.b, true
}

// Put stores a copy of b as the encoding of shared kvs under tag and
// returns the copy, or nil (storing nothing) when the cache is full or b is
// empty. The caller keeps ownership of b.
func (c *AttrCache) Put(kvs []*commonpb.KeyValue, tag int32, b []byte) []byte {
	if len(b) == 0 || c.bytes+entryCost(b) > c.maxBytes {
		return nil
	}
	if c.m == nil {
		c.m = make(map[attrKey]attrEntry)
	}
	k := attrKey{first: &kvs[0], n: len(kvs), tag: tag}
	if old, ok := c.m[k]; ok {
		c.bytes -= entryCost(old.b)
	}
	own := append([]byte(nil), b...)
	c.m[k] = attrEntry{b: own, gen: c.gen}
	c.bytes += entryCost(own)
	return own
}

// Len returns the number of entries.
func (c *AttrCache) Len() int { return len(c.m) }

// Bytes returns the accounted size: encoded bytes plus a fixed overhead per
// entry.
func (c *AttrCache) Bytes() int { return c.bytes }

func entryCost(b []byte) int { return cap(b) + attrEntryOverhead }
