package sink

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/otelstep/otelstep/pipeline"
)

// directSink opens a file sink on path and skips the test where the test
// directory's file system refuses O_DIRECT (tmpfs).
func directSink(t *testing.T, path string) *File {
	t.Helper()
	lg, _ := testLogger()
	s, err := NewFile(FileOptions{Path: path, Signal: pipeline.Metrics, Logger: lg})
	if err != nil {
		t.Fatal(err)
	}
	if s.dio == nil {
		s.f.Close()
		t.Skipf("%s takes no O_DIRECT writes", filepath.Dir(path))
	}
	return s
}

// directLoad is batches of every size the sink meets: lines of a few
// hundred bytes, lines that fill part of the buffer, and lines several
// times the buffer's size that go out in pieces.
func directLoad() []*pipeline.Batch {
	var bs []*pipeline.Batch
	for i, points := range []int{1, 3, 200, 7, 2500, 40000, 5, 11, 9000, 1, 90000, 2, 600, 3000} {
		bs = append(bs, metricsBatch(fmt.Sprint("d", i), points))
	}
	return bs
}

// readFile returns path's bytes.
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDirectWritesSameBytes: with direct writes the file holds exactly the
// lines plain writes would, after every flush it holds whole lines only
// (what a reader tailing it sees), most bytes went out as direct writes,
// and the file's length at each flush is the lines' length (the part block
// at the end written through the page cache, not padded).
func TestDirectWritesSameBytes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.jsonl")
	s := directSink(t, path)
	ctx := context.Background()
	var want []byte
	for i, b := range directLoad() {
		s.write(ctx, b)
		want = append(want, wholeLine(b)...)
		if i%3 != 2 {
			continue // a flush every third batch: direct writes mid-line in between
		}
		s.flush(ctx)
		if got := readFile(t, path); !bytes.Equal(got, want) {
			t.Fatalf("after batch %d: file is %d bytes, want %d; first difference at %d", i, len(got), len(want), firstDiff(got, want))
		}
	}
	s.flush(ctx)
	if err := s.f.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); !bytes.Equal(got, want) {
		t.Fatalf("file is %d bytes, want %d; first difference at %d", len(got), len(want), firstDiff(got, want))
	}
	if s.dio == nil {
		t.Fatal("direct mode turned itself off")
	}
	if s.dio.wrote < int64(len(want))*3/4 {
		t.Fatalf("%d of %d bytes written directly, want most", s.dio.wrote, len(want))
	}
	if !isAligned(s.buf) || s.dio.base%directAlign != 0 || s.kept != len(s.buf) || s.kept >= directAlign {
		t.Fatalf("after a flush: aligned %v, base %d, kept %d of %d buffered", isAligned(s.buf), s.dio.base, s.kept, len(s.buf))
	}
	s.dio.f.Close()
	s.f.Close()
}

// TestDirectAppendsToExisting: a file that an earlier run left at a length
// that is not a whole number of blocks, ending inside a line or not, gets
// the new lines after its own bytes, unchanged.
func TestDirectAppendsToExisting(t *testing.T) {
	for _, old := range []string{
		"",
		string(bytes.Repeat([]byte("{\"resourceMetrics\":[]}\n"), 10)),
		string(bytes.Repeat([]byte("x"), 3*directAlign)) + "\n",
		string(bytes.Repeat([]byte("{\"resourceMetrics\":[]}\n"), 500)) + "{\"resourceMet",
	} {
		t.Run(fmt.Sprint(len(old)), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "m.jsonl")
			if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
				t.Fatal(err)
			}
			s := directSink(t, path)
			want := []byte(old)
			if len(old) > 0 && old[len(old)-1] != '\n' {
				want = append(want, '\n')
			}
			if err := s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			for _, b := range directLoad() {
				if err := s.Enqueue(context.Background(), b); err != nil {
					t.Fatal(err)
				}
				want = append(want, wholeLine(b)...)
			}
			if err := s.Shutdown(ctxT(10e9)); err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, path); !bytes.Equal(got, want) {
				t.Fatalf("file is %d bytes, want %d; first difference at %d", len(got), len(want), firstDiff(got, want))
			}
		})
	}
}

