package pipeline

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
)

func kv(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

func TestAttrSetCopiesAndCannotBeGrownInPlace(t *testing.T) {
	src := make([]*commonpb.KeyValue, 2, 8)
	src[0], src[1] = kv("a", "1"), kv("b", "2")
	r := NewSharedAttrs()
	a := r.Share(src)
	s := a.KeyValues()
	if len(s) != 2 || cap(s) != 2 || s[0] != src[0] || s[1] != src[1] || &s[0] == &src[0] {
		t.Fatalf("Share: len %d cap %d, not a copy of its argument with capacity = length", len(s), cap(s))
	}
	src[0] = kv("x", "scratch reused") // the caller's scratch is its own
	if s[0].Key != "a" {
		t.Fatal("the set's slice changed with the caller's")
	}
	grown := append(s, kv("c", "3"))
	if &grown[0] == &s[0] {
		t.Fatal("an append wrote into the set's backing array")
	}
	if r.Find(grown) != nil || r.Find(s) != a.Encodings() {
		t.Fatal("an appended slice is found as the set, or the set is not")
	}
	for _, empty := range []*AttrSet{NewAttrSet(nil), r.Share(nil), r.Share([]*commonpb.KeyValue{})} {
		if len(empty.KeyValues()) != 0 || r.Find(empty.KeyValues()) != nil {
			t.Fatal("an empty set is found")
		}
	}
}

// Find finds a set by its whole slice only: not a part of it, not an equal
// slice, not a set of another table or of none.
func TestSharedAttrsFind(t *testing.T) {
	r, other := NewSharedAttrs(), NewSharedAttrs()
	a := r.Share([]*commonpb.KeyValue{kv("a", "1"), kv("b", "2"), kv("c", "3")})
	s := a.KeyValues()
	if r.Find(s) != a.Encodings() || r.Find(s[:3:3]) != a.Encodings() {
		t.Fatal("the set's slice is not found")
	}
	for name, part := range map[string][]*commonpb.KeyValue{"prefix": s[:2], "suffix": s[1:], "middle": s[1:2], "empty": s[:0], "nil": nil} {
		if r.Find(part) != nil {
			t.Errorf("%s of the set's slice found as the set", name)
		}
	}
	if r.Find(append([]*commonpb.KeyValue(nil), s...)) != nil {
		t.Error("an equal slice found as the set")
	}
	if other.Find(s) != nil {
		t.Error("another table finds the set")
	}
	if r.Find(NewAttrSet(s).KeyValues()) != nil {
		t.Error("a set made by NewAttrSet found")
	}
	var none *SharedAttrs
	if b := none.Share(s); none.Find(b.KeyValues()) != nil || len(b.KeyValues()) != 3 || none.Len() != 0 {
		t.Error("a nil table shares")
	}
	if r.Len() != 1 {
		t.Errorf("Len %d, want 1", r.Len())
	}
	runtime.KeepAlive(a)
}

func TestAttrSetStoredEncodings(t *testing.T) {
	a := NewSharedAttrs().Share([]*commonpb.KeyValue{kv("a", "1")}).Encodings()
	if a.JSON() != nil || a.Proto(7) != nil {
		t.Fatal("a new set has encodings")
	}
	src := []byte("json")
	if got := a.StoreJSON(src); string(got) != "json" || &got[0] == &src[0] {
		t.Fatalf("StoreJSON returned %q, not a copy", got)
	}
	src[0] = 'X'
	if string(a.JSON()) != "json" {
		t.Fatal("the stored JSON changed with the caller's buffer")
	}
	if a.StoreJSON(nil) != nil || string(a.JSON()) != "json" {
		t.Fatal("an empty encoding replaced the stored one")
	}
	// One protobuf encoding per field number, each kept.
	a.StoreProto(7, []byte("pb7"))
	a.StoreProto(9, []byte("pb9"))
	if string(a.Proto(7)) != "pb7" || string(a.Proto(9)) != "pb9" || a.Proto(12) != nil {
		t.Fatalf("Proto: 7 %q, 9 %q, 12 %q", a.Proto(7), a.Proto(9), a.Proto(12))
	}
	// A second store under a field number keeps the first (both encoders
	// made equal bytes) and returns it.
	if got := a.StoreProto(7, []byte("other")); string(got) != "pb7" || string(a.Proto(7)) != "pb7" {
		t.Fatalf("second StoreProto(7) returned %q, stored %q", got, a.Proto(7))
	}
	if a.StoreProto(12, nil) != nil || a.Proto(12) != nil {
		t.Fatal("an empty protobuf encoding stored")
	}
}

// An entry goes with its set: sets nobody holds are dropped, and found no
// more through the slices points in flight still hold; sets held stay
// found.
func TestSharedAttrsEntriesGoWithTheirSets(t *testing.T) {
	r := NewSharedAttrs()
	sets := make([]*AttrSet, 1000)
	var dropped [][]*commonpb.KeyValue // the slices only, as points in flight hold them
	const kept = 10
	for i := range sets {
		sets[i] = r.Share([]*commonpb.KeyValue{kv("id", fmt.Sprint(i))})
		sets[i].Encodings().StoreJSON([]byte("enc"))
		if i >= kept {
			dropped = append(dropped, sets[i].KeyValues())
		}
	}
	for i, a := range sets {
		if r.Find(a.KeyValues()) != a.Encodings() {
			t.Fatalf("set %d not found", i)
		}
	}
	clear(sets[kept:])
	sets = sets[:kept]
	waitFor(t, func() bool { runtime.GC(); return r.Len() == kept }, func() string { return fmt.Sprintf("%d entries", r.Len()) })
	for i, s := range dropped {
		if r.Find(s) != nil {
			t.Fatalf("dropped set %d found through a point's slice", i)
		}
	}
	for i, a := range sets {
		if e := r.Find(a.KeyValues()); e != a.Encodings() || string(e.JSON()) != "enc" {
			t.Fatalf("held set %d not found", i)
		}
	}
	// A set made after the others went is found as any.
	a := r.Share([]*commonpb.KeyValue{kv("new", "1")})
	if r.Find(a.KeyValues()) != a.Encodings() {
		t.Fatal("a new set not found")
	}
	runtime.KeepAlive(sets)
}

// The sinks' encoders look sets up and store encodings on several
// goroutines while producers share new ones (run with -race).
func TestSharedAttrsConcurrent(t *testing.T) {
	r := NewSharedAttrs()
	sets := make([]*AttrSet, 200)
	for i := range sets {
		sets[i] = r.Share([]*commonpb.KeyValue{kv("id", fmt.Sprint(i))})
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 4 {
		wg.Go(func() {
			for range 20 {
				for i, a := range sets {
					want := fmt.Sprint(i)
					f := r.Find(a.KeyValues())
					if f != a.Encodings() {
						errs <- fmt.Errorf("set %d not found", i)
						return
					}
					if b := f.Proto(int32(7 + 2*(g%2))); b != nil && string(b) != want {
						errs <- fmt.Errorf("set %d: stored %q", i, b)
						return
					}
					f.StoreProto(int32(7+2*(g%2)), []byte(want))
					if b := f.JSON(); b != nil && string(b) != want {
						errs <- fmt.Errorf("set %d: stored JSON %q", i, b)
						return
					}
					f.StoreJSON([]byte(want))
				}
			}
		})
	}
	wg.Go(func() { // a producer sharing new sets meanwhile
		for i := range 500 {
			a := r.Share([]*commonpb.KeyValue{kv("new", fmt.Sprint(i))})
			if r.Find(a.KeyValues()) != a.Encodings() {
				errs <- fmt.Errorf("new set %d not found", i)
				return
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// waitFor waits up to a minute for cond, which may run a GC.
func waitFor(t *testing.T, cond func() bool, state func() string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("not within a minute: %s", state())
		}
		runtime.Gosched()
	}
}
