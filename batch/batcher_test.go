package batch

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/otelstep/otelstep/internal/otlptest"
	"github.com/otelstep/otelstep/internal/pipelinetest"
	"github.com/otelstep/otelstep/pipeline"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
)

func pointValues(bs []*pipeline.Batch) []float64 {
	var out []float64
	for _, b := range bs {
		for _, rm := range b.Metrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					for _, dp := range m.GetGauge().GetDataPoints() {
						out = append(out, dp.GetAsDouble())
					}
				}
			}
		}
	}
	return out
}

func TestBatcherSizeTrigger(t *testing.T) {
	rec := &pipelinetest.Recorder{}
	b := New(Options{SendBatchSize: 10, Timeout: time.Hour}, rec)
	_ = b.Start(context.Background())
	defer b.Shutdown(ctxT(pipelinetest.Patience))
	for i := range 3 {
		_ = b.Consume(context.Background(), otlptest.GaugeBatch(fmt.Sprint(i), 3))
	}
	if n := len(rec.Got()); n != 0 {
		t.Fatalf("sent %d batches below size", n)
	}
	_ = b.Consume(context.Background(), otlptest.GaugeBatch("3", 3))
	got := rec.Got()
	if len(got) != 1 || got[0].Items != 12 || got[0].Len() != 4 {
		t.Fatalf("got %d batches (first %d items)", len(got), got[0].Items)
	}
}

func TestBatcherTimeoutTrigger(t *testing.T) {
	rec := &pipelinetest.Recorder{}
	b := New(Options{SendBatchSize: 1000, Timeout: 50 * time.Millisecond}, rec)
	_ = b.Start(context.Background())
	defer b.Shutdown(ctxT(pipelinetest.Patience))
	start := time.Now()
	_ = b.Consume(context.Background(), otlptest.GaugeBatch("a", 1))
	_ = b.Consume(context.Background(), otlptest.GaugeBatch("b", 1))
	pipelinetest.WaitFor(t, pipelinetest.Patience, func() bool { return len(rec.Got()) == 1 }, "timeout flush")
	if el := time.Since(start); el < 45*time.Millisecond {
		t.Fatalf("flushed after %v, before the timeout", el)
	}
	if rec.Got()[0].Items != 2 {
		t.Fatal("wrong items")
	}
	// A logs batch is batched separately.
	_ = b.Consume(context.Background(), &pipeline.Batch{Signal: pipeline.Logs, Items: 1, Logs: pipeline.LogsFromProto([]*logspb.ResourceLogs{{
		ScopeLogs: []*logspb.ScopeLogs{{LogRecords: []*logspb.LogRecord{{Body: &commonpb.AnyValue{}}}}},
	}})})
	pipelinetest.WaitFor(t, pipelinetest.Patience, func() bool { return len(rec.Got()) == 2 }, "logs flush")
	if g := rec.Got()[1]; g.Signal != pipeline.Logs || g.Items != 1 {
		t.Fatal("logs batch wrong")
	}
}

