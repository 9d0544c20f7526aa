package otlpwire

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/otelstep/otelstep/pipeline"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"
)

func sv(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// scrapeSim builds batches the way the scraper does: each series keeps one
// marked attribute slice for its whole life and gets a new value every
// scrape; some series die, some appear, and some points carry fresh,
// unmarked attributes.
type scrapeSim struct {
	gauge, hist, summ, exp [][]*commonpb.KeyValue
	exemplarAttrs          []*commonpb.KeyValue
}

func newScrapeSim(series int) *scrapeSim {
	s := &scrapeSim{exemplarAttrs: pipeline.MarkShared([]*commonpb.KeyValue{sv("trace", "x")})}
	odd := []*commonpb.KeyValue{
		{Key: "i", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: -3}}},
		{Key: "b", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: true}}},
		{Key: "d", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: math.Inf(-1)}}},
		{Key: "y", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte{0, 255}}}},
		{Key: "a", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{{Value: &commonpb.AnyValue_StringValue{StringValue: "e"}}}}}}},
		{Key: "nil-value"},
	}
	for i := range series {
		attrs := []*commonpb.KeyValue{sv("cpu", fmt.Sprint(i)), sv("mode", "us\"er\n\u00e9\xff"), sv("host", "h")}
		if i%7 == 0 {
			attrs = append(attrs, odd...)
		}
		s.gauge = append(s.gauge, pipeline.MarkShared(attrs))
		s.hist = append(s.hist, pipeline.MarkShared([]*commonpb.KeyValue{sv("le-free", fmt.Sprint(i)), sv("job", "j")}))
		s.summ = append(s.summ, pipeline.MarkShared([]*commonpb.KeyValue{sv("q", fmt.Sprint(i))}))
		s.exp = append(s.exp, pipeline.MarkShared([]*commonpb.KeyValue{sv("e", fmt.Sprint(i))}))
	}
	// A suffix of a marked slice is not shared: it must not use the
	// whole slice's encoding.
	s.summ = append(s.summ, s.gauge[1][1:])
	// The same slice under two point kinds: protobuf field numbers differ.
	s.hist = append(s.hist, s.gauge[2])
	return s
}

// values cycles through the awkward doubles.
var values = []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0, 1e-7, 1e21, 123.456}