// TestDirectWriteFailsOver: when a direct write fails, the sink logs it
// once, writes the same bytes through the page cache and stays there; no
// byte is lost or written twice.
func TestDirectWriteFailsOver(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.jsonl")
	s := directSink(t, path)
	lg, logs := testLogger()
	s.log = lg
	ctx := context.Background()
	load := directLoad()
	var want []byte
	for i, b := range load {
		if i == 5 {
			// The next direct write gets EBADF, as from a file system
			// that took O_DIRECT at open but not for this write.
			s.dio.f.Close()
		}
		s.write(ctx, b)
		want = append(want, wholeLine(b)...)
		if i%2 == 1 {
			s.flush(ctx)
		}
	}
	s.flush(ctx)
	if s.dio != nil {
		t.Fatal("still in direct mode after a failed direct write")
	}
	if got := readFile(t, path); !bytes.Equal(got, want) {
		t.Fatalf("file is %d bytes, want %d; first difference at %d", len(got), len(want), firstDiff(got, want))
	}
	if n := bytes.Count([]byte(logs.String()), []byte("direct write failed")); n != 1 {
		t.Fatalf("%d log lines about the failed direct write, want 1:\n%s", n, logs.String())
	}
	s.f.Close()
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestSizeFor: the direct-mode buffer is a quarter of a second's bytes,
// rounded up to a power of two within its bounds, and a rate that moves
// within a factor of four of the buffer leaves it as it is.
func TestSizeFor(t *testing.T) {
	for _, c := range []struct {
		rate float64
		size int
		want int
	}{
		{0, directBufMin, directBufMin},
		{1.9e6, directBufMin, directBufMin},    // 40,000 samples a second: 475 KB a quarter second
		{2.5e6, directBufMin, 1 << 20},         // 625 KB a quarter second
		{70 << 20, directBufMin, directBufMax}, // the traces load
		{1 << 30, directBufMax, directBufMax},  // never past the top
		{2.2e6, 1 << 20, 1 << 20},              // within a factor of four: kept
		{1.5e6, 1 << 20, 1 << 20},
		{0.9e6, 1 << 20, directBufMin}, // a quarter second's bytes under a quarter of it
		{1e3, directBufMax, directBufMin},
	} {
		if got := sizeFor(c.rate, c.size); got != c.want {
			t.Errorf("sizeFor(%g, %d) = %d, want %d", c.rate, c.size, got, c.want)
		}
	}
}

// TestDirectBufferFollowsRate: the buffer grows when the file is written
// fast and shrinks when it is written slowly, the bytes in the file staying
// those plain writes leave, and a buffer of the new size is used at once.
func TestDirectBufferFollowsRate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.jsonl")
	s := directSink(t, path)
	ctx := context.Background()
	if s.dio.size != directBufMin {
		t.Fatalf("a new sink's buffer is %d, want %d", s.dio.size, directBufMin)
	}
	now := time.Unix(1e9, 0)
	s.now = func() time.Time { return now }
	var want []byte
	step := func(points int, dt time.Duration) {
		b := metricsBatch("r", points)
		s.write(ctx, b)
		want = append(want, wholeLine(b)...)
		s.flush(ctx) // sizes the buffer by the rate since the window began
		now = now.Add(dt)
	}
	step(10, 0) // the first flush starts the window
	// About 20 MB in a second: a quarter of it is past the top.
	for range 4 {
		step(40000, 250*time.Millisecond)
	}
	step(10, 0) // a second after the window began
	if s.dio.size != directBufMax || cap(s.buf) < directBufMax || !isAligned(s.buf) {
		t.Fatalf("after %d bytes in a second: size %d, buffer cap %d aligned %v; want %d", len(want), s.dio.size, cap(s.buf), isAligned(s.buf), directBufMax)
	}
	// A few lines in ten seconds: back to the least.
	step(10, 10*time.Second)
	step(10, 0)
	if s.dio.size != directBufMin || cap(s.buf) > 2*directBufMin {
		t.Fatalf("after a slow window: size %d, buffer cap %d; want %d", s.dio.size, cap(s.buf), directBufMin)
	}
	step(40000, time.Millisecond)
	if got := readFile(t, path); !bytes.Equal(got, want) {
		t.Fatalf("file is %d bytes, want %d; first difference at %d", len(got), len(want), firstDiff(got, want))
	}
	if s.dio == nil || s.dio.wrote < int64(len(want))/2 {
		t.Fatalf("direct mode off, or too few bytes written directly")
	}
	s.dio.f.Close()
	s.f.Close()
}

// TestDirectBufferNotRegrown: batches of many resources, each well under
// the buffer but together several times it, and single metrics resources
// several times the buffer (written out while they are encoded,
// flushMidResource) go out without the buffer ever being regrown by append
// (it stays the aligned one it was made as; held whole, a big resource
// regrew it to its size and more), allocating next to nothing, and the file
// holds exactly their lines.
func TestDirectBufferNotRegrown(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.jsonl")
	s := directSink(t, path)
	ctx := context.Background()
	var batches []*pipeline.Batch
	for i := range 4 {
		b := metricsBatch(fmt.Sprint("many", i), 300)
		for j := range 60 {
			b.Metrics = append(b.Metrics, metricsBatch(fmt.Sprint("many", i, "-", j), 300+j).Metrics[0])
		}
		batches = append(batches, b)
	}
	batches = append(batches, hugeResource(40_000), metricsBatch("small", 3), hugeResource(60_000))
	var want []byte
	for i, b := range batches {
		line := wholeLine(b)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		s.write(ctx, b)
		runtime.ReadMemStats(&after)
		if a := after.TotalAlloc - before.TotalAlloc; a > uint64(len(line))/8+uint64(s.dio.size) {
			t.Errorf("batch %d: writing a %d-byte line allocated %d bytes", i, len(line), a)
		}
		want = append(want, line...)
		if c := cap(s.buf); c != s.dio.size || !isAligned(s.buf) {
			t.Fatalf("batch %d: buffer cap %d aligned %v, want the %d it was made with", i, c, isAligned(s.buf), s.dio.size)
		}
	}
	s.flush(ctx)
	if got := readFile(t, path); !bytes.Equal(got, want) {
		t.Fatalf("file is %d bytes, want %d; first difference at %d", len(got), len(want), firstDiff(got, want))
	}
	if len(want) < 8*s.dio.size {
		t.Fatalf("the load is %d bytes, want several buffers' worth", len(want))
	}
	s.dio.f.Close()
	s.f.Close()
}
