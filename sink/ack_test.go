package sink

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/otelstep/otelstep/batch"
	"github.com/otelstep/otelstep/pipeline"
)

// acked returns metricsBatch(id, points) with a sender's ack.
func acked(id string, points int) (*pipeline.Batch, *pipeline.Ack) {
	b := metricsBatch(id, points)
	a := pipeline.NewAck()
	b.Acks = []*pipeline.Ack{a}
	return b, a
}

// A request's ack resolves only once its items are in every JSONL file of
// the pipeline, whether the batch processor merged it with others or split
// it across batches; a sink that is not a file (here a recorder) holds no
// reference.
func TestAckResolvedOnceWrittenToEveryFile(t *testing.T) {
	dir := t.TempDir()
	var files []*File
	for _, n := range []string{"a", "b"} {
		f, err := NewFile(FileOptions{Name: "file/" + n, Path: filepath.Join(dir, n+".jsonl"), Signal: pipeline.Metrics})
		if err != nil {
			t.Fatal(err)
		}
		_ = f.Start(context.Background())
		files = append(files, f)
	}
	fan := NewFanout(files[0], &recorder{}, files[1])
	bt := batch.New(batch.Options{SendBatchSize: 5, SendBatchMaxSize: 5, Timeout: time.Hour}, fan)
	_ = bt.Start(context.Background())
	defer bt.Shutdown(context.Background())

	// 3 points each: the second request fills the batch (6 > 5) and is
	// split, its last point left pending until the flush.
	acks := map[string]*pipeline.Ack{}
	for i := range 3 {
		id := fmt.Sprintf("req-%d", i)
		b, a := acked(id, 3)
		acks[id] = a
		if err := bt.Consume(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	bt.Flush(context.Background())
	for id, a := range acks {
		select {
		case <-a.Wait():
		case <-time.After(patience):
			t.Fatalf("%s: not acknowledged", id)
		}
		if err := a.Err(); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		// Resolved: every point of it is in both files by now.
		for _, f := range files {
			data, _ := os.ReadFile(f.o.Path)
			if n := strings.Count(string(data), `"`+id+`"`); n == 0 {
				t.Errorf("%s acknowledged, not in %s", id, f.o.Path)
			}
		}
	}
	for _, f := range files {
		if err := f.Shutdown(ctxT(patience)); err != nil {
			t.Fatal(err)
		}
	}
}

// A write that fails fails the acks waiting for it at once (the senders
// are told to retry later), and the line is still written once writing
// works again.
func TestAckFailsWithTheWrite(t *testing.T) {
	f, w, _ := failingFile("/full/x.jsonl", 1)
	_ = f.Start(context.Background())
	b, a := acked("failed", 2)
	if err := f.Enqueue(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	<-a.Wait()
	if err := a.Err(); err == nil || !strings.Contains(err.Error(), "disk on fire") || !strings.Contains(err.Error(), "/full/x.jsonl") {
		t.Fatalf("ack error %v, want the write's, naming the file", err)
	}
	b2, a2 := acked("after", 2)
	if err := f.Enqueue(ctxT(patience), b2); err != nil {
		t.Fatal(err)
	}
	<-a2.Wait()
	if err := a2.Err(); err != nil {
		t.Fatalf("ack after recovery: %v", err)
	}
	if err := f.Shutdown(ctxT(patience)); err != nil {
		t.Fatal(err)
	}
	if got := w.String(); strings.Count(got, `"failed"`) != 1 || strings.Count(got, `"after"`) != 1 {
		t.Fatalf("lines not written once each: %q", got)
	}
}

// A batch of nothing, and a Fanout of no file, resolve at once: nothing
// is waited for.
func TestAckWithoutFile(t *testing.T) {
	fan := NewFanout(&recorder{})
	b, a := acked("nofile", 1)
	if err := fan.Consume(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.Wait():
	default:
		t.Fatal("not resolved by a fan-out without a file")
	}
	bt := batch.New(batch.Options{}, &recorder{})
	empty := &pipeline.Batch{Signal: pipeline.Metrics, Acks: []*pipeline.Ack{pipeline.NewAck()}}
	if err := bt.Consume(context.Background(), empty); err != nil {
		t.Fatal(err)
	}
	if err := empty.Acks[0].Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-empty.Acks[0].Wait():
	default:
		t.Fatal("an empty batch's ack not resolved")
	}
}

// A stop past its deadline with the disk full: the line being built when
// the deadline passed, its first 256 KiB already written out (a line
// longer than the buffer), is cut off, so that the file ends with its last
// whole line, and the acks waiting for it fail. The file size limit stands
// for the full disk (as in TestFileFullKeepsEverythingTaken), so the test
// runs in a child process.
func TestFileStopWhileFullLeavesNoCutLine(t *testing.T) {
	if dir := os.Getenv("SINK_STOP_FULL_CHILD"); dir != "" {
		stopFullChild(t, dir)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFileStopWhileFullLeavesNoCutLine$", "-test.v")
	cmd.Env = append(os.Environ(), "SINK_STOP_FULL_CHILD="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func stopFullChild(t *testing.T, dir string) {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "metrics.jsonl")
	f, err := NewFile(FileOptions{Path: path, Signal: pipeline.Metrics})
	if err != nil {
		t.Fatal(err)
	}
	_ = f.Start(context.Background())
	b, a := acked("whole", 2)
	if err := f.Enqueue(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if <-a.Wait(); a.Err() != nil {
		t.Fatal(a.Err())
	}
	fi, _ := os.Stat(path)
	whole := fi.Size()
	// Room for the first write-out of the long line, not for the rest.
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: uint64(whole + fileBufSize + 4096), Max: old.Max}); err != nil {
		t.Fatal(err)
	}
	big, ab := acked("big", 1)
	huge := hugeResource(20000)
	big.Metrics = append(big.Metrics, huge.Metrics...)
	big.Items += huge.Items
	if err := f.Enqueue(context.Background(), big); err != nil {
		t.Fatal(err)
	}
	if <-ab.Wait(); ab.Err() == nil {
		t.Fatal("the ack of a line not written succeeded")
	}
	waitFor(t, patience, func() bool { fi, _ := os.Stat(path); return fi.Size() > whole }, "the long line's first part written out")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := f.Shutdown(ctx); err == nil {
		t.Fatal("a stop that could not write everything reported no error")
	}
	if lines, items, ok := f.Unwritten(patience); !ok || lines != 1 || items != 1+2*20000 {
		t.Errorf("Unwritten: %d lines of %d items (ok %v), want the long line's 1 of %d", lines, items, ok, 1+2*20000)
	}
	data, _ := os.ReadFile(path)
	if int64(len(data)) != whole || strings.Contains(string(data), `"big"`) {
		t.Fatalf("the file is %d bytes, want its %d bytes of whole lines: ...%q", len(data), whole, data[max(0, len(data)-60):])
	}
}

// While writes fail the sink takes nothing, until the stop drains the
// pipeline (Drain): then it takes what is left, so that the backend gets
// it too, and counts what it could not write by its deadline.
func TestFileDrainTakesWhileFailing(t *testing.T) {
	f, _, _ := failingFile("/full/x.jsonl", 1<<30)
	_ = f.Start(context.Background())
	if err := f.Enqueue(context.Background(), metricsBatch("first", 3)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, patience, func() bool { return f.Failing() != nil }, "the write to fail")
	if err := f.Enqueue(ctxT(10*time.Millisecond), metricsBatch("refused", 3)); err == nil {
		t.Fatal("taken while failing")
	}
	f.Drain()
	if err := f.Enqueue(ctxT(patience), metricsBatch("drained", 4)); err != nil {
		t.Fatalf("not taken once draining: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := f.Shutdown(ctx); err == nil {
		t.Fatal("a stop that wrote nothing reported no error")
	}
	if lines, items, ok := f.Unwritten(patience); !ok || lines != 2 || items != 7 {
		t.Fatalf("Unwritten: %d lines of %d items (ok %v), want 2 of 7", lines, items, ok)
	}
}