// batch returns scrape n. From scrape 2 on the last gauge series is dead
// and a new one exists; every scrape adds an unmarked point.
func (s *scrapeSim) batch(n int) []*metricspb.ResourceMetrics {
	if n == 2 {
		s.gauge[len(s.gauge)-1] = pipeline.MarkShared([]*commonpb.KeyValue{sv("cpu", "new")})
	}
	ts := uint64(1700000000000000000 + n*15e9)
	var gauge []*metricspb.NumberDataPoint
	var sum []*metricspb.NumberDataPoint
	for i, a := range s.gauge {
		v := values[(i+n)%len(values)]
		gauge = append(gauge, &metricspb.NumberDataPoint{Attributes: a, TimeUnixNano: ts, Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: v}})
		p := &metricspb.NumberDataPoint{Attributes: a, StartTimeUnixNano: 1, TimeUnixNano: ts, Value: &metricspb.NumberDataPoint_AsInt{AsInt: int64(i * n)}}
		if i%5 == 0 {
			p.Exemplars = []*metricspb.Exemplar{{FilteredAttributes: s.exemplarAttrs, TimeUnixNano: ts, Value: &metricspb.Exemplar_AsDouble{AsDouble: v},
				TraceId: bytes.Repeat([]byte{byte(n)}, 16), SpanId: bytes.Repeat([]byte{byte(i)}, 8)}}
		}
		if i%11 == 0 {
			p.Flags = 1
		}
		sum = append(sum, p)
	}
	gauge = append(gauge,
		&metricspb.NumberDataPoint{Attributes: []*commonpb.KeyValue{sv("fresh", fmt.Sprint(n))}, TimeUnixNano: ts, Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: float64(n)}},
		&metricspb.NumberDataPoint{TimeUnixNano: ts}) // no attributes at all
	var hist []*metricspb.HistogramDataPoint
	for i, a := range s.hist {
		sm := float64(n * i)
		hist = append(hist, &metricspb.HistogramDataPoint{Attributes: a, TimeUnixNano: ts, Count: uint64(n), Sum: &sm,
			BucketCounts: []uint64{uint64(n), 0}, ExplicitBounds: []float64{0.5},
			Exemplars: []*metricspb.Exemplar{{FilteredAttributes: s.exemplarAttrs, Value: &metricspb.Exemplar_AsInt{AsInt: int64(n)}}}})
	}
	var summ []*metricspb.SummaryDataPoint
	for i, a := range s.summ {
		summ = append(summ, &metricspb.SummaryDataPoint{Attributes: a, TimeUnixNano: ts, Count: uint64(n), Sum: values[(i+n)%len(values)],
			QuantileValues: []*metricspb.SummaryDataPoint_ValueAtQuantile{{Quantile: 0.5, Value: float64(n)}, {Quantile: 1, Value: math.NaN()}}})
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

func TestMetricsEncoderMatchesAppendMetrics(t *testing.T) {
	sim := newScrapeSim(60)
	var e MetricsEncoder
	var got []byte
	var rms []*metricspb.ResourceMetrics
	for n := range 6 {
		rms = sim.batch(n)
		want := AppendMetrics(nil, rms, "Authorization")
		got = e.AppendMetrics(got[:0], rms, "Authorization")
		if !bytes.Equal(got, want) {
			t.Fatalf("scrape %d: cached encoding differs\n got %s\nwant %s", n, got, want)
		}
		if strings.Contains(string(got), "t0k") {
			t.Fatal("Authorization written")
		}
	}
	// Point attributes keep their JSON: gauge (shared by gauge and sum),
	// hist, summ and exp slices, and so does a metric's metadata. Not the
	// resource, scope or exemplar slices, which are marked too.
	for _, m := range rms[0].ScopeMetrics[0].Metrics {
		if m.Name == "meta" && pipeline.Encoded(m.Metadata, pipeline.EncodingJSON) == nil {
			t.Fatal("shared metadata has no stored JSON")
		}
	}
	for _, group := range [][][]*commonpb.KeyValue{sim.gauge, sim.hist, sim.summ[:len(sim.summ)-1], sim.exp} {
		for i, a := range group {
			if pipeline.Encoded(a, pipeline.EncodingJSON) == nil {
				t.Fatalf("point slice %d has no stored JSON", i)
			}
		}
	}
	if pipeline.Encoded(sim.exemplarAttrs, pipeline.EncodingJSON) != nil {
		t.Fatal("exemplar attributes stored")
	}
}

// The cached bytes are what is written: corrupting one shows up in the
// output, which proves the second scrape is served from the cache (and
// that the test above compares something).
func TestMetricsEncoderServesFromCache(t *testing.T) {
	attrs := pipeline.MarkShared([]*commonpb.KeyValue{sv("k", "v")})
	rms := []*metricspb.ResourceMetrics{{ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{{Name: "g",
		Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: []*metricspb.NumberDataPoint{{Attributes: attrs}}}}}}}}}}
	var e MetricsEncoder
	first := string(e.AppendMetrics(nil, rms))
	cached := pipeline.Encoded(attrs, pipeline.EncodingJSON)
	if string(cached) != `[{"key":"k","value":{"stringValue":"v"}}]` {
		t.Fatalf("stored encoding %q", cached)
	}
	cached[bytes.LastIndexByte(cached, 'v')] = 'X' // the value "v"
	if second := string(e.AppendMetrics(nil, rms)); second == first || !strings.Contains(second, `"stringValue":"X"`) {
		t.Fatalf("second encoding not from the cache: %s", second)
	}
}

// A marked slice that is appended to (in its spare slot or into a new
// array) must be encoded afresh, with the new element.
func TestMetricsEncoderAppendedSliceNotCached(t *testing.T) {
	point := func(a []*commonpb.KeyValue) []*metricspb.ResourceMetrics {
		return []*metricspb.ResourceMetrics{{ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{{Name: "g",
			Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: []*metricspb.NumberDataPoint{{Attributes: a}}}}}}}}}}
	}
	var e MetricsEncoder
	check := func(a []*commonpb.KeyValue) {
		t.Helper()
		if got, want := e.AppendMetrics(nil, point(a)), AppendMetrics(nil, point(a)); !bytes.Equal(got, want) {
			t.Fatalf("got %s\nwant %s", got, want)
		}
	}
	s := pipeline.MarkShared([]*commonpb.KeyValue{sv("a", "1")})
	check(s)
	grown := append(s[:1:2], sv("b", "2")) // same array, over the sentinel
	check(grown)
	check(s) // now unmarked: encoded afresh, still just a=1
	realloc := append(pipeline.MarkShared([]*commonpb.KeyValue{sv("a", "1")}), sv("c", "3"))
	check(realloc)
	if pipeline.IsShared(grown) || pipeline.IsShared(realloc) || pipeline.IsShared(s) {
		t.Fatal("appended slices read as shared")
	}
}

