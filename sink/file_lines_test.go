package sink

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/otelstep/otelstep/pipeline"
)

// mixedLoad is batches of every size the sink meets: lines of a few
// hundred bytes, lines that fill part of the buffer, and lines several
// times the buffer's size that go out in pieces.
func mixedLoad() []*pipeline.Batch {
	var bs []*pipeline.Batch
	for i, points := range []int{1, 3, 200, 7, 2500, 40000, 5, 11, 9000, 1, 90000, 2, 600, 3000} {
		bs = append(bs, metricsBatch(fmt.Sprint("d", i), points))
	}
	return bs
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestFileWholeLinesAtEveryFlush: appended to a file an earlier run left
// (of any length, ending inside a line or not), after every flush the file
// holds its old bytes and then exactly the whole-request encodings of the
// batches written so far, whole lines only (what a reader tailing it sees),
// and the same after Shutdown.
func TestFileWholeLinesAtEveryFlush(t *testing.T) {
	for _, old := range []string{
		"",
		string(bytes.Repeat([]byte("{\"resourceMetrics\":[]}\n"), 10)),
		string(bytes.Repeat([]byte("x"), 3*4096)) + "\n",
		string(bytes.Repeat([]byte("{\"resourceMetrics\":[]}\n"), 500)) + "{\"resourceMet",
	} {
		t.Run(fmt.Sprint(len(old)), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "m.jsonl")
			if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
				t.Fatal(err)
			}
			lg, _ := testLogger()
			s, err := NewFile(FileOptions{Path: path, Signal: pipeline.Metrics, Logger: lg})
			if err != nil {
				t.Fatal(err)
			}
			want := []byte(old)
			if len(old) > 0 && old[len(old)-1] != '\n' {
				want = append(want, '\n')
			}
			ctx := context.Background()
			// Not started: write and flush are called here, as the
			// writer goroutine calls them.
			for i, b := range mixedLoad() {
				s.write(ctx, b)
				want = append(want, wholeLine(b)...)
				if i%3 != 2 {
					continue // a flush every third batch: write-outs mid-line in between
				}
				s.flush(ctx)
				if got := readFile(t, path); !bytes.Equal(got, want) {
					t.Fatalf("after batch %d: file is %d bytes, want %d; first difference at %d", i, len(got), len(want), firstDiff(got, want))
				}
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

// TestFileBufferNotRegrown: batches of many resources, each well under the
// buffer but together several times it, and single metrics resources
// several times the buffer (written out while they are encoded,
// flushMidResource) go out without the buffer ever being regrown by append,
// allocating next to nothing, and the file holds exactly their lines.
func TestFileBufferNotRegrown(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.jsonl")
	s, err := NewFile(FileOptions{Path: path, Signal: pipeline.Metrics})
	if err != nil {
		t.Fatal(err)
	}
	defer s.f.Close()
	ctx := context.Background()
	var batches []*pipeline.Batch
	for i := range 4 {
		b := metricsBatch(fmt.Sprint("many", i), 300)
		for j := range 60 {
			b.Metrics = append(b.Metrics, metricsBatch(fmt.Sprint("many", i, "-", j), 300+j).Metrics[0])
			b.Items += 300 + j
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
		if a := after.TotalAlloc - before.TotalAlloc; a > uint64(len(line))/8+fileBufSize {
			t.Errorf("batch %d: writing a %d-byte line allocated %d bytes", i, len(line), a)
		}
		want = append(want, line...)
		if c := cap(s.buf); c != fileBufSize {
			t.Fatalf("batch %d: buffer cap %d, want the %d it was made with", i, c, fileBufSize)
		}
	}
	s.flush(ctx)
	if got := readFile(t, path); !bytes.Equal(got, want) {
		t.Fatalf("file is %d bytes, want %d; first difference at %d", len(got), len(want), firstDiff(got, want))
	}
	if len(want) < 8*fileBufSize {
		t.Fatalf("the load is %d bytes, want several buffers' worth", len(want))
	}
}