func TestBatcherMaxSizeSplit(t *testing.T) {
	rec := &pipelinetest.Recorder{}
	b := New(Options{SendBatchSize: 10, SendBatchMaxSize: 10, Timeout: time.Hour}, rec)
	_ = b.Start(context.Background())
	in := otlptest.GaugeBatch("big", 35)
	in.Metrics = append(in.Metrics, otlptest.GaugeBatch("second", 2).Metrics...)
	in.Items += 2
	if err := b.Consume(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	got := rec.Got()
	if len(got) != 3 {
		t.Fatalf("sent %d batches, want 3 full ones", len(got))
	}
	if err := b.Shutdown(ctxT(pipelinetest.Patience)); err != nil {
		t.Fatal(err)
	}
	got = rec.Got()
	total := 0
	for _, g := range got {
		if g.Items > 10 {
			t.Fatalf("batch of %d items exceeds max", g.Items)
		}
		total += g.Items
	}
	if total != 37 || len(got) != 4 {
		t.Fatalf("total %d in %d batches", total, len(got))
	}
	vals := pointValues(got)
	for i := range 35 {
		if vals[i] != float64(i) {
			t.Fatalf("point order broken at %d: %v", i, vals)
		}
	}
	if otlptest.BatchID(got[0]) != "big" || otlptest.BatchID(got[3]) != "big" || got[3].Len() != 2 {
		t.Fatal("resources not preserved across split")
	}
	if err := b.Consume(context.Background(), otlptest.GaugeBatch("x", 1)); !errors.Is(err, pipeline.ErrStopped) {
		t.Fatalf("Consume after Shutdown: %v", err)
	}
}

func TestBatcherBackpressureNoLossNoDup(t *testing.T) {
	rec := &pipelinetest.Recorder{Refuse: 1 << 30}
	b := New(Options{SendBatchSize: 2, Timeout: time.Hour}, rec)
	_ = b.Start(context.Background())
	// b1 fills the batch: taken, the flush is refused, stays pending.
	if err := b.Consume(ctxT(pipelinetest.Patience), otlptest.GaugeBatch("b1", 2)); err != nil {
		t.Fatalf("b1: %v", err)
	}
	// b2: the pending batch is full and next still refuses: not taken.
	if err := b.Consume(ctxT(time.Second), otlptest.GaugeBatch("b2", 1)); !errors.Is(err, pipeline.ErrFull) {
		t.Fatalf("b2: %v, want ErrFull", err)
	}
	rec.SetRefuse(0)
	// Retry b2: b1 is flushed first, then b2 is taken.
	if err := b.Consume(ctxT(pipelinetest.Patience), otlptest.GaugeBatch("b2", 1)); err != nil {
		t.Fatalf("b2 retry: %v", err)
	}
	if err := b.Shutdown(ctxT(pipelinetest.Patience)); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, g := range rec.Got() {
		for _, rm := range g.Metrics {
			ids = append(ids, otlptest.BatchID(&pipeline.Batch{Metrics: rm2(rm)}))
		}
	}
	if fmt.Sprint(ids) != "[b1 b2]" {
		t.Fatalf("delivered %v, want [b1 b2] exactly once each, in order", ids)
	}
}

func TestBatcherTimerFlushRetriesUntilAccepted(t *testing.T) {
	rec := &pipelinetest.Recorder{Refuse: 5}
	b := New(Options{SendBatchSize: 100, Timeout: 10 * time.Millisecond}, rec)
	_ = b.Start(context.Background())
	defer b.Shutdown(ctxT(pipelinetest.Patience))
	_ = b.Consume(context.Background(), otlptest.GaugeBatch("t", 1))
	pipelinetest.WaitFor(t, pipelinetest.Patience, func() bool { return len(rec.Got()) == 1 }, "timer flush after refusals")
}

// In a synctest bubble (here and below) the sleeps are the fake clock's:
// the timer flush has happened when they end, however busy the machine.
func TestBatcherConsumeHonoursCtxWhileFlushBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		block := make(chan struct{})
		next := pipeline.ConsumerFunc(func(ctx context.Context, _ *pipeline.Batch) error {
			select {
			case <-block:
				return nil
			case <-ctx.Done():
				return pipeline.ErrFull
			}
		})
		b := New(Options{SendBatchSize: 100, Timeout: 5 * time.Millisecond}, next)
		_ = b.Start(context.Background())
		_ = b.Consume(context.Background(), otlptest.GaugeBatch("a", 1))
		time.Sleep(30 * time.Millisecond) // the timer flush is now blocked in next
		start := time.Now()
		if err := b.Consume(ctxT(50*time.Millisecond), otlptest.GaugeBatch("b", 1)); !errors.Is(err, pipeline.ErrFull) {
			t.Fatalf("got %v, want ErrFull", err)
		}
		if el := time.Since(start); el != 50*time.Millisecond {
			t.Fatalf("Consume returned after %v, want its context's 50ms", el)
		}
		close(block)
		if err := b.Shutdown(ctxT(pipelinetest.Patience)); err != nil {
			t.Fatal(err)
		}
	})
}

// A flush hint (pipeline.Flusher) sends what is pending at once, in order,
// and an empty Processor or a stopped one takes it without sending anything.
func TestBatcherFlushHint(t *testing.T) {
	rec := &pipelinetest.Recorder{}
	b := New(Options{SendBatchSize: 1000, Timeout: time.Hour}, rec)
	_ = b.Start(context.Background())
	pipeline.Flush(context.Background(), b) // nothing pending
	if n := len(rec.Got()); n != 0 {
		t.Fatalf("an empty batcher sent %d batches on a hint", n)
	}
	_ = b.Consume(context.Background(), otlptest.GaugeBatch("a", 2))
	_ = b.Consume(context.Background(), otlptest.GaugeBatch("b", 3))
	if n := len(rec.Got()); n != 0 {
		t.Fatalf("sent %d batches before the hint", n)
	}
	pipeline.Flush(context.Background(), b)
	got := rec.Got()
	if len(got) != 1 || got[0].Items != 5 {
		t.Fatalf("after the hint: %d batches, want one of 5 items", len(got))
	}
	if v := pointValues(got); len(v) != 5 {
		t.Fatalf("points %v", v)
	}
	_ = b.Consume(context.Background(), otlptest.GaugeBatch("c", 1))
	if err := b.Shutdown(ctxT(pipelinetest.Patience)); err != nil {
		t.Fatal(err)
	}
	pipeline.Flush(context.Background(), b) // stopped
	if n := len(rec.Got()); n != 2 {
		t.Fatalf("%d batches after shutdown and a hint, want 2", n)
	}
}

