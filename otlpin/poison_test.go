package otlpin

import (
	"bytes"
	"testing"

	"github.com/otelstep/otelstep/pipeline"
)

// In a poison build a request body let go of by its batch's last holder
// is overwritten with the poison byte and not pooled again: strings a
// batch decoded from it read as poison, and its lease stays released for
// Batch.CheckLive to see.
func TestReleasedBodyIsPoisoned(t *testing.T) {
	if !pipeline.PoisonReleased {
		t.Skip("poisoning is a build with -tags poison")
	}
	var p bodyPool
	bd := p.get(3 << 10)
	copy(bd.b, bytes.Repeat([]byte("span"), len(bd.b)/4))
	view := bd.b // what a decoded batch keeps a view of
	b := &pipeline.Batch{Signal: pipeline.Traces, Leases: []*pipeline.Lease{&bd.lease}}
	b.Retain(1) // two sinks
	b.Release()
	b.CheckLive() // one still holds it: live
	b.Release()
	if want := bytes.Repeat([]byte{pipeline.PoisonByte}, len(view)); !bytes.Equal(view, want) {
		t.Fatalf("a released body reads %q..., want all %#x", view[:8], pipeline.PoisonByte)
	}
	if n := p.returned.Load(); n != 1 {
		t.Fatalf("%d bodies let go of, want the one", n)
	}
	if again := p.get(3 << 10); again == bd {
		t.Fatal("a released body was pooled again")
	}
	defer func() {
		if r := recover(); r != pipeline.ErrUseAfterRelease {
			t.Fatalf("CheckLive of a released batch: recovered %v, want %v", r, pipeline.ErrUseAfterRelease)
		}
	}()
	b.CheckLive()
}
