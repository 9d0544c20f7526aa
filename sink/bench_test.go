package sink

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/otelstep/otelstep/pipeline"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// bench1000 is a synthetic metrics batch: 10 resources × 10 metrics × 10 points.
func bench1000() *pipeline.Batch {
	b := &pipeline.Batch{Signal: pipeline.Metrics}
	for r := range 10 {
		rm := metricsBatch(fmt.Sprint(r), 0).Metrics[0]
		var ms []*metricspb.Metric
		for m := range 10 {
			g := metricsBatch("", 10).Metrics[0].ScopeMetrics[0].Metrics[0]
			g.Name = fmt.Sprintf("system.metric.%d", m)
			ms = append(ms, g)
		}
		rm.ScopeMetrics[0].Metrics = ms
		b.Metrics = append(b.Metrics, rm)
	}
	return b
}

func BenchmarkFileSink(b *testing.B) {
	batch := bench1000()
	if batch.Items() != 1000 {
		b.Fatal(batch.Items())
	}
	path := filepath.Join(b.TempDir(), "bench.jsonl")
	f, err := NewFile(FileOptions{Path: path, Signal: pipeline.Metrics})
	if err != nil {
		b.Fatal(err)
	}
	_ = f.Start(context.Background())
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		if err := f.Enqueue(context.Background(), batch); err != nil {
			b.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := f.Shutdown(ctx); err != nil {
		b.Fatal(err)
	}
	el := time.Since(start)
	b.StopTimer()
	st, _ := os.Stat(path)
	b.ReportMetric(float64(b.N)/el.Seconds(), "lines/s")
	b.ReportMetric(float64(st.Size())/float64(b.N), "bytes/line")
	b.SetBytes(st.Size() / int64(b.N))
}

func BenchmarkHTTPEncode(b *testing.B) {
	batch := bench1000()
	msg := &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: batch.Metrics}
	var out bytes.Buffer
	_ = encodeProto(msg, true, &out)
	raw, _ := proto.Marshal(msg)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		buf := bufPool.Get().(*bytes.Buffer)
		if err := encodeProto(msg, true, buf); err != nil {
			b.Fatal(err)
		}
		bufPool.Put(buf)
	}
	b.ReportMetric(float64(out.Len()), "gzip-bytes")
	b.ReportMetric(float64(len(raw)), "proto-bytes")
}
