package sink

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/otelstep/otelstep/pipeline"
)

// A file that cannot grow (here: the file size limit, so writes fail with
// EFBIG as they would with ENOSPC): the sink says it is failing and why,
// takes no more batches (Enqueue waits, then ErrFull with the reason), the
// file holds whole lines only (the part of a line a failed write appended
// is cut off), and once the file can grow again every batch taken is
// written exactly once and the sink takes batches again.
//
// The limit is the process's, so the test runs in a child process of its
// own (the test binary again, running only fileFullChild).
func TestFileFullKeepsEverythingTaken(t *testing.T) {
	if os.Getenv("SINK_FILE_FULL_CHILD") != "" {
		fileFullChild(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFileFullKeepsEverythingTaken$", "-test.v")
	cmd.Env = append(os.Environ(), "SINK_FILE_FULL_CHILD="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	t.Logf("child:\n%s", out)
}

func fileFullChild(t *testing.T) {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(os.Getenv("SINK_FILE_FULL_CHILD"), "metrics.jsonl")
	lg, logs := testLogger()
	f, err := NewFile(FileOptions{Path: path, Signal: pipeline.Metrics, Logger: lg, QueueSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	_ = f.Start(context.Background())
	if err := f.Enqueue(context.Background(), metricsBatch("before", 10)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, patience, func() bool { fi, _ := os.Stat(path); return fi != nil && fi.Size() > 0 }, "the first line written")
	fi, _ := os.Stat(path)
	// Room for a part of the next line, not all of it.
	limit := fi.Size() + 100
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: uint64(limit), Max: old.Max}); err != nil {
		t.Fatal(err)
	}
	taken := []string{"before"}
	for i := 0; f.Failing() == nil; i++ {
		id := fmt.Sprintf("full-%d", i)
		if err := f.Enqueue(ctxT(patience), metricsBatch(id, 10)); err != nil {
			break // failing meanwhile
		}
		taken = append(taken, id)
	}
	failing := f.Failing()
	if !errors.Is(failing, syscall.EFBIG) || !strings.Contains(failing.Error(), path) {
		t.Fatalf("Failing: %v, want EFBIG naming %s", failing, path)
	}
	err = f.Enqueue(ctxT(10*time.Millisecond), metricsBatch("refused", 10))
	if !errors.Is(err, pipeline.ErrFull) || !errors.Is(err, syscall.EFBIG) {
		t.Fatalf("Enqueue while failing: %v, want ErrFull with the reason", err)
	}
	data, _ := os.ReadFile(path)
	if int64(len(data)) > limit || !strings.HasSuffix(string(data), "\n") {
		t.Fatalf("while failing the file (%d bytes, limit %d) does not end with a whole line: ...%q", len(data), limit, data[max(0, len(data)-40):])
	}
	// Room again: writing resumes by itself, and so does taking batches.
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	waitFor(t, patience, func() bool { return f.Failing() == nil }, "writing again")
	if err := f.Enqueue(ctxT(patience), metricsBatch("after", 10)); err != nil {
		t.Fatal(err)
	}
	taken = append(taken, "after")
	if err := f.Shutdown(ctxT(patience)); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	forLines(t, path, func(line []byte) {
		for _, id := range taken {
			if strings.Contains(string(line), `"`+id+`"`) {
				seen[id]++
			}
		}
		if strings.Contains(string(line), `"refused"`) {
			t.Error("the batch refused while failing was written")
		}
	})
	for _, id := range taken {
		if seen[id] != 1 {
			t.Errorf("batch %s written %d times, want once", id, seen[id])
		}
	}
	if l := logs.String(); !strings.Contains(l, "file too large") || !strings.Contains(l, "writing again") {
		t.Errorf("the failure and the recovery are not logged: %s", l)
	}
	t.Logf("%d batches taken, the file full after %d bytes, all written once after", len(taken), limit)
}
