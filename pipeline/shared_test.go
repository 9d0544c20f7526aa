package pipeline

import (
	"fmt"
	"runtime"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
)

func kv(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

func TestMarkShared(t *testing.T) {
	if IsShared(nil) || IsShared(MarkShared(nil)) || IsShared(MarkShared([]*commonpb.KeyValue{})) {
		t.Fatal("empty slice marked")
	}
	orig := make([]*commonpb.KeyValue, 2, 8) // spare capacity must not be written into
	orig[0], orig[1] = kv("a", "1"), kv("b", "2")
	if IsShared(orig) {
		t.Fatal("unmarked slice reads as shared")
	}
	s := MarkShared(orig)
	if !IsShared(s) || len(s) != 2 || s[0] != orig[0] || s[1] != orig[1] {
		t.Fatalf("MarkShared: shared=%v %v", IsShared(s), s)
	}
	if orig[:3][2] != nil {
		t.Fatal("MarkShared wrote into the caller's spare capacity")
	}
	if again := MarkShared(s); &again[0] != &s[0] {
		t.Fatal("re-marking copied")
	}
	if !IsShared(s[1:]) {
		t.Fatal("suffix of a shared slice should stay shared")
	}
	if IsShared(s[:1]) {
		t.Fatal("prefix reads as shared")
	}
	if IsShared(s[:2:2]) {
		t.Fatal("capped slice reads as shared")
	}
	// A plain append reallocates; an append within capacity overwrites the
	// sentinel. Either way the result is unmarked.
	if a := append(s, kv("c", "3")); IsShared(a) {
		t.Fatal("appended slice reads as shared")
	}
	s2 := MarkShared([]*commonpb.KeyValue{kv("x", "1"), kv("y", "2")})
	_ = append(s2[:1], kv("z", "3")) // overwrites s2[1]: a contract breach, but...
	if IsShared(s2[:1]) {
		t.Fatal("prefix after in-place append reads as shared")
	}
	s3 := MarkShared([]*commonpb.KeyValue{kv("x", "1")})
	grown := append(s3[:1:2], kv("y", "2")) // lands on the sentinel's slot
	if IsShared(s3) || IsShared(grown) {
		t.Fatal("slice appended into the sentinel slot still reads as shared")
	}
}

func TestAttrCacheGetPut(t *testing.T) {
	c := NewAttrCache(0, 0)
	s := MarkShared([]*commonpb.KeyValue{kv("a", "1"), kv("b", "2")})
	if _, ok := c.Get(s, 7); ok {
		t.Fatal("hit on an empty cache")
	}
	src := []byte("enc")
	got := c.Put(s, 7, src)
	src[0] = 'X' // the cache keeps its own copy
	if b, ok := c.Get(s, 7); !ok || string(b) != "enc" || string(got) != "enc" {
		t.Fatalf("Get = %q, %v", b, ok)
	}
	if _, ok := c.Get(s, 9); ok {
		t.Fatal("hit under another tag")
	}
	if _, ok := c.Get(s[1:], 7); ok {
		t.Fatal("suffix hit the whole slice's entry")
	}
	if c.Put(s, 9, nil) != nil || c.Len() != 1 {
		t.Fatal("empty encoding stored")
	}
	c.Put(s, 7, []byte("enc2"))
	if b, _ := c.Get(s, 7); string(b) != "enc2" || c.Len() != 1 || c.Bytes() != entryCost(b) {
		t.Fatalf("replace: %q len %d bytes %d", b, c.Len(), c.Bytes())
	}
}

// A series that stops appearing is dropped within two sweep periods; one
// used once per period is never dropped.
func TestAttrCacheSweepEvicts(t *testing.T) {
	const every = 4
	c := NewAttrCache(every, 0)
	live := MarkShared([]*commonpb.KeyValue{kv("s", "live")})
	dead := MarkShared([]*commonpb.KeyValue{kv("s", "dead")})
	deadKey := attrKey{first: &dead[0], n: 1}
	c.Tick()
	c.Put(live, 0, []byte("L"))
	c.Put(dead, 0, []byte("D")) // used in the first period only
	for call := 2; call <= 5*every; call++ {
		c.Tick()
		if call%every == 3 { // once per period
			if _, ok := c.Get(live, 0); !ok {
				t.Fatalf("call %d: live series evicted", call)
			}
		}
		if _, ok := c.m[deadKey]; ok && call > 2*every {
			t.Fatalf("call %d: dead series still cached", call)
		}
	}
	b, ok := c.Get(live, 0)
	if !ok || c.Len() != 1 || c.Bytes() != entryCost(b) {
		t.Fatalf("after eviction: live %v, Len %d, Bytes %d", ok, c.Len(), c.Bytes())
	}
}

// A stream of slices that never repeat (every scrape a new series) keeps
// the map bounded by the sweep period, and by maxBytes in any case.
func TestAttrCacheBoundedUnderChurn(t *testing.T) {
	const every, perCall = 16, 100
	c := NewAttrCache(every, 0)
	maxLen := 0
	for call := range 50 * every {
		c.Tick()
		for i := range perCall {
			s := MarkShared([]*commonpb.KeyValue{kv("id", fmt.Sprint(call, "/", i))})
			if _, ok := c.Get(s, 0); ok {
				t.Fatal("hit on a never-seen slice")
			}
			c.Put(s, 0, []byte("0123456789"))
		}
		maxLen = max(maxLen, c.Len())
	}
	if limit := 2 * every * perCall; maxLen > limit {
		t.Fatalf("map reached %d entries, bound %d", maxLen, limit)
	}

	small := NewAttrCache(1<<30, 100*attrEntryOverhead) // never sweeps: only maxBytes bounds it
	for i := range 10000 {
		s := MarkShared([]*commonpb.KeyValue{kv("id", fmt.Sprint(i))})
		small.Put(s, 0, []byte("0123456789"))
	}
	if small.Bytes() > 100*attrEntryOverhead || small.Len() >= 100 {
		t.Fatalf("maxBytes not honoured: %d entries, %d bytes", small.Len(), small.Bytes())
	}
}

// TestAttrCacheEntryCost measures what an entry really costs on the heap,
// so attrEntryOverhead (and the documented bound) is not a guess.
func TestAttrCacheEntryCost(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates")
	}
	const n = 50000
	enc := make([]byte, 64) // a typical scraper point's attributes in protobuf
	slices := make([][]*commonpb.KeyValue, n)
	for i := range slices {
		slices[i] = MarkShared([]*commonpb.KeyValue{kv("id", fmt.Sprint(i))})
	}
	c := NewAttrCache(0, 1<<30)
	before := heapInUse()
	for _, s := range slices {
		c.Put(s, 0, enc)
	}
	after := heapInUse()
	per := float64(after-before) / n
	t.Logf("%.0f B per entry on the heap for %d B encodings (accounted %d)", per, len(enc), c.Bytes()/n)
	if over := per - float64(len(enc)); over > 2*attrEntryOverhead {
		t.Errorf("entry overhead %.0f B, more than twice the accounted %d B", over, attrEntryOverhead)
	}
	runtime.KeepAlive(slices)
	runtime.KeepAlive(c)
}

func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
