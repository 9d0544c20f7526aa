package sink

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/otelstep/otelstep/pipeline"
)

func readLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Fatalf("file does not end with a newline")
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

func TestFileConcurrentWholeLinesRedacted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "metrics.jsonl")
	f, err := NewFile(FileOptions{Path: path, Signal: pipeline.Metrics, QueueSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	const G, N = 8, 50
	var wg sync.WaitGroup
	for g := range G {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range N {
				if err := f.Enqueue(context.Background(), metricsBatch(fmt.Sprintf("%d-%d", g, i), 1+i%40)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := f.Shutdown(ctxT(patience)); err != nil {
		t.Fatal(err)
	}
	if err := f.Enqueue(context.Background(), metricsBatch("late", 1)); !errors.Is(err, pipeline.ErrStopped) {
		t.Fatalf("Enqueue after Shutdown: %v", err)
	}
	lines := readLines(t, path)
	if len(lines) != G*N {
		t.Fatalf("got %d lines, want %d", len(lines), G*N)
	}
	seen := map[string]bool{}
	for i, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Fatalf("line %d not valid JSON: %.200s", i, l)
		}
		if strings.Contains(l, "Authorization") || strings.Contains(l, "s3cr3t") {
			t.Fatalf("line %d leaks the Authorization attribute", i)
		}
		for g := range G {
			for n := range N {
				id := fmt.Sprintf(`"%d-%d"`, g, n)
				if strings.Contains(l, id) {
					seen[id] = true
				}
			}
		}
	}
	if len(seen) != G*N {
		t.Fatalf("saw %d distinct batches, want %d", len(seen), G*N)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm()&^0o644 != 0 {
		t.Fatalf("mode %v", st.Mode())
	}
}

func TestFileAppendsToExisting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.jsonl")
	if err := os.WriteFile(path, []byte("{\"existing\":true}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		f, err := NewFile(FileOptions{Path: path, Signal: pipeline.Metrics})
		if err != nil {
			t.Fatal(err)
		}
		_ = f.Start(context.Background())
		if err := f.Enqueue(context.Background(), metricsBatch(fmt.Sprint("run", i), 3)); err != nil {
			t.Fatal(err)
		}
		if err := f.Shutdown(ctxT(patience)); err != nil {
			t.Fatal(err)
		}
	}
	lines := readLines(t, path)
	if len(lines) != 3 || lines[0] != `{"existing":true}` || !strings.Contains(lines[1], "run0") || !strings.Contains(lines[2], "run1") {
		t.Fatalf("lines: %q", lines)
	}
}

func TestFileFlushesSoonWithoutShutdown(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.jsonl")
	f, err := NewFile(FileOptions{Path: path, Signal: pipeline.Metrics})
	if err != nil {
		t.Fatal(err)
	}
	_ = f.Start(context.Background())
	defer f.Shutdown(ctxT(patience))
	_ = f.Enqueue(context.Background(), metricsBatch("x", 2))
	waitFor(t, patience, func() bool {
		data, _ := os.ReadFile(path)
		return bytes.Count(data, []byte("\n")) == 1
	}, "line on disk")
}

func TestFileShutdownFlushesEverything(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.jsonl")
	f, err := NewFile(FileOptions{Path: path, Signal: pipeline.Metrics, QueueSize: 2000})
	if err != nil {
		t.Fatal(err)
	}
	// Enqueue before Start: everything is buffered, Shutdown must write it.
	for i := range 1000 {
		if err := f.Enqueue(context.Background(), metricsBatch(fmt.Sprint(i), 5)); err != nil {
			t.Fatal(err)
		}
	}
	_ = f.Start(context.Background())
	if err := f.Shutdown(ctxT(patience)); err != nil {
		t.Fatal(err)
	}
	if n := len(readLines(t, path)); n != 1000 {
		t.Fatalf("got %d lines", n)
	}
}

// gateWriter blocks every Write until the gate is open.
type gateWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	gate   chan struct{}
	writes atomic.Int32
	fail   atomic.Int32 // fail this many writes first
}

func (w *gateWriter) Write(p []byte) (int, error) {
	w.writes.Add(1)
	<-w.gate
	if w.fail.Add(-1) >= 0 {
		return 0, errors.New("disk on fire")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *gateWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func TestFileBlocksWhenQueueFullAndFanoutNoPartial(t *testing.T) {
	w := &gateWriter{gate: make(chan struct{})}
	f := newFile(FileOptions{Name: "file/metrics", Path: "/stalled", Signal: pipeline.Metrics, QueueSize: 1}, w)
	_ = f.Start(context.Background())
	// Batch 0 is taken by the writer, which stalls in Write.
	if err := f.Enqueue(context.Background(), metricsBatch("0", 1)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, patience, func() bool { return w.writes.Load() == 1 }, "writer stalled")
	// Batch 1 fills the queue.
	if err := f.Enqueue(ctxT(patience), metricsBatch("1", 1)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := f.Enqueue(ctxT(50*time.Millisecond), metricsBatch("2", 1)); !errors.Is(err, pipeline.ErrFull) {
		t.Fatalf("Enqueue on full queue: %v, want ErrFull", err)
	}
	if el := time.Since(start); el < 40*time.Millisecond {
		t.Fatalf("Enqueue did not block (%v)", el)
	}

	// Fanout: the full file sink refuses, so the other sink must not get it.
	rec := &recorder{}
	fo := NewFanout(rec, f)
	if err := fo.Consume(ctxT(30*time.Millisecond), metricsBatch("3", 1)); !errors.Is(err, pipeline.ErrFull) {
		t.Fatalf("Fanout.Consume: %v, want ErrFull", err)
	}
	if n := len(rec.got()); n != 0 {
		t.Fatalf("non-blocking sink got %d batches after ErrFull", n)
	}

	// A blocked Enqueue proceeds as soon as the writer resumes.
	errc := make(chan error, 1)
	go func() { errc <- fo.Consume(ctxT(patience), metricsBatch("4", 1)) }()
	select {
	case err := <-errc:
		t.Fatalf("Consume returned early: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(w.gate)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if n := len(rec.got()); n != 1 {
		t.Fatalf("non-blocking sink got %d batches, want 1", n)
	}
	if err := f.Shutdown(ctxT(patience)); err != nil {
		t.Fatal(err)
	}
	out := w.String()
	for _, id := range []string{`"0"`, `"1"`, `"4"`} {
		if !strings.Contains(out, id) {
			t.Errorf("batch %s not written", id)
		}
	}
	for _, id := range []string{`"2"`, `"3"`} {
		if strings.Contains(out, id) {
			t.Errorf("refused batch %s was written", id)
		}
	}
}

func TestFileWriteErrorLoggedAndRetried(t *testing.T) {
	f, w, logs := failingFile("/var/log/x.jsonl", 2)
	_ = f.Start(context.Background())
	_ = f.Enqueue(context.Background(), metricsBatch("retried", 1))
	if err := f.Shutdown(ctxT(patience)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(w.String(), "retried") || strings.Count(w.String(), "\n") != 1 {
		t.Fatalf("line not written exactly once: %q", w.String())
	}
	if l := logs.String(); !strings.Contains(l, "disk on fire") || !strings.Contains(l, "/var/log/x.jsonl") {
		t.Fatalf("write error not logged with path: %s", l)
	}
}
