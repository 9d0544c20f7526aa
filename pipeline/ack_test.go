package pipeline

import (
	"errors"
	"testing"
)

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// An Ack ends its wait when its last reference resolves, or at once when
// one fails, keeping the first failure.
func TestAck(t *testing.T) {
	a := NewAck()
	a.Retain(2)
	a.Resolve(nil)
	a.Resolve(nil)
	if closed(a.Wait()) {
		t.Fatal("done with a reference left")
	}
	a.Resolve(nil)
	if !closed(a.Wait()) || a.Err() != nil {
		t.Fatalf("not done, or failed (%v), once every reference resolved", a.Err())
	}

	f := NewAck()
	f.Retain(1)
	first := errors.New("disk full")
	f.Resolve(first)
	if !closed(f.Wait()) || !errors.Is(f.Err(), first) {
		t.Fatalf("a failure did not end the wait: %v", f.Err())
	}
	f.Resolve(errors.New("later"))
	if !errors.Is(f.Err(), first) {
		t.Fatalf("the first failure not kept: %v", f.Err())
	}
	defer func() {
		if recover() == nil {
			t.Fatal("resolving more often than retained did not panic")
		}
	}()
	f.Resolve(nil)
}

// A batch's acks are retained and resolved together.
func TestBatchAcks(t *testing.T) {
	a, b := NewAck(), NewAck()
	batch := &Batch{Acks: []*Ack{a, b}}
	batch.RetainAcks(1)
	batch.ResolveAcks(nil)
	if closed(a.Wait()) || closed(b.Wait()) {
		t.Fatal("done with a reference left")
	}
	batch.ResolveAcks(nil)
	if !closed(a.Wait()) || !closed(b.Wait()) {
		t.Fatal("not done")
	}
}
