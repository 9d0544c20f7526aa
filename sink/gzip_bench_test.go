package sink

import (
	"bytes"
	stdgzip "compress/gzip"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/otelstep/otelstep/otlpwire"
	"github.com/otelstep/otelstep/pipeline"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// randomSpans is a traces batch shaped like `otelstep bench otlp`'s load
// and like real spans where it matters to gzip: random trace and span ids,
// timestamps that differ, attribute values that are not all alike.
func randomSpans(n int) *pipeline.Batch {
	r := rand.New(rand.NewPCG(1, 2))
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	val := func() string {
		b := make([]byte, 16)
		for i := range b {
			b[i] = letters[r.IntN(len(letters))]
		}
		return string(b)
	}
	id := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	spans := make([]*tracepb.Span, n)
	start := uint64(1_780_000_000_000_000_000)
	for i := range spans {
		attrs := make([]*commonpb.KeyValue, 8)
		for j := range attrs {
			attrs[j] = &commonpb.KeyValue{Key: fmt.Sprintf("attr.%d", j), Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: val()}}}
		}
		start += uint64(r.IntN(1e6))
		spans[i] = &tracepb.Span{TraceId: id(16), SpanId: id(8), ParentSpanId: id(8), Name: fmt.Sprintf("op-%d", i%7),
			Kind: tracepb.Span_SPAN_KIND_SERVER, StartTimeUnixNano: start, EndTimeUnixNano: start + uint64(r.IntN(1e7)),
			Attributes: attrs, Status: &tracepb.Status{}}
	}
	res := &resourcepb.Resource{Attributes: []*commonpb.KeyValue{strKV("service.name", "bench"), strKV("slurm.job.id", "123456")}}
	return &pipeline.Batch{Signal: pipeline.Traces, Items: n, Traces: pipeline.TracesFromProto([]*tracepb.ResourceSpans{{Resource: res, ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}}}})}
}

// randomPoints is a metrics batch shaped like `otelstep bench otlp
// --signal metrics`'s load: one sum whose points each carry 8 attributes
// of 16 random letters and a random value.
func randomPoints(n int) *pipeline.Batch {
	r := rand.New(rand.NewPCG(1, 2))
	pts := make([]*metricspb.NumberDataPoint, n)
	for i := range pts {
		attrs := make([]*commonpb.KeyValue, 8)
		for j := range attrs {
			v := make([]byte, 16)
			for k := range v {
				v[k] = 'a' + byte(r.IntN(26))
			}
			attrs[j] = strKV(fmt.Sprintf("attr.%d", j), string(v))
		}
		pts[i] = &metricspb.NumberDataPoint{TimeUnixNano: 1_780_000_000_000_000_000, StartTimeUnixNano: 1_779_999_999_000_000_000,
			Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: r.Float64()}, Attributes: attrs}
	}
	res := &resourcepb.Resource{Attributes: []*commonpb.KeyValue{strKV("service.name", "bench-driver"), strKV("host.name", "node-001")}}
	b := &pipeline.Batch{Signal: pipeline.Metrics, Metrics: []*metricspb.ResourceMetrics{{Resource: res, ScopeMetrics: []*metricspb.ScopeMetrics{{
		Metrics: []*metricspb.Metric{{Name: "bench_requests", Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{IsMonotonic: true,
			AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE, DataPoints: pts}}}}}}}}}
	b.Items = pipeline.CountItems(b)
	return b
}

