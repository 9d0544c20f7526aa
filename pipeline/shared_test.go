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
	if IsShared(s[1:]) {
		t.Fatal("suffix reads as shared: it would use the whole slice's encodings")
	}
	if IsShared(s[:1]) {
		t.Fatal("prefix reads as shared")
	}
	if IsShared(s[:2:2]) {
		t.Fatal("capped slice reads as shared")
	}
	// An append of one element fits the capacity: it writes the header's
	// slot in the shared backing array, so the result is unmarked and so is
	// the producer's slice (why the contract forbids appending).
	if a := append(s, kv("c", "3")); IsShared(a) || &a[0] != &s[0] {
		t.Fatal("appended slice reads as shared, or was reallocated")
	}
	if IsShared(s) {
		t.Fatal("the producer's slice still reads as shared after an append wrote its header's slot")
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

func TestEncodedStoredWithTheSlice(t *testing.T) {
	s := MarkShared([]*commonpb.KeyValue{kv("a", "1"), kv("b", "2")})
	if Encoded(s, EncodingJSON) != nil || Encoded(s, ProtoField(7)) != nil {
		t.Fatal("encoding on a fresh slice")
	}
	src := []byte("json")
	got := SetEncoded(s, EncodingJSON, src)
	src[0] = 'X' // the slice keeps its own copy
	if b := Encoded(s, EncodingJSON); string(b) != "json" || string(got) != "json" {
		t.Fatalf("Encoded = %q", b)
	}
	SetEncoded(s, ProtoField(7), []byte("pb7"))
	if b := Encoded(s, ProtoField(7)); string(b) != "pb7" {
		t.Fatalf("protobuf encoding %q", b)
	}
	if Encoded(s, ProtoField(9)) != nil {
		t.Fatal("an encoding under another field number")
	}
	SetEncoded(s, ProtoField(9), []byte("pb9")) // replaces field 7's
	if Encoded(s, ProtoField(7)) != nil || string(Encoded(s, ProtoField(9))) != "pb9" || string(Encoded(s, EncodingJSON)) != "json" {
		t.Fatal("second protobuf encoding")
	}
	if Encoded(s[1:], EncodingJSON) != nil || SetEncoded(s[1:], EncodingJSON, []byte("x")) != nil {
		t.Fatal("a suffix used the whole slice's header")
	}
	if SetEncoded(s, EncodingJSON, nil) != nil || string(Encoded(s, EncodingJSON)) != "json" {
		t.Fatal("empty encoding stored")
	}
	plain := []*commonpb.KeyValue{kv("a", "1")}
	if SetEncoded(plain, EncodingJSON, []byte("x")) != nil || Encoded(plain, EncodingJSON) != nil {
		t.Fatal("encoding stored for an unshared slice")
	}
	other := MarkShared([]*commonpb.KeyValue{kv("a", "1"), kv("b", "2")})
	if Encoded(other, EncodingJSON) != nil {
		t.Fatal("an equal slice shares another's header")
	}
}

// Sinks encode concurrently (the file writer and the HTTP workers): run
// with -race.
func TestEncodedConcurrent(t *testing.T) {
	slices := make([][]*commonpb.KeyValue, 100)
	for i := range slices {
		slices[i] = MarkShared([]*commonpb.KeyValue{kv("id", fmt.Sprint(i))})
	}
	done := make(chan bool)
	for g := range 4 {
		go func() {
			ok := true
			for range 50 {
				for i, s := range slices {
					want := fmt.Sprint(i)
					if b := Encoded(s, ProtoField(7)); b != nil && string(b) != want {
						ok = false
					}
					if g%2 == 0 {
						SetEncoded(s, ProtoField(7), []byte(want))
					}
				}
			}
			done <- ok
		}()
	}
	for range 4 {
		if !<-done {
			t.Fatal("read another slice's encoding")
		}
	}
}

// TestEncodedFreedWithTheSlice: the encodings are garbage once the series'
// slice is, with no table holding them.
func TestEncodedFreedWithTheSlice(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates")
	}
	const n = 20000
	enc := make([]byte, 256)
	before := heapInUse()
	slices := make([][]*commonpb.KeyValue, n)
	for i := range slices {
		slices[i] = MarkShared([]*commonpb.KeyValue{kv("id", fmt.Sprint(i))})
		SetEncoded(slices[i], EncodingJSON, enc)
		SetEncoded(slices[i], ProtoField(7), enc)
	}
	held := heapInUse()
	per := float64(held-before) / n
	runtime.KeepAlive(slices)
	slices = nil
	after := heapInUse()
	t.Logf("%.0f B per series with two %d B encodings; %d B left after dropping them", per, len(enc), int64(after)-int64(before))
	if per < 2*float64(len(enc)) {
		t.Fatalf("%.0f B per series: the encodings are not where this test measures", per)
	}
	if after > before+uint64(n*len(enc)/10) {
		t.Fatalf("heap %d B above the start after dropping the slices", after-before)
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