// A batch sent before its timeout, on a hint or at its size, leaves no
// timer set for it: the process is not woken at that timeout to find
// nothing to send.
func TestBatcherNoTimerLeftAfterFlush(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &pipelinetest.Recorder{}
		b := New(Options{SendBatchSize: 4, Timeout: 40 * time.Millisecond}, rec)
		_ = b.Start(context.Background())
		defer b.Shutdown(ctxT(pipelinetest.Patience))
		_ = b.Consume(context.Background(), otlptest.GaugeBatch("a", 1))
		time.Sleep(5 * time.Millisecond) // the timer is set for a
		pipeline.Flush(context.Background(), b)
		time.Sleep(100 * time.Millisecond)
		_ = b.Consume(context.Background(), otlptest.GaugeBatch("b", 1))
		time.Sleep(5 * time.Millisecond)
		_ = b.Consume(context.Background(), otlptest.GaugeBatch("c", 3)) // b and c sent at their size
		time.Sleep(100 * time.Millisecond)
		if n := len(rec.Got()); n != 2 {
			t.Fatalf("%d batches sent, want 2", n)
		}
		if n := b.idleWakes.Load(); n != 0 {
			t.Fatalf("the timer fired %d times with nothing pending", n)
		}
	})
}

// A batch holding acks is sent AckLinger after the first of them came,
// with what arrived meanwhile, not at Timeout; one without is sent at
// Timeout.
func TestBatcherAckLinger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &pipelinetest.Recorder{}
		b := New(Options{SendBatchSize: 1000, Timeout: time.Second, AckLinger: 10 * time.Millisecond}, rec)
		_ = b.Start(context.Background())
		defer b.Shutdown(context.Background())
		first, _ := acked("first", 1)
		_ = b.Consume(context.Background(), first)
		time.Sleep(5 * time.Millisecond)
		second, _ := acked("second", 1)
		_ = b.Consume(context.Background(), second)
		time.Sleep(5 * time.Millisecond)
		synctest.Wait()
		if got := rec.Got(); len(got) != 1 || len(got[0].Acks) != 2 {
			t.Fatalf("after the linger: %d batches sent, want 1 of both requests", len(got))
		}
		_ = b.Consume(context.Background(), otlptest.GaugeBatch("scraped", 1))
		time.Sleep(500 * time.Millisecond)
		synctest.Wait()
		if n := len(rec.Got()); n != 1 {
			t.Fatalf("a batch nobody waits on sent before its timeout (%d batches)", n)
		}
		time.Sleep(500 * time.Millisecond)
		synctest.Wait()
		if n := len(rec.Got()); n != 2 {
			t.Fatalf("%d batches at the timeout, want 2", n)
		}
	})
}

// A batch sent is the scraper's (pipeline.Batch.Scraped) only when every
// batch merged into it was, and both pieces of a split keep what the whole
// was: the exporter compresses the two kinds differently.
func TestBatcherKeepsScraped(t *testing.T) {
	scraped := func(id string, n int) *pipeline.Batch {
		b := otlptest.GaugeBatch(id, n)
		b.Scraped = true
		return b
	}
	for _, tc := range []struct {
		name string
		in   []*pipeline.Batch
		want []bool
	}{
		{"scraped", []*pipeline.Batch{scraped("a", 4), scraped("b", 4)}, []bool{true}},
		{"received", []*pipeline.Batch{otlptest.GaugeBatch("a", 4), otlptest.GaugeBatch("b", 4)}, []bool{false}},
		{"mixed", []*pipeline.Batch{scraped("a", 4), otlptest.GaugeBatch("b", 4)}, []bool{false}},
		{"mixed the other way", []*pipeline.Batch{otlptest.GaugeBatch("a", 4), scraped("b", 4)}, []bool{false}},
		{"split", []*pipeline.Batch{scraped("a", 25)}, []bool{true, true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &pipelinetest.Recorder{}
			b := New(Options{SendBatchSize: 10, SendBatchMaxSize: 10, Timeout: time.Hour}, rec)
			_ = b.Start(context.Background())
			for _, in := range tc.in {
				if err := b.Consume(context.Background(), in); err != nil {
					t.Fatal(err)
				}
			}
			if err := b.Shutdown(ctxT(pipelinetest.Patience)); err != nil {
				t.Fatal(err)
			}
			var got []bool
			for _, g := range rec.Got() {
				got = append(got, g.Scraped)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("sent batches scraped %v, want %v", got, tc.want)
			}
		})
	}
}
