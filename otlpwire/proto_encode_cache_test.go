package otlpwire

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"github.com/otelstep/otelstep/pipeline"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"
)

// protoScrapeSim builds batches the way the scraper does: each series keeps one
// marked attribute slice for its whole life and gets a new value every
// scrape; a series dies, one appears, and some points carry fresh, unmarked
// attributes.
type protoScrapeSim struct {
	gauge, hist, summ, exp [][]*commonpb.KeyValue
	exemplarAttrs          []*commonpb.KeyValue
}

func newProtoScrapeSim(series int) *protoScrapeSim {
	s := &protoScrapeSim{exemplarAttrs: pipeline.MarkShared([]*commonpb.KeyValue{sv("trace", "x")})}
	odd := []*commonpb.KeyValue{
		{Key: "i", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: -3}}},
		{Key: "b", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{}}},
		{Key: "d", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: math.NaN()}}},
		{Key: "y", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte{0, 255}}}},
		{Key: "a", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{{Value: &commonpb.AnyValue_IntValue{IntValue: 1}}}}}}},
		{Key: "nil-value"},
	}
	for i := range series {
		attrs := []*commonpb.KeyValue{sv("cpu", fmt.Sprint(i)), sv("mode", "us\"er\u00e9"), sv("host", "h")}
		if i%7 == 0 {
			attrs = append(attrs, odd...)
		}
		s.gauge = append(s.gauge, pipeline.MarkShared(attrs))
		s.hist = append(s.hist, pipeline.MarkShared([]*commonpb.KeyValue{sv("h", fmt.Sprint(i)), sv("job", "j")}))
		s.summ = append(s.summ, pipeline.MarkShared([]*commonpb.KeyValue{sv("q", fmt.Sprint(i))}))
		s.exp = append(s.exp, pipeline.MarkShared([]*commonpb.KeyValue{sv("e", fmt.Sprint(i))}))
	}
	s.summ = append(s.summ, s.gauge[1][1:]) // a suffix: not shared
	s.hist = append(s.hist, s.gauge[2])     // field 9 here, 7 in the gauge
	return s
}

var simValues = []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0, 1e-7, 123.456}

// batch returns scrape n (values change with n; from scrape 2 the last
// gauge series is replaced by a new one).
func (s *protoScrapeSim) batch(n int) []*metricspb.ResourceMetrics {
	if n == 2 {
		s.gauge[len(s.gauge)-1] = pipeline.MarkShared([]*commonpb.KeyValue{sv("cpu", "new")})
	}
	ts := uint64(1700000000000000000 + n*15e9)
	var gauge, sum []*metricspb.NumberDataPoint
	for i, a := range s.gauge {
		v := simValues[(i+n)%len(simValues)]
		gauge = append(gauge, &metricspb.NumberDataPoint{Attributes: a, TimeUnixNano: ts, Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: v}})
		p := &metricspb.NumberDataPoint{Attributes: a, StartTimeUnixNano: 1, TimeUnixNano: ts, Value: &metricspb.NumberDataPoint_AsInt{AsInt: int64(i * n)}}
		if i%5 == 0 {
			p.Exemplars = []*metricspb.Exemplar{{FilteredAttributes: s.exemplarAttrs, TimeUnixNano: ts, Value: &metricspb.Exemplar_AsDouble{AsDouble: v},
				TraceId: bytes.Repeat([]byte{byte(n + 1)}, 16), SpanId: bytes.Repeat([]byte{byte(i + 1)}, 8)}}
		}
		if i%11 == 0 {
			p.Flags = 1
		}
		sum = append(sum, p)
	}
	gauge = append(gauge,
		&metricspb.NumberDataPoint{Attributes: []*commonpb.KeyValue{sv("fresh", fmt.Sprint(n))}, TimeUnixNano: ts, Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: float64(n)}},
		&metricspb.NumberDataPoint{TimeUnixNano: ts})
	var hist []*metricspb.HistogramDataPoint
	for i, a := range s.hist {
		sm := float64(n * i)
		hist = append(hist, &metricspb.HistogramDataPoint{Attributes: a, TimeUnixNano: ts, Count: uint64(n), Sum: &sm,
			BucketCounts: []uint64{uint64(n), 0}, ExplicitBounds: []float64{0.5},
			Exemplars: []*metricspb.Exemplar{{FilteredAttributes: s.exemplarAttrs, Value: &metricspb.Exemplar_AsInt{AsInt: int64(n)}}}})
	}
	var summ []*metricspb.SummaryDataPoint
	for i, a := range s.summ {
		summ = append(summ, &metricspb.SummaryDataPoint{Attributes: a, TimeUnixNano: ts, Count: uint64(n), Sum: simValues[(i+n)%len(simValues)],
			QuantileValues: []*metricspb.SummaryDataPoint_ValueAtQuantile{{Quantile: 0.5, Value: float64(n)}, {Quantile: 1, Value: math.Inf(1)}}})
	}
	var exp []*metricspb.ExponentialHistogramDataPoint
	for _, a := range s.exp {
		exp = append(exp, &metricspb.ExponentialHistogramDataPoint{Attributes: a, TimeUnixNano: ts, Count: uint64(n), Scale: 2,
			Positive: &metricspb.ExponentialHistogramDataPoint_Buckets{Offset: -1, BucketCounts: []uint64{uint64(n)}}})
	}
	return []*metricspb.ResourceMetrics{{
		Resource: &resourcepb.Resource{Attributes: pipeline.MarkShared([]*commonpb.KeyValue{sv("service.name", "s"), sv("Authorization", "Bearer t0k")})},
		ScopeMetrics: []*metricspb.ScopeMetrics{{
			Scope: &commonpb.InstrumentationScope{Name: "otelstep", Attributes: pipeline.MarkShared([]*commonpb.KeyValue{sv("scope", "attr")})},
			Metrics: []*metricspb.Metric{
				{Name: "g", Unit: "1", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: gauge}}},
				{Name: "c_total", Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{DataPoints: sum, AggregationTemporality: 2, IsMonotonic: true}}},
				{Name: "h", Data: &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{DataPoints: hist, AggregationTemporality: 2}}},
				{Name: "s", Data: &metricspb.Metric_Summary{Summary: &metricspb.Summary{DataPoints: summ}}},
				{Name: "e", Data: &metricspb.Metric_ExponentialHistogram{ExponentialHistogram: &metricspb.ExponentialHistogram{DataPoints: exp}}},
				{Name: "meta", Metadata: pipeline.MarkShared([]*commonpb.KeyValue{sv("prometheus.type", "gauge")})},
			},
		}},
	}}
}

