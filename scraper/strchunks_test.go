package scraper

import (
	"bytes"
	"fmt"
	"testing"
	"unsafe"
)

func TestStrChunks(t *testing.T) {
	var sc strChunks
	var made []string
	var want []string
	buf := make([]byte, 0, 64)
	for i := range 2000 {
		buf = fmt.Appendf(buf[:0], `node_cpu_seconds_total{cpu="%d",mode="idle"}`, i)
		s := sc.str(buf)
		buf[0] = 'X' // the caller's bytes are its own again
		made = append(made, s)
		want = append(want, `node_cpu_seconds_total{cpu="`+fmt.Sprint(i)+`",mode="idle"}`)
	}
	adjacent := 0
	for i, s := range made {
		if s != want[i] {
			t.Fatalf("string %d = %q, want %q", i, s, want[i])
		}
		if i > 0 && unsafe.StringData(s) == (*byte)(unsafe.Add(unsafe.Pointer(unsafe.StringData(made[i-1])), len(made[i-1]))) {
			adjacent++
		}
	}
	// Each chunk holds about 90 of them: all but the first of a chunk
	// follow the one before.
	if min := len(made) - len(made)*50/chunkSize - 2; adjacent < min {
		t.Errorf("%d of %d strings follow the one before, want at least %d", adjacent, len(made), min)
	}
	if sc.str(nil) != "" {
		t.Error("empty string")
	}
	long := bytes.Repeat([]byte("a"), chunkSize/4+1)
	ls := sc.str(long)
	if ls != string(long) {
		t.Error("long string")
	}
	if p := uintptr(unsafe.Pointer(unsafe.StringData(ls))); p >= uintptr(unsafe.Pointer(unsafe.SliceData(sc.buf[:cap(sc.buf)]))) && p < uintptr(unsafe.Pointer(unsafe.SliceData(sc.buf[:cap(sc.buf)])))+chunkSize {
		t.Error("a string longer than a quarter chunk was put in the chunk")
	}
}
