package sink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/otelstep/otelstep/otlpwire"
	"github.com/otelstep/otelstep/pipeline"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
)

// sizeWriter records the size of every Write.
type sizeWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	sizes []int
}

func (w *sizeWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sizes = append(w.sizes, len(p))
	return w.buf.Write(p)
}

// bigBatches returns, per signal, a batch of many resources whose JSONL line
// is several times the file sink's buffer, and the largest encoding of one
// of its resources.
func bigBatches(t *testing.T) []*pipeline.Batch {
	t.Helper()
	var ms []*metricspb.ResourceMetrics
	for i := range 100 {
		ms = append(ms, metricsBatch(fmt.Sprint("m", i), 300).Metrics...)
	}
	var ts []*pipeline.ResourceSpans
	for range 50 {
		ts = append(ts, randomSpans(100).Traces...)
	}
	var ls []*logspb.ResourceLogs
	for len(ls) < 2000 {
		ls = append(ls, logsFixture(t)...)
	}
	return []*pipeline.Batch{
		{Signal: pipeline.Metrics, Metrics: ms},
		{Signal: pipeline.Traces, Traces: ts},
		{Signal: pipeline.Logs, Logs: pipeline.LogsFromProto(ls)},
	}
}

// wholeLine is the line the sink must write for b: the whole-request
// encoders' output.
func wholeLine(b *pipeline.Batch) []byte {
	var out []byte
	switch b.Signal {
	case pipeline.Metrics:
		out = otlpwire.AppendMetrics(nil, b.Metrics, "Authorization")
	case pipeline.Traces:
		out = otlpwire.AppendTraces(nil, b.Traces, "Authorization")
	case pipeline.Logs:
		out = otlpwire.AppendLogs(nil, b.Logs, "Authorization")
	}
	return append(out, '\n')
}

// TestFileLongLinesInPieces: a line longer than the buffer is the same
// bytes as the whole-request encoding, written in pieces of about the
// buffer's size rather than held whole, and the small line after it is a
// line of its own.
func TestFileLongLinesInPieces(t *testing.T) {
	for _, big := range bigBatches(t) {
		t.Run(big.Signal.String(), func(t *testing.T) {
			want := wholeLine(big)
			if len(want) < 3*fileBufSize {
				t.Fatalf("test batch too small: %d bytes", len(want))
			}
			small := metricsBatch("after", 2)
			switch big.Signal {
			case pipeline.Traces:
				small = &pipeline.Batch{Signal: big.Signal, Traces: big.Traces[:1]}
			case pipeline.Logs:
				small = &pipeline.Batch{Signal: big.Signal, Logs: big.Logs[:1]}
			}
			w := &sizeWriter{}
			f := newFile(FileOptions{Path: "/x.jsonl", Signal: big.Signal}, w)
			_ = f.Start(context.Background())
			for _, b := range []*pipeline.Batch{big, small} {
				if err := f.Enqueue(context.Background(), b); err != nil {
					t.Fatal(err)
				}
			}
			if err := f.Shutdown(ctxT(patience)); err != nil {
				t.Fatal(err)
			}
			got := w.buf.Bytes()
			if !bytes.HasPrefix(got, want) {
				t.Fatalf("long line differs from the whole-request encoding (%d vs %d bytes)", len(got), len(want))
			}
			if rest := got[len(want):]; !bytes.Equal(rest, wholeLine(small)) {
				t.Fatalf("line after the long one: %.200q", rest)
			}
			// Each piece is the buffer plus at most one resource.
			maxRes := 0
			for i := range big.Len() {
				one := *big
				one.Metrics, one.Traces, one.Logs = nil, nil, nil
				switch big.Signal {
				case pipeline.Metrics:
					one.Metrics = big.Metrics[i : i+1]
				case pipeline.Traces:
					one.Traces = big.Traces[i : i+1]
				case pipeline.Logs:
					one.Logs = big.Logs[i : i+1]
				}
				maxRes = max(maxRes, len(wholeLine(&one)))
			}
			if len(w.sizes) < 3 {
				t.Fatalf("%d writes for a %d-byte line: not written in pieces", len(w.sizes), len(want))
			}
			for i, n := range w.sizes {
				if n > fileBufSize+maxRes {
					t.Fatalf("write %d is %d bytes, more than the buffer (%d) and one resource (%d)", i, n, fileBufSize, maxRes)
				}
			}
			if cap(f.buf) > fileBufKeptTimes*fileBufSize {
				t.Fatalf("buffer kept at %d bytes", cap(f.buf))
			}
		})
	}
}