// Unmarked slices may be mutated in place between batches (processors may
// do that): they must be encoded afresh every time.
func TestMetricsEncoderUnsharedMutatedInPlace(t *testing.T) {
	attrs := make([]*commonpb.KeyValue, 1, 4) // spare capacity, but no mark
	attrs[0] = sv("k", "before")
	rms := []*metricspb.ResourceMetrics{{ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{{Name: "g",
		Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: []*metricspb.NumberDataPoint{{Attributes: attrs}}}}}}}}}}
	var e MetricsEncoder
	for _, v := range []string{"before", "after"} {
		attrs[0] = sv("k", v)
		if got, want := e.AppendMetrics(nil, rms), AppendMetrics(nil, rms); !bytes.Equal(got, want) {
			t.Fatalf("got %s\nwant %s", got, want)
		}
	}
}

// BenchmarkMetricsEncoderShared is the file sink's steady state: the same
// 1000 series every call with new values. "uncached" is the
// package-level AppendMetrics (the path before the cache).
func BenchmarkMetricsEncoderShared(b *testing.B) {
	rms := sharedBatch1000(true)
	var e MetricsEncoder
	run := func(b *testing.B, enc func([]byte) []byte) {
		buf := enc(nil)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			buf = enc(buf[:0])
		}
		b.ReportMetric(1000*float64(b.N)/b.Elapsed().Seconds(), "points/s")
	}
	b.Run("uncached", func(b *testing.B) { run(b, func(d []byte) []byte { return AppendMetrics(d, rms, "Authorization") }) })
	b.Run("cached", func(b *testing.B) { run(b, func(d []byte) []byte { return e.AppendMetrics(d, rms, "Authorization") }) })
}

// sharedBatch1000 is 10 resources × 10 gauges × 10 points with scraper-like
// attributes (4 labels), marked shared when shared is set.
func sharedBatch1000(shared bool) []*metricspb.ResourceMetrics {
	var rms []*metricspb.ResourceMetrics
	for r := range 10 {
		var ms []*metricspb.Metric
		for m := range 10 {
			var pts []*metricspb.NumberDataPoint
			for p := range 10 {
				a := []*commonpb.KeyValue{sv("cpu", fmt.Sprint(p)), sv("mode", "user"), sv("instance", "node-exporter:9100"), sv("job", "node")}
				if shared {
					a = pipeline.MarkShared(a)
				}
				pts = append(pts, &metricspb.NumberDataPoint{Attributes: a, TimeUnixNano: 1700000000000000000, StartTimeUnixNano: 1690000000000000000,
					Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: float64(p) * 1.25}})
			}
			ms = append(ms, &metricspb.Metric{Name: fmt.Sprintf("node_metric_%d", m), Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: pts}}})
		}
		rms = append(rms, &metricspb.ResourceMetrics{
			Resource:     &resourcepb.Resource{Attributes: []*commonpb.KeyValue{sv("service.name", "node"), sv("host", fmt.Sprint(r))}},
			ScopeMetrics: []*metricspb.ScopeMetrics{{Scope: &commonpb.InstrumentationScope{Name: "otelstep"}, Metrics: ms}},
		})
	}
	return rms
}

// Points that repeat the last start or time (as a scrape's do) and points
// that do not, zeros among them, in every point type: the timestamps the
// writer keeps the digits of come out as protojson writes them, through
// both encoders.
func TestPointTimesRepeat(t *testing.T) {
	const t0, t1 = 1_780_000_000_000_000_000, 1_780_000_015_000_000_000
	times := [][2]uint64{{t0, t1}, {t0, t1}, {0, t1}, {t0, t1}, {t0 + 1, t1}, {t0 + 1, 0}, {5, 7}, {t0, t1}, {t0, t1 + 9}}
	var num []*metricspb.NumberDataPoint
	var hist []*metricspb.HistogramDataPoint
	var sum []*metricspb.SummaryDataPoint
	for i, tt := range times {
		num = append(num, &metricspb.NumberDataPoint{StartTimeUnixNano: tt[0], TimeUnixNano: tt[1], Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: float64(i)}})
		hist = append(hist, &metricspb.HistogramDataPoint{StartTimeUnixNano: tt[1], TimeUnixNano: tt[0], Count: uint64(i)})
		sum = append(sum, &metricspb.SummaryDataPoint{StartTimeUnixNano: tt[0], TimeUnixNano: tt[1], Count: uint64(i)})
	}
	rms := []*metricspb.ResourceMetrics{{ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{
		{Name: "g", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: num}}},
		{Name: "h", Data: &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{DataPoints: hist}}},
		{Name: "s", Data: &metricspb.Metric_Summary{Summary: &metricspb.Summary{DataPoints: sum}}},
		{Name: "g2", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: num[3:]}}},
	}}}}}
	req := &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: rms}
	var e MetricsEncoder
	for i, enc := range [][]byte{AppendMetrics(nil, rms), e.AppendMetrics(nil, rms)} {
		crossCheck(t, i, req, enc, func(b []byte) (proto.Message, error) { return DecodeMetrics(b) })
	}
}
