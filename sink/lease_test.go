package sink

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/otelstep/otelstep/batch"
	"github.com/otelstep/otelstep/pipeline"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
)

// leased gives b a lease whose free poisons b's memory (as a producer
// reusing it would) and counts how often it ran.
func leased(b *pipeline.Batch, frees *atomic.Int32) {
	l := new(pipeline.Lease)
	l.Reset(func() {
		frees.Add(1)
		for _, rm := range b.Metrics {
			for _, kv := range rm.Resource.Attributes {
				if kv.Key == "batch.id" {
					kv.Value = &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "FREED"}}
				}
			}
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					for _, p := range m.GetGauge().GetDataPoints() {
						p.Value = &metricspb.NumberDataPoint_AsDouble{AsDouble: -1}
					}
				}
			}
		}
	})
	b.Leases = []*pipeline.Lease{l}
}

// Through the batch processor (which merges and splits) and the fan-out to
// both sinks, every lease is let go exactly once, and only after both sinks
// have encoded everything of it: the poison its free writes never reaches
// the file or the backend. (With -race, a sink reading after the free is
// also a reported race.)
func TestLeasesReleasedOnceAfterBothSinks(t *testing.T) {
	for _, which := range []string{"both", "file", "http"} {
		t.Run(which, func(t *testing.T) { testLeasesReleased(t, which) })
	}
}

// testLeasesReleased runs the batches through the sinks named by which:
// "both", or one alone, so each sink's own release is the last one.
func testLeasesReleased(t *testing.T, which string) {
	be := newBackend(t, nil)
	h, _ := newTestHTTP(t, be.URL(), HTTPOptions{Name: "otlp_http/lease", QueueSize: 1000})
	path := filepath.Join(t.TempDir(), "metrics.jsonl")
	f, err := NewFile(FileOptions{Path: path, Signal: pipeline.Metrics, QueueSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	var sinks []Sink
	switch which {
	case "both":
		sinks = []Sink{f, h}
	case "file":
		sinks = []Sink{f}
	case "http":
		sinks = []Sink{h}
	}
	for _, s := range sinks {
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	bt := batch.New(batch.Options{SendBatchSize: 25, SendBatchMaxSize: 25, Timeout: 20 * time.Millisecond}, NewFanout(sinks...))
	_ = bt.Start(context.Background())
	const n = 60
	frees := make([]atomic.Int32, n)
	for i := range n {
		b := metricsBatch(fmt.Sprint(i), 1+i%40) // 1-40 points: merged, and split mid-metric
		leased(b, &frees[i])
		if err := bt.Consume(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	if err := bt.Shutdown(ctxT(patience)); err != nil {
		t.Fatal(err)
	}
	for _, s := range sinks {
		if err := s.Shutdown(ctxT(patience)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range frees {
		if got := frees[i].Load(); got != 1 {
			t.Errorf("batch %d: lease freed %d times, want once", i, got)
		}
	}
	if which != "http" {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "FREED") || strings.Contains(string(data), `"asDouble":-1`) {
			t.Fatal("the file has memory written after its lease was let go")
		}
		for i := range n {
			if !strings.Contains(string(data), fmt.Sprintf(`{"key":"batch.id","value":{"stringValue":"%d"}}`, i)) {
				t.Fatalf("batch %d missing from the file", i)
			}
		}
	}
	if which != "file" {
		seen := map[string]bool{}
		for _, id := range be.got() {
			seen[id] = true
		}
		if seen["FREED"] {
			t.Fatal("the backend got memory written after its lease was let go")
		}
		if len(seen) == 0 {
			t.Fatal("the backend got nothing")
		}
	}
}

// The exporter lets go of every batch once it has encoded it, at Enqueue,
// whether its request is then sent or dropped from the full queue; one the
// fan-out could not hand to its blocking sink stays the caller's.
func TestLeasesOfDroppedBatches(t *testing.T) {
	be := newBackend(t, nil)
	h, _ := newTestHTTP(t, be.URL(), HTTPOptions{QueueSize: 2})
	frees := make([]atomic.Int32, 5)
	for i := range 5 { // not started: the queue fills and drops the oldest
		b := metricsBatch(fmt.Sprint(i), 1)
		leased(b, &frees[i])
		if err := h.Enqueue(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		if frees[i].Load() != 1 {
			t.Fatalf("batch %d (queued or dropped): lease freed %d times, want once at Enqueue", i, frees[i].Load())
		}
	}
	_ = h.Start(context.Background())
	if err := h.Shutdown(ctxT(patience)); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if frees[i].Load() != 1 {
			t.Fatalf("batch %d: lease freed %d times after sending", i, frees[i].Load())
		}
	}
	if got := be.got(); len(got) != 2 || !(got[0] == "3" && got[1] == "4" || got[0] == "4" && got[1] == "3") {
		t.Fatalf("backend got %v, want the newest two", got)
	}

	// A stopped file sink refuses the batch through the fan-out: the
	// caller still owns its reference (and lets go of it), the stopped
	// exporter's share is let go by the fan-out.
	f, err := NewFile(FileOptions{Path: filepath.Join(t.TempDir(), "m.jsonl"), Signal: pipeline.Metrics, QueueSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Shutdown(ctxT(patience)); err != nil {
		t.Fatal(err)
	}
	var free atomic.Int32
	b := metricsBatch("x", 1)
	leased(b, &free)
	if err := NewFanout(f, h).Consume(context.Background(), b); err == nil {
		t.Fatal("fan-out to a stopped file sink took the batch")
	}
	if free.Load() != 0 {
		t.Fatal("the caller's reference was let go by the fan-out")
	}
	b.Release()
	if free.Load() != 1 {
		t.Fatalf("lease freed %d times, want once", free.Load())
	}
}
