package sink

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/otelstep/otelstep/pipeline"
	"golang.org/x/sys/unix"
)

// resident returns how many of the pages of path's [off, off+n) are in
// the page cache.
func resident(t *testing.T, path string, off, n int64) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	page := int64(os.Getpagesize())
	start := off / page * page
	m, err := unix.Mmap(int(f.Fd()), start, int(off+n-start), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	vec := make([]byte, (int64(len(m))+page-1)/page)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal(e)
	}
	k := 0
	for _, v := range vec {
		k += int(v & 1)
	}
	return k
}

// TestWritebackDropsWrittenChunks: once a chunk has been written back,
// the next chunk boundary drops it from the page cache, and the chunk just
// written stays until its turn.
func TestWritebackDropsWrittenChunks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.jsonl")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const chunk = 256 << 10
	w := &writeback{fd: f.Fd(), chunk: chunk}
	data := bytes.Repeat([]byte("x"), chunk)
	for i := range 3 {
		n, err := f.Write(data)
		if err != nil {
			t.Fatal(err)
		}
		w.wrote(n)
		if i < 2 {
			// The chunk's writeback was started; make sure it is
			// done, so that dropping it is certain.
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if w.disabled || w.started != 3*chunk || w.last != 2*chunk || w.dropped != 0 {
		t.Fatalf("writeback state %+v, want started %d, last %d, dropped 0 (aligned down)", *w, 3*chunk, 2*chunk)
	}
	if k := resident(t, path, 0, 2*chunk); k != 0 {
		t.Errorf("%d pages of the first two chunks still cached after they were written back", k)
	}
	if k := resident(t, path, 2*chunk, chunk); k == 0 {
		t.Errorf("the newest chunk was dropped before its writeback had a chunk's time")
	}
}

// TestFileLeavesNoPageCache: the JSONL sink's file, byte for byte what it
// wrote, is out of the page cache once the sink has shut down, and a file
// that is not a regular one gets no hints.
func TestFileLeavesNoPageCache(t *testing.T) {
	path := filepath.Join(t.TempDir(), "metrics.jsonl")
	s, err := NewFile(FileOptions{Path: path, Signal: pipeline.Metrics})
	if err != nil {
		t.Fatal(err)
	}
	if s.wb == nil {
		t.Fatal("no writeback hints for a regular file")
	}
	s.wb.chunk = 64 << 10 // many boundaries in a few MiB
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var want []byte
	for i := range 40 {
		b := metricsBatch(string(rune('a'+i%26)), 500)
		want = append(want, wholeLine(b)...)
		if err := s.Enqueue(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Shutdown(ctxT(10e9)); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	// Before reading it back, which caches it again.
	if k := resident(t, path, 0, fi.Size()); k != 0 {
		t.Errorf("%d pages of the %d-byte file still cached after shutdown", k, fi.Size())
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("file is %d bytes, want the %d bytes written", len(got), len(want))
	}
	if len(got) < 20*64<<10 {
		t.Fatalf("only %d bytes: too few chunk boundaries to test", len(got))
	}
	if s.wb.disabled || s.wb.dropped != int64(len(got)) {
		t.Fatalf("writeback state %+v, want all %d bytes dropped", *s.wb, len(got))
	}
	if s2, err := NewFile(FileOptions{Path: os.DevNull, Signal: pipeline.Metrics}); err != nil {
		t.Fatal(err)
	} else if s2.wb != nil {
		t.Errorf("writeback hints for %s", os.DevNull)
	}
}
