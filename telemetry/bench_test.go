package telemetry

import (
	"context"
	"testing"
	"time"

	"github.com/otelstep/otelstep/config"
	"github.com/otelstep/otelstep/pipeline"
)

// What one count costs a request, a batch or a scrape: the hot paths make
// one or two of these per request, batch or scrape, never one per item.
func BenchmarkRecord(b *testing.B) {
	tm, err := New(config.Telemetry{Level: "detailed"}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer tm.Shutdown(context.Background())
	r, s, st, p := tm.Receiver("otlp"), tm.Sink("file/traces"), tm.Scrape("prometheus").Target("vllm", "localhost:8000"), tm.Pipeline("traces")
	b.Run("receiver", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r.Record(pipeline.Traces, HTTP, 512, nil)
		}
	})
	b.Run("sink", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.Sent(pipeline.Traces, 512)
			s.Wrote(4096)
		}
	})
	b.Run("pipeline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p.Items(512)
		}
	})
	b.Run("scrape", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			st.Scraped(true, 3*time.Millisecond, 5000, 5000, 0)
			st.Delivered(5000, nil)
		}
	})
}
