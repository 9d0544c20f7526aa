package lines

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestReaderLines(t *testing.T) {
	type got struct {
		data             string
		start            int64
		newline, tooLong bool
	}
	// A buffer smaller than a line makes the reader assemble fragments.
	lr := NewReader(strings.NewReader("abc\n0123456789\n\nxy"), 16, 5, 100)
	want := []got{
		{"abc", 100, true, false},
		{"", 104, true, true}, // 10 bytes over max 5: reported, not kept
		{"", 115, true, false},
		{"xy", 116, false, false}, // the last line, no newline yet
	}
	for i, w := range want {
		data, start, newline, tooLong, err := lr.Next()
		if err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if g := (got{string(data), start, newline, tooLong}); g != w {
			t.Errorf("line %d = %+v, want %+v", i, g, w)
		}
		if tooLong && data != nil {
			t.Errorf("line %d: too long but data %q", i, data)
		}
	}
	if _, _, _, _, err := lr.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last line: %v, want io.EOF", err)
	}
	if lr.Offset() != 118 {
		t.Errorf("Offset = %d, want 118", lr.Offset())
	}
	lr.Reset(strings.NewReader("next\n"), 200)
	if data, start, _, _, err := lr.Next(); err != nil || string(data) != "next" || start != 200 {
		t.Errorf("after Reset: %q at %d, %v", data, start, err)
	}
}