// checkCached encodes rms with e and with a cacheless encoder: the bytes
// must be identical, of proto.Size's length, and decode to rms.
func checkCached(t *testing.T, e *MetricsProtoEncoder, rms []*metricspb.ResourceMetrics) {
	t.Helper()
	plain := MetricsProtoEncoder{nocache: true}
	want := plain.AppendRequest(nil, rms)
	got := e.AppendRequest(nil, rms)
	if !bytes.Equal(got, want) {
		t.Fatalf("cached encoding differs from the uncached one (%d vs %d bytes)", len(got), len(want))
	}
	req := &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: rms}
	if n := proto.Size(req); len(got) != n {
		t.Fatalf("encoded %d bytes, proto.Size says %d", len(got), n)
	}
	var dec colmetricspb.ExportMetricsServiceRequest
	if err := proto.Unmarshal(got, &dec); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(&dec, req) {
		t.Fatal("decoded request differs from the encoded one")
	}
}

func TestMetricsEncoderSharedScrapes(t *testing.T) {
	sim := newProtoScrapeSim(60)
	var e MetricsProtoEncoder
	var last []*metricspb.ResourceMetrics
	for n := range 6 {
		last = sim.batch(n)
		checkCached(t, &e, last)
	}
	// Point attributes keep their encoding: field 7 for gauge, sum and
	// summary points, 9 for histograms. gauge[2] is also a histogram's (so
	// it holds one of the two), the summary's suffix of gauge[1] is not
	// shared, exponential histograms go through proto.Marshal, and the
	// resource, scope and exemplar slices are not point attributes. A
	// metric's shared metadata keeps its field 12.
	has := func(kvs []*commonpb.KeyValue, n int32) bool {
		return pipeline.Encoded(kvs, pipeline.ProtoField(n)) != nil
	}
	for _, m := range last[0].ScopeMetrics[0].Metrics {
		if m.Name == "meta" && !has(m.Metadata, 12) {
			t.Error("shared metadata has no stored encoding")
		}
	}
	for i, a := range sim.gauge {
		if i != 2 && !has(a, 7) {
			t.Errorf("gauge series %d has no stored encoding", i)
		}
	}
	if !has(sim.gauge[2], 7) && !has(sim.gauge[2], 9) {
		t.Error("the slice used under fields 7 and 9 holds neither")
	}
	for i, a := range sim.hist[:len(sim.hist)-1] {
		if !has(a, 9) {
			t.Errorf("histogram series %d has no stored encoding", i)
		}
	}
	for i, a := range sim.summ[:len(sim.summ)-1] {
		if !has(a, 7) {
			t.Errorf("summary series %d has no stored encoding", i)
		}
	}
	for _, a := range append(sim.exp, sim.exemplarAttrs) {
		if has(a, 1) || has(a, 7) || has(a, 9) {
			t.Error("a slice that is not a number, histogram or summary point's has an encoding")
		}
	}
}

