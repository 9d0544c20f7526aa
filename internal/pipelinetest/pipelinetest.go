// Package pipelinetest holds what more than one package's tests of a
// pipeline stage use: a next consumer that records what it got, and a
// wait on a condition the stage's goroutines bring about.
package pipelinetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/otelstep/otelstep/pipeline"
)

// Recorder is a next consumer recording the batches it took. It panics on
// a batch whose Items is not the count of its items: a stage that hands
// on a miscounted batch is wrong whatever the test checks.
type Recorder struct {
	Refuse int // refuse this many calls with pipeline.ErrFull

	mu      sync.Mutex
	batches []*pipeline.Batch
}

func (r *Recorder) Consume(_ context.Context, b *pipeline.Batch) error {
	if n := pipeline.CountItems(b); b.Items != n {
		panic(fmt.Sprintf("a batch of %d items says %d", n, b.Items))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Refuse > 0 {
		r.Refuse--
		return pipeline.ErrFull
	}
	r.batches = append(r.batches, b)
	return nil
}

// Got is the batches taken so far, in order.
func (r *Recorder) Got() []*pipeline.Batch {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*pipeline.Batch(nil), r.batches...)
}

// SetRefuse sets how many of the next calls are refused.
func (r *Recorder) SetRefuse(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Refuse = n
}

// Patience bounds every wait on a condition: long enough for a busy CI
// machine, never a measuring window.
const Patience = time.Minute

// WaitFor polls cond until it holds, failing the test (naming what it
// waited for) if it does not within d.
func WaitFor(t testing.TB, d time.Duration, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
