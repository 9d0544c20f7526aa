package pool

import (
	"runtime"
	"testing"
)

type thing struct{ n int }

// A FreeList hands back what was put, last first, keeps at most Keep, and
// keeps them through garbage collections; New makes what it lacks.
func TestFreeList(t *testing.T) {
	made := 0
	l := FreeList[thing]{Keep: 2, New: func() *thing { made++; return &thing{n: -1} }}
	a, b, c := &thing{1}, &thing{2}, &thing{3}
	l.Put(a)
	l.Put(b)
	l.Put(c) // past Keep: dropped
	l.Put(nil)
	if l.Len() != 2 {
		t.Fatalf("kept %d, want 2", l.Len())
	}
	runtime.GC()
	runtime.GC()
	if x := l.Get(); x != b {
		t.Fatalf("got %v, want the last put (2)", x)
	}
	if x := l.Get(); x != a {
		t.Fatalf("got %v, want 1", x)
	}
	if x := l.Get(); x.n != -1 || made != 1 {
		t.Fatalf("an empty list gave %v (made %d), want a new one", x, made)
	}
	var zero FreeList[thing]
	if x := zero.Get(); x == nil || x.n != 0 {
		t.Fatalf("the zero FreeList gave %v", x)
	}
}

// A Pool makes a value with New, or new(T) without; a value put may come
// back (a sync.Pool need not hand it back, under -race it drops some).
func TestPool(t *testing.T) {
	var p Pool[thing]
	if x := p.Get(); x == nil || x.n != 0 {
		t.Fatalf("zero Pool gave %v", x)
	}
	q := Pool[thing]{New: func() *thing { return &thing{n: 7} }}
	if x := q.Get(); x.n != 7 {
		t.Fatalf("New not used: %v", x)
	}
	x := &thing{n: 9}
	q.Put(x)
	q.Put(nil)
	if y := q.Get(); y != x && y.n != 7 {
		t.Fatalf("got %v, want the value put or a new one", y)
	}
}
