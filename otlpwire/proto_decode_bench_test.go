package otlpwire_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/otelstep/otelstep/otlpwire"
	"github.com/otelstep/otelstep/pipeline"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Benchmarks: the decoder against proto.Unmarshal on a request shaped like
// `otelstep bench otlp`'s (bench/otlp.go): 100 items, each with 8 string
// attributes of 16 bytes.

const benchItems, benchAttrs, benchAttrBytes = 100, 8, 16

func benchRequest(sig pipeline.Signal) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	str := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = 'a' + byte(rng.IntN(26))
		}
		return string(b)
	}
	sv := func(s string) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
	}
	attrs := func() []*commonpb.KeyValue {
		kvs := make([]*commonpb.KeyValue, benchAttrs)
		for i := range kvs {
			kvs[i] = &commonpb.KeyValue{Key: fmt.Sprintf("attr.%d", i), Value: sv(str(benchAttrBytes))}
		}
		return kvs
	}
	id := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	res := &resourcepb.Resource{Attributes: []*commonpb.KeyValue{{Key: "service.name", Value: sv("bench-driver")}, {Key: "host.name", Value: sv("node-001")}}}
	scope := &commonpb.InstrumentationScope{Name: "otelstep-bench", Version: "1"}
	const now = uint64(1_700_000_000_000_000_000)
	var m proto.Message
	switch sig {
	case pipeline.Traces:
		spans := make([]*tracepb.Span, benchItems)
		for j := range spans {
			spans[j] = &tracepb.Span{TraceId: id(16), SpanId: id(8), ParentSpanId: id(8), Name: fmt.Sprintf("op-%d", j%50), Kind: tracepb.Span_SPAN_KIND_SERVER,
				StartTimeUnixNano: now, EndTimeUnixNano: now + 1e6, Attributes: attrs(), Status: &tracepb.Status{}}
		}
		m = &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{Resource: res, ScopeSpans: []*tracepb.ScopeSpans{{Scope: scope, Spans: spans}}}}}
	case pipeline.Logs:
		recs := make([]*logspb.LogRecord, benchItems)
		for j := range recs {
			recs[j] = &logspb.LogRecord{TimeUnixNano: now, SeverityNumber: logspb.SeverityNumber_SEVERITY_NUMBER_INFO, SeverityText: "INFO",
				Body: sv(fmt.Sprintf("request %d handled in %d ms", j, rng.IntN(900))), Attributes: attrs(), TraceId: id(16), SpanId: id(8)}
		}
		m = &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{Resource: res, ScopeLogs: []*logspb.ScopeLogs{{Scope: scope, LogRecords: recs}}}}}
	default:
		pts := make([]*metricspb.NumberDataPoint, benchItems)
		for j := range pts {
			pts[j] = &metricspb.NumberDataPoint{TimeUnixNano: now, StartTimeUnixNano: now - 1e9, Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: rng.Float64()}, Attributes: attrs()}
		}
		m = &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{{Resource: res, ScopeMetrics: []*metricspb.ScopeMetrics{{Scope: scope,
			Metrics: []*metricspb.Metric{{Name: "bench_requests", Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{IsMonotonic: true,
				AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE, DataPoints: pts}}}}}}}}}
	}
	data, err := proto.Marshal(m)
	if err != nil {
		panic(err)
	}
	return data
}

func benchDecode(b *testing.B, sig pipeline.Signal, unit string) {
	data := benchRequest(sig)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := otlpwire.UnmarshalRequest(sig, data); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*benchItems)/b.Elapsed().Seconds(), unit+"/s")
}

func benchProto(b *testing.B, sig pipeline.Signal, unit string) {
	data := benchRequest(sig)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if err := proto.Unmarshal(data, newRequest(sig)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*benchItems)/b.Elapsed().Seconds(), unit+"/s")
}

func BenchmarkDecodeTraces(b *testing.B)          { benchDecode(b, pipeline.Traces, "spans") }
func BenchmarkProtoUnmarshalTraces(b *testing.B)  { benchProto(b, pipeline.Traces, "spans") }
func BenchmarkDecodeLogs(b *testing.B)            { benchDecode(b, pipeline.Logs, "records") }
func BenchmarkProtoUnmarshalLogs(b *testing.B)    { benchProto(b, pipeline.Logs, "records") }
func BenchmarkDecodeMetrics(b *testing.B)         { benchDecode(b, pipeline.Metrics, "points") }
func BenchmarkProtoUnmarshalMetrics(b *testing.B) { benchProto(b, pipeline.Metrics, "points") }

// A traces or logs request's decode allocates a small fraction of its
// body: the items stay as records, and the slabs are not sized by
// extrapolating the few resource attributes over the whole body (which
// allocated a 600 KB chunk a request).
func TestDecodeKeptItemsAllocateLittle(t *testing.T) {
	for _, sig := range []pipeline.Signal{pipeline.Traces, pipeline.Logs} {
		data := benchRequest(sig)
		bodies := make([][]byte, 50)
		for i := range bodies {
			bodies[i] = bytes.Clone(data)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for _, body := range bodies {
			if _, err := otlpwire.UnmarshalOwnedRequest(sig, body); err != nil {
				t.Fatal(err)
			}
		}
		runtime.ReadMemStats(&after)
		per := (after.TotalAlloc - before.TotalAlloc) / uint64(len(bodies))
		// A fraction of the body: a few hundred bytes, plus a fresh
		// decoder where sync.Pool drops them (it does at random under
		// -race); the chunk sized by extrapolation was 600 KB.
		if limit := uint64(len(data)) / 2; per > limit {
			t.Errorf("%s: %d bytes allocated a request of %d bytes, want at most %d", sig, per, len(data), limit)
		}
	}
}

// BenchmarkSpanDecoder: decoding received span records one after another
// into scratch, as the OTLP/JSON encoder does.

func BenchmarkSpanDecoder(b *testing.B) {
	data := benchRequest(pipeline.Traces)
	bt, err := otlpwire.UnmarshalRequest(pipeline.Traces, data)
	if err != nil {
		b.Fatal(err)
	}
	recs := bt.Traces[0].ScopeSpans[0].Records
	n := pipeline.Records(recs).Len()
	var d otlpwire.SpanDecoder
	b.ReportAllocs()
	for b.Loop() {
		for rec := range pipeline.Records(recs).All() {
			if _, err := d.Decode(rec); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "spans/s")
}