// BenchmarkGzipLevel compares the compressors on each signal's export
// body, reporting with the time the compressed size over the size the
// collector's default gives it (the standard library's gzip at -1, level
// 6, "collector" here). "default" is the exporter's default for the body
// (Compression.libLevel, Compression.asCollector): the compression
// library's level 7 for spans and log records, its level 6 for the
// scraper's metrics, the collector's own gzip for other metrics. Lx is the
// library's level x whatever the body. The metrics bodies run from the bench's random attribute values
// to the span_metrics connector's few, very repetitive series: which of
// the library's levels is nearest the collector's bytes depends on them.
func BenchmarkGzipLevel(b *testing.B) {
	logs := &pipeline.Batch{Signal: pipeline.Logs, Logs: pipeline.LogsFromProto(logsFixture(b))}
	batches := []struct {
		name string
		b    *pipeline.Batch
	}{{"traces", randomSpans(100)}, {"traces-telemetrygen", telemetrygenSpans(b, 1800)}, {"logs", logs},
		{"metrics", bench1000()}, {"metrics-random-attrs", randomPoints(1000)},
		{"metrics-targets", fixtureTargets(b, 28)}, {"metrics-dcgm", scraped(fixtureMetrics(b, 28, "testdata/dcgm.peer.jsonl"))},
		{"metrics-spanmetrics", fixtureMetrics(b, 1, "testdata/spanmetrics.peer.jsonl")}}
	levels := []struct {
		name string
		c    Compression
		lib  int // the library's gzip level itself, whatever the signal
	}{{"collector", Compression{}, 0}, {"default", DefaultCompression, 0}, {"L1", Compression{}, 1},
		{"L6", Compression{}, 6}, {"L7", Compression{}, 7}, {"L8", Compression{}, 8},
		{"L9", Compression{}, 9}, {"zstd", Compression{Type: "zstd"}, 0}, {"snappy", Compression{Type: "snappy"}, 0}}
	for _, bt := range batches {
		var raw bytes.Buffer
		if err := EncodeRequest(bt.b, Compression{}, &raw); err != nil {
			b.Fatal(err)
		}
		ref := collectorGzip(raw.Bytes())
		for _, lv := range levels {
			b.Run(bt.name+"/"+lv.name, func(b *testing.B) {
				var out bytes.Buffer
				var cs compressors
				std, _ := stdgzip.NewWriterLevel(nil, stdgzip.DefaultCompression) // pooled, as the collector's
				lib, _ := gzip.NewWriterLevel(nil, max(lv.lib, 1))
				b.SetBytes(int64(raw.Len()))
				b.ReportAllocs()
				for b.Loop() {
					switch {
					case lv.lib > 0:
						out.Reset()
						lib.Reset(&out)
						lib.Write(raw.Bytes())
						lib.Close()
					case lv.c.Type == "":
						out.Reset()
						std.Reset(&out)
						std.Write(raw.Bytes())
						std.Close()
					case lv.c.Type == "snappy":
						out.Reset()
						if err := appendSnappy(&out, raw.Bytes()); err != nil {
							b.Fatal(err)
						}
					default:
						out.Reset()
						zw, err := cs.writer(lv.c, bt.b.Signal, bt.b.Scraped, &out)
						if err != nil {
							b.Fatal(err)
						}
						zw.Write(raw.Bytes())
						zw.Close()
					}
				}
				if lv.c.Type != "" || lv.lib > 0 {
					b.ReportMetric(float64(out.Len())/float64(ref), "size/collector's")
				}
			})
		}
	}
}

// fixtureTargets is a metrics batch as a job's scrapes make it: the
// collector's JSONL of a vLLM page and of the gym job's metrics, from n
// targets that differ by their instance.
func fixtureTargets(b testing.TB, n int) *pipeline.Batch {
	return scraped(fixtureMetrics(b, n, "testdata/vllm.peer.jsonl", "testdata/metrics.peer-gym-v1.jsonl"))
}

// scraped marks b as the scraper's (pipeline.Batch.Scraped).
func scraped(b *pipeline.Batch) *pipeline.Batch {
	b.Scraped = true
	return b
}

// fixtureMetrics is one metrics batch of the resources in the JSONL files,
// copied n times with an instance of their own each.
func fixtureMetrics(b testing.TB, n int, files ...string) *pipeline.Batch {
	b.Helper()
	var base []*metricspb.ResourceMetrics
	for _, f := range files {
		forLines(b, f, func(l []byte) {
			req, err := otlpwire.DecodeMetrics(l)
			if err != nil {
				b.Fatal(err)
			}
			base = append(base, req.ResourceMetrics...)
		})
	}
	out := &pipeline.Batch{Signal: pipeline.Metrics}
	for i := range n {
		for _, rm := range base {
			c := proto.Clone(rm).(*metricspb.ResourceMetrics)
			c.Resource.Attributes = append(c.Resource.Attributes, strKV("service.instance.id", fmt.Sprintf("node%03d:9100", i)))
			out.Metrics = append(out.Metrics, c)
		}
	}
	out.Items = pipeline.CountItems(out)
	return out
}

func logsFixture(t testing.TB) []*logspb.ResourceLogs {
	t.Helper()
	var out []*logspb.ResourceLogs
	forLines(t, "testdata/logs.peer.jsonl", func(l []byte) {
		req, err := otlpwire.DecodeLogs(l)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, req.ResourceLogs...)
	})
	return out
}

// BenchmarkAppendTracesJSON is the JSONL line of a traces batch shaped like
// the load generator's: 100 spans, 8 random 16-byte attribute values each.
func BenchmarkAppendTracesJSON(b *testing.B) {
	batch := randomSpans(100)
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = otlpwire.AppendTraces(buf[:0], batch.Traces)
	}
	b.SetBytes(int64(len(buf)))
	b.ReportMetric(100*float64(b.N)/b.Elapsed().Seconds(), "spans/s")
}