// TestFileEndsCutLine: a file left ending inside a line (a killed run) gets
// a newline before the first new line, so each new line is whole; a file
// ending with a newline is appended to as it is.
func TestFileEndsCutLine(t *testing.T) {
	for _, tc := range []struct{ before, warn string }{
		{`{"resourceMetrics":[{"resource":`, "ends inside a line"},
		{"{}\n", ""},
		{"", ""},
	} {
		path := filepath.Join(t.TempDir(), "metrics.jsonl")
		if tc.before != "" {
			if err := os.WriteFile(path, []byte(tc.before), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		lg, logs := testLogger()
		f, err := NewFile(FileOptions{Path: path, Signal: pipeline.Metrics, Logger: lg})
		if err != nil {
			t.Fatal(err)
		}
		_ = f.Start(context.Background())
		b := metricsBatch("new", 3)
		if err := f.Enqueue(context.Background(), b); err != nil {
			t.Fatal(err)
		}
		if err := f.Shutdown(ctxT(patience)); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		want := tc.before
		if tc.warn != "" {
			want += "\n"
		}
		want += string(wholeLine(b))
		if string(data) != want {
			t.Fatalf("after %q the file is\n%q\nwant\n%q", tc.before, data, want)
		}
		if got := strings.Contains(logs.String(), "ends inside a line"); got != (tc.warn != "") {
			t.Fatalf("after %q: warning logged %v: %s", tc.before, got, logs.String())
		}
	}
}

// TestFileLongLineCutAtShutdown: a long line that cannot be written before
// the shutdown deadline is reported lost, with the whole lines buffered
// before it, and Shutdown returns.
func TestFileLongLineCutAtShutdown(t *testing.T) {
	f, w, logs := failingFile("/full.jsonl", 1<<30)
	// Not started: Shutdown writes the queue within its deadline.
	for _, b := range []*pipeline.Batch{metricsBatch("small", 2), bigBatches(t)[0]} {
		if err := f.Enqueue(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	// Every write fails: only the ctx ends the shutdown.
	if err := f.Shutdown(ctxT(300 * time.Millisecond)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v, want it ended by its ctx", err)
	}
	<-f.done
	if l := logs.String(); !strings.Contains(l, "data not written") || !strings.Contains(l, "lost_lines=2") {
		t.Fatalf("lost lines not reported: %s", l)
	}
	if w.String() != "" {
		t.Fatalf("a failing writer recorded %q", w.String())
	}
}

// TestFileRetryEndsAtShutdownDeadline: a running sink retrying a failed
// write gives up at the shutdown deadline instead of retrying for ever.
func TestFileRetryEndsAtShutdownDeadline(t *testing.T) {
	f, w, logs := failingFile("/full.jsonl", 1<<30)
	_ = f.Start(context.Background())
	if err := f.Enqueue(context.Background(), bigBatches(t)[0]); err != nil {
		t.Fatal(err)
	}
	waitFor(t, patience, func() bool { return w.writes.Load() >= 2 }, "write retried")
	_ = f.Shutdown(ctxT(300 * time.Millisecond))
	select {
	case <-f.done:
	case <-time.After(patience):
		t.Fatal("the writer still retries 3 s after a 300 ms shutdown deadline")
	}
	if l := logs.String(); !strings.Contains(l, "lost_lines=1") {
		t.Fatalf("lost line not reported: %s", l)
	}
}

// failingFile returns a metrics file sink (not started) for path whose
// first fails writes fail ("disk on fire"), its writer and its log.
func failingFile(path string, fails int32) (*File, *gateWriter, *syncBuf) {
	w := &gateWriter{gate: make(chan struct{})}
	close(w.gate)
	w.fail.Store(fails)
	lg, logs := testLogger()
	return newFile(FileOptions{Path: path, Signal: pipeline.Metrics, Logger: lg}, w), w, logs
}

// A file sink holds its write buffer only once a batch comes: the
// pipelines of a signal that never arrives cost no buffer.
func TestFileBufferAtFirstBatch(t *testing.T) {
	synctest.Test(t, testFileBufferAtFirstBatch)
}

func testFileBufferAtFirstBatch(t *testing.T) {
	w := &sizeWriter{}
	f := newFile(FileOptions{Path: "/lazy.jsonl", Signal: pipeline.Metrics}, w)
	_ = f.Start(context.Background())
	synctest.Wait() // the writer goroutine is idle, waiting for a batch
	if cap(f.buf) != 0 {
		t.Fatalf("a buffer of %d bytes before any batch", cap(f.buf))
	}
	if err := f.Enqueue(context.Background(), metricsBatch("one", 2)); err != nil {
		t.Fatal(err)
	}
	if err := f.Shutdown(ctxT(patience)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(w.buf.Bytes(), wholeLine(metricsBatch("one", 2))) {
		t.Fatalf("written: %.200q", w.buf.Bytes())
	}
	if cap(f.buf) != fileBufSize {
		t.Fatalf("buffer of %d bytes after a batch, want %d", cap(f.buf), fileBufSize)
	}
	idle := newFile(FileOptions{Path: "/idle.jsonl", Signal: pipeline.Traces}, &sizeWriter{})
	_ = idle.Start(context.Background())
	if err := idle.Shutdown(ctxT(patience)); err != nil {
		t.Fatal(err)
	}
	if idle.buf != nil {
		t.Fatalf("a file that got no batch holds a buffer of %d bytes", cap(idle.buf))
	}
}

// One metrics resource several times the buffer (a scrape of a
// 20,000-series target) is written out while it is encoded: the line is the
// whole-request encoding, and no write holds more than the buffer.
func TestFileHugeResourceInPieces(t *testing.T) {
	big := hugeResource(40_000)
	want := wholeLine(big)
	if len(want) < 8*fileBufSize {
		t.Fatalf("test resource too small: %d bytes", len(want))
	}
	small := metricsBatch("after", 2)
	w := &sizeWriter{}
	f := newFile(FileOptions{Path: "/x.jsonl", Signal: pipeline.Metrics}, w)
	_ = f.Start(context.Background())
	for _, b := range []*pipeline.Batch{big, small, big} {
		if err := f.Enqueue(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Shutdown(ctxT(patience)); err != nil {
		t.Fatal(err)
	}
	got := w.buf.Bytes()
	whole := append(append(append([]byte(nil), want...), wholeLine(small)...), want...)
	if !bytes.Equal(got, whole) {
		t.Fatalf("file differs from the whole-request encodings (%d vs %d bytes)", len(got), len(whole))
	}
	if len(w.sizes) < 2*len(want)/fileBufSize {
		t.Errorf("%d writes for two %d-byte lines: not written in pieces", len(w.sizes), len(want))
	}
	for i, n := range w.sizes {
		if n > fileBufSize {
			t.Fatalf("write %d is %d bytes, more than the %d-byte buffer: the resource was held whole", i, n, fileBufSize)
		}
	}
}

// The same for one resource written out while it is encoded
// (flushMidResource): a write-out that fails at the shutdown deadline in
// the middle of it loses that line and the line before it, and Shutdown
// returns. A started sink gets there too,
// wherever in the queue the deadline finds it.
func TestFileHugeResourceCutAtShutdown(t *testing.T) {
	for _, started := range []bool{false, true} {
		f, w, logs := failingFile("/full.jsonl", 1<<30)
		// Queued before the writer starts: once a write has failed the
		// queue takes nothing more (Enqueue waits).
		for _, b := range []*pipeline.Batch{metricsBatch("small", 2), hugeResource(40_000), metricsBatch("after", 2)} {
			if err := f.Enqueue(context.Background(), b); err != nil {
				t.Fatal(err)
			}
		}
		if started {
			_ = f.Start(context.Background())
		}
		_ = f.Shutdown(ctxT(time.Second))
		select {
		case <-f.done:
		case <-time.After(patience):
			t.Fatalf("started %v: the sink still runs a minute after a 1 s shutdown deadline", started)
		}
		l := logs.String()
		if !strings.Contains(l, "data not written") {
			t.Fatalf("started %v: lost data not reported: %s", started, l)
		}
		// Not started, Shutdown writes the queue in order: the small line
		// and the cut one are lost ("after" may still be queued, or begun).
		if !started && !strings.Contains(l, "lost_lines=2 ") {
			t.Fatalf("lost lines not reported as 2: %s", l)
		}
		if w.String() != "" {
			t.Fatalf("started %v: a failing writer recorded %q", started, w.String())
		}
	}
}
