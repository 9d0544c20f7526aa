package replay

import (
	"context"
	"path/filepath"
	"testing"
)

// A line decoded is let go of: while a long line is sent in pieces (for
// as long as the backend takes to answer them), what is held is its
// decoded batch, not that and its JSON too.
func TestDecodeLetsGoOfTheLines(t *testing.T) {
	srv := newBackend()
	defer srv.Close()
	f := filepath.Join(t.TempDir(), "traces.jsonl")
	long := bigTraceLine("long", 2000)
	writeLines(t, f, long, traceLine("short"))
	o := opts(srv, f)
	o.BatchBytes = len(long) / 10
	r, err := prepare(o)
	if err != nil {
		t.Fatal(err)
	}
	r.ctx = context.Background()
	r.sum.init()
	var chunks []*chunk
	if err := r.readFile(r.files[0], func(c *chunk) bool {
		if c.big {
			<-r.big
		}
		chunks = append(chunks, c)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if len(chunks) != 2 || len(chunks[0].lines) != 1 || len(chunks[0].lines[0].data) != len(long) {
		t.Fatalf("read %d chunks, want the long line's and the short line's", len(chunks))
	}
	items := 0
	for _, c := range chunks {
		b, _, bad := r.decode(c)
		if bad != 0 {
			t.Fatalf("%d lines did not decode", bad)
		}
		items += b.Items
		for _, l := range c.lines {
			if l.data != nil {
				t.Errorf("line %d: %d bytes of JSON held after it was decoded", l.no, len(l.data))
			}
		}
	}
	if items != 2001 {
		t.Errorf("decoded %d spans, want 2001", items)
	}
}
