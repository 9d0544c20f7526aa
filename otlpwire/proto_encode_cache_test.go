package otlpwire

import (
	"bytes"
	"testing"

	"github.com/otelstep/otelstep/internal/otlptest"
	"github.com/otelstep/otelstep/pipeline"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// checkCached encodes rms with e and with a cacheless encoder: the bytes
// must be identical, of proto.Size's length, and decode to rms.
func checkCached(t *testing.T, e *ProtoEncoder, rms []*metricspb.ResourceMetrics) {
	t.Helper()
	plain := ProtoEncoder{nocache: true}
	want := plain.AppendMetricsRequest(nil, rms)
	got := e.AppendMetricsRequest(nil, rms)
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
	sim := otlptest.NewScrapeSim(60)
	var e ProtoEncoder
	var last []*metricspb.ResourceMetrics
	for n := range 6 {
		last = sim.Batch(n)
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
	for i, a := range sim.Gauge {
		if i != 2 && !has(a, 7) {
			t.Errorf("gauge series %d has no stored encoding", i)
		}
	}
	if !has(sim.Gauge[2], 7) && !has(sim.Gauge[2], 9) {
		t.Error("the slice used under fields 7 and 9 holds neither")
	}
	for i, a := range sim.Hist[:len(sim.Hist)-1] {
		if !has(a, 9) {
			t.Errorf("histogram series %d has no stored encoding", i)
		}
	}
	for i, a := range sim.Summ[:len(sim.Summ)-1] {
		if !has(a, 7) {
			t.Errorf("summary series %d has no stored encoding", i)
		}
	}
	for _, a := range append(sim.Exp, sim.ExemplarAttrs) {
		if has(a, 1) || has(a, 7) || has(a, 9) {
			t.Error("a slice that is not a number, histogram or summary point's has an encoding")
		}
	}
}

// Corrupting a cached entry shows up in the output: the second request is
// served from the cache.
func TestProtoEncoderServesFromCache(t *testing.T) {
	attrs := pipeline.MarkShared([]*commonpb.KeyValue{sv("k", "v")})
	rms := rm2(&metricspb.ResourceMetrics{ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{{Name: "g",
		Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: []*metricspb.NumberDataPoint{{Attributes: attrs}}}}}}}}})
	var e ProtoEncoder
	first := e.AppendMetricsRequest(nil, rms)
	cached := pipeline.Encoded(attrs, pipeline.ProtoField(7))
	if cached == nil {
		t.Fatal("not stored")
	}
	cached[len(cached)-1] = 'X' // the last byte of the value "v"
	second := e.AppendMetricsRequest(nil, rms)
	if bytes.Equal(first, second) || !bytes.Contains(second, []byte("X")) {
		t.Fatal("second encoding not served from the cache")
	}
}

// A marked slice appended to (over its sentinel or into a new array) is
// encoded afresh, with its new element.
func TestProtoEncoderAppendedSliceNotCached(t *testing.T) {
	point := func(a []*commonpb.KeyValue) []*metricspb.ResourceMetrics {
		return rm2(&metricspb.ResourceMetrics{ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{{Name: "g",
			Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: []*metricspb.NumberDataPoint{{Attributes: a}}}}}}}}})
	}
	var e ProtoEncoder
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
func TestProtoEncoderUnsharedMutatedInPlace(t *testing.T) {
	attrs := make([]*commonpb.KeyValue, 1, 4) // spare capacity, but no mark
	attrs[0] = sv("k", "before")
	rms := rm2(&metricspb.ResourceMetrics{ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{{Name: "g",
		Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: []*metricspb.NumberDataPoint{{Attributes: attrs}}}}}}}}})
	var e ProtoEncoder
	checkCached(t, &e, rms)
	attrs[0] = sv("k", "after")
	checkCached(t, &e, rms)
}

// BenchmarkProtoEncoderShared is the HTTP sink's steady state: the same
// 1000 shared series every request with new values. "uncached" is the
// encoder as before the cache (pooled, nocache).
func BenchmarkProtoEncoderShared(b *testing.B) {
	batch := &pipeline.Batch{Signal: pipeline.Metrics, Metrics: sharedBatch1000(true)}
	for _, c := range []struct {
		name string
		enc  ProtoEncoder
	}{{"uncached", ProtoEncoder{nocache: true}}, {"cached", ProtoEncoder{}}} {
		b.Run(c.name, func(b *testing.B) {
			e := c.enc
			buf := e.AppendMetricsRequest(nil, batch.Metrics)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				buf = e.AppendMetricsRequest(buf[:0], batch.Metrics)
			}
			b.ReportMetric(1000*float64(b.N)/b.Elapsed().Seconds(), "points/s")
		})
	}
}

func rm2(rm *metricspb.ResourceMetrics) []*metricspb.ResourceMetrics {
	return []*metricspb.ResourceMetrics{rm}
}
