package pipeline

import "testing"

// recovered runs f and returns what it panicked with.
func recovered(f func()) (r any) {
	defer func() { r = recover() }()
	f()
	return nil
}

// The last of k+1 releases frees, once; a lease released for the last time
// cannot be retained again (that would revive memory its producer took
// back) nor released again, in any build.
func TestLeaseLifetime(t *testing.T) {
	frees := 0
	var l Lease
	l.Reset(func() { frees++ })
	b := &Batch{Leases: []*Lease{&l}}
	b.Retain(2)
	for i := range 3 {
		if l.Released() || frees != 0 {
			t.Fatalf("after %d of 3 releases: released %v, %d frees", i, l.Released(), frees)
		}
		b.CheckLive()
		b.Release()
	}
	if !l.Released() || frees != 1 {
		t.Fatalf("after the last release: released %v, %d frees, want true and 1", l.Released(), frees)
	}
	if r := recovered(func() { b.Retain(1) }); r != ErrUseAfterRelease {
		t.Errorf("Retain after the last release: recovered %v, want %v", r, ErrUseAfterRelease)
	}
	l.Reset(func() { frees++ })
	b.Release()
	if r := recovered(b.Release); r == nil {
		t.Error("a release more than retained did not panic")
	}
	r := recovered(b.CheckLive)
	if PoisonReleased && r != ErrUseAfterRelease || !PoisonReleased && r != nil {
		t.Errorf("CheckLive of a released batch (poison build %v): recovered %v", PoisonReleased, r)
	}
}