// Corrupting a cached entry shows up in the output: the second request is
// served from the cache.
func TestMetricsProtoEncoderServesFromCache(t *testing.T) {
	attrs := pipeline.MarkShared([]*commonpb.KeyValue{sv("k", "v")})
	rms := rm2(&metricspb.ResourceMetrics{ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{{Name: "g",
		Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: []*metricspb.NumberDataPoint{{Attributes: attrs}}}}}}}}})
	var e MetricsProtoEncoder
	first := e.AppendRequest(nil, rms)
	cached := pipeline.Encoded(attrs, pipeline.ProtoField(7))
	if cached == nil {
		t.Fatal("not stored")
	}
	cached[len(cached)-1] = 'X' // the last byte of the value "v"
	second := e.AppendRequest(nil, rms)
	if bytes.Equal(first, second) || !bytes.Contains(second, []byte("X")) {
		t.Fatal("second encoding not served from the cache")
	}
}

// A marked slice appended to (over its sentinel or into a new array) is
// encoded afresh, with its new element.
func TestMetricsProtoEncoderAppendedSliceNotCached(t *testing.T) {
	point := func(a []*commonpb.KeyValue) []*metricspb.ResourceMetrics {
		return rm2(&metricspb.ResourceMetrics{ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{{Name: "g",
			Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: []*metricspb.NumberDataPoint{{Attributes: a}}}}}}}}})
	}
	var e MetricsProtoEncoder
	s := pipeline.MarkShared([]*commonpb.KeyValue{sv("a", "1")})
	checkCached(t, &e, point(s))
	grown := append(s[:1:2], sv("b", "2")) // same array, over the sentinel
	checkCached(t, &e, point(grown))
	checkCached(t, &e, point(s)) // unmarked now: a=1 alone
	realloc := append(pipeline.MarkShared([]*commonpb.KeyValue{sv("a", "1")}), sv("c", "3"))
	checkCached(t, &e, point(realloc))
	if pipeline.IsShared(grown) || pipeline.IsShared(realloc) || pipeline.IsShared(s) {
		t.Fatal("appended slices read as shared")
	}
}

// Unmarked slices may be mutated in place between batches (processors may
// do that): they must be encoded afresh every time.
func TestMetricsProtoEncoderUnsharedMutatedInPlace(t *testing.T) {
	attrs := make([]*commonpb.KeyValue, 1, 4) // spare capacity, but no mark
	attrs[0] = sv("k", "before")
	rms := rm2(&metricspb.ResourceMetrics{ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{{Name: "g",
		Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: []*metricspb.NumberDataPoint{{Attributes: attrs}}}}}}}}})
	var e MetricsProtoEncoder
	checkCached(t, &e, rms)
	attrs[0] = sv("k", "after")
	checkCached(t, &e, rms)
}

// BenchmarkMetricsProtoEncoderShared is the HTTP sink's steady state: the same
// 1000 shared series every request with new values. "uncached" is the
// encoder as before the cache (pooled, nocache).
func BenchmarkMetricsProtoEncoderShared(b *testing.B) {
	batch := &pipeline.Batch{Signal: pipeline.Metrics, Metrics: sharedBatch1000(true)}
	for _, c := range []struct {
		name string
		enc  MetricsProtoEncoder
	}{{"uncached", MetricsProtoEncoder{nocache: true}}, {"cached", MetricsProtoEncoder{}}} {
		b.Run(c.name, func(b *testing.B) {
			e := c.enc
			buf := e.AppendRequest(nil, batch.Metrics)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				buf = e.AppendRequest(buf[:0], batch.Metrics)
			}
			b.ReportMetric(1000*float64(b.N)/b.Elapsed().Seconds(), "points/s")
		})
	}
}

func rm2(rm *metricspb.ResourceMetrics) []*metricspb.ResourceMetrics {
	return []*metricspb.ResourceMetrics{rm}
}
