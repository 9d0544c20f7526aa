package sink

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/otelstep/otelstep/internal/otlptest"
	"github.com/otelstep/otelstep/otlpwire"
	"github.com/otelstep/otelstep/pipeline"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
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
	b.Items = pipeline.CountItems(b)
	return b
}

func BenchmarkFileSink(b *testing.B) { benchFileSink(b, bench1000(), nil) }

// BenchmarkFileSinkShared is BenchmarkFileSink with the point attributes
// shared sets' slices, as the scraper sends them: the steady state, with
// their JSON stored.
func BenchmarkFileSinkShared(b *testing.B) {
	shared := pipeline.NewSharedAttrs()
	batch, sets := sharedBench1000(shared)
	benchFileSink(b, batch, shared)
	runtime.KeepAlive(sets)
}

func benchFileSink(b *testing.B, batch *pipeline.Batch, shared *pipeline.SharedAttrs) {
	if pipeline.CountItems(batch) != 1000 {
		b.Fatal(pipeline.CountItems(batch))
	}
	path := filepath.Join(b.TempDir(), "bench.jsonl")
	f, err := NewFile(FileOptions{Path: path, Signal: pipeline.Metrics, SharedAttrs: shared})
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
	var re requestEncoder // its gzip state, kept as a worker keeps it
	_ = encodeProto(&re, msg, true, &out)
	raw, _ := proto.Marshal(msg)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := encodeProto(&re, msg, true, &out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(out.Len()), "gzip-bytes")
	b.ReportMetric(float64(len(raw)), "proto-bytes")
}

// BenchmarkEncodeRequestGzip is what the HTTP sink does per metrics batch:
// the reflection-free protobuf encoder, then gzip level 1.
func BenchmarkEncodeRequestGzip(b *testing.B) {
	batch := bench1000()
	var out bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		if err := EncodeRequest(batch, DefaultCompression, &out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(pipeline.CountItems(batch))*float64(b.N)/b.Elapsed().Seconds(), "points/s")
	b.ReportMetric(float64(out.Len())/float64(pipeline.CountItems(batch)), "gzip-bytes/point")
}

// BenchmarkFanout is the fan-out with both sinks on, as a job runs it: the
// JSONL file and the OTLP/HTTP exporter posting to a loopback backend that
// reads and discards. Each op is one 1000-point batch, through to both
// sinks' bytes (Shutdown waits for the last).
func BenchmarkFanout(b *testing.B) { benchFanout(b, bench1000(), nil) }

// BenchmarkFanoutShared is BenchmarkFanout with the point attributes
// shared sets' slices, as the scraper sends them (both sinks' stored
// encodings in steady state).
func BenchmarkFanoutShared(b *testing.B) {
	shared := pipeline.NewSharedAttrs()
	batch, sets := sharedBench1000(shared)
	benchFanout(b, batch, shared)
	runtime.KeepAlive(sets)
}

func benchFanout(b *testing.B, batch *pipeline.Batch, shared *pipeline.SharedAttrs) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	defer srv.Close()
	file, err := NewFile(FileOptions{Path: filepath.Join(b.TempDir(), "m.jsonl"), Signal: pipeline.Metrics, QueueSize: 64, SharedAttrs: shared})
	if err != nil {
		b.Fatal(err)
	}
	web, err := NewHTTP(HTTPOptions{Name: "otlp_http/bench", Endpoint: srv.URL, QueueSize: 4096,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), SharedAttrs: shared})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	_ = file.Start(ctx)
	_ = web.Start(ctx)
	fan := NewFanout(file, web)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := fan.Consume(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := file.Shutdown(sctx); err != nil {
		b.Fatal(err)
	}
	if err := web.Shutdown(sctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if st := web.Stats(); st.Dropped+st.Failed > 0 {
		b.Logf("HTTP sink dropped %d, failed %d batches (the queue outran the backend)", st.Dropped, st.Failed)
	}
	b.ReportMetric(float64(pipeline.CountItems(batch))*float64(b.N)/b.Elapsed().Seconds(), "points/s")
}

// encodeProto is the generic path (proto.Marshal, then gzip) the
// reflection-free encoders replaced: BenchmarkHTTPEncode's baseline. Only
// re's gzip state is used.
func encodeProto(re *requestEncoder, msg proto.Message, gz bool, out *bytes.Buffer) error {
	out.Reset()
	if !gz {
		raw, err := proto.MarshalOptions{}.MarshalAppend(out.AvailableBuffer(), msg)
		if err != nil {
			return err
		}
		out.Write(raw)
		return nil
	}
	raw, err := proto.MarshalOptions{}.MarshalAppend(re.raw[:0], msg)
	if err != nil {
		return err
	}
	re.raw = raw
	zw, err := re.zw.writer(DefaultCompression, pipeline.Metrics, true, out) // BenchmarkHTTPEncode's request is the scraper's metrics
	if err != nil {
		return err
	}
	if _, err := zw.Write(raw); err != nil {
		return err
	}
	return zw.Close()
}

// BenchmarkReceivedTraces is a received traces request's way through
// otelstep, without the sockets: the receipt decode (which copies the body,
// as a receiver's read does), the JSONL encoding and the gzipped protobuf
// of a 100-span request shaped like the load generator's. It allocates as
// the process does, so the GC runs as it does there: compare two forms of
// the path by instructions ("Counting instructions" in bench/README.md).
func BenchmarkReceivedTraces(b *testing.B) {
	body, _ := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: tracesProto(b, randomSpans(100).Traces)})
	benchReceived(b, pipeline.Traces, body, 100)
}

// BenchmarkReceivedLogs is BenchmarkReceivedTraces for the logs fixture.
func BenchmarkReceivedLogs(b *testing.B) {
	rls := logsFixture(b)
	body, _ := proto.Marshal(&collogspb.ExportLogsServiceRequest{ResourceLogs: rls})
	benchReceived(b, pipeline.Logs, body, pipeline.CountItems(&pipeline.Batch{Signal: pipeline.Logs, Logs: pipeline.LogsFromProto(rls)}))
}

func benchReceived(b *testing.B, sig pipeline.Signal, body []byte, items int) {
	var re requestEncoder
	var out bytes.Buffer
	var js []byte
	b.ReportAllocs()
	for b.Loop() {
		batch, err := otlpwire.UnmarshalRequest(sig, body)
		if err != nil {
			b.Fatal(err)
		}
		js = otlpwire.AppendTraces(js[:0], batch.Traces)
		js = otlpwire.AppendLogs(js, batch.Logs)
		if err := re.encode(batch, DefaultCompression, &out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(items)*float64(b.N)/b.Elapsed().Seconds(), "items/s")
}

// sharedBench1000 is bench1000 with every point's attributes a set's
// slice, shared in shared, as the scraper sends them, and the sets, which
// the caller holds while it wants them found.
func sharedBench1000(shared *pipeline.SharedAttrs) (*pipeline.Batch, []*pipeline.AttrSet) {
	batch := bench1000()
	return batch, otlptest.ShareAll(shared, batch.Metrics)
}

// tracesProto is rss as OTLP messages.
func tracesProto(t testing.TB, rss []*pipeline.ResourceSpans) []*tracepb.ResourceSpans {
	out, err := pipeline.TracesProto(rss)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
