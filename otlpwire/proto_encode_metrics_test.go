package otlpwire

import (
	"bufio"
	"math/rand/v2"
	"os"
	"testing"

	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

func fixtureRequests(t testing.TB) []*colmetricspb.ExportMetricsServiceRequest {
	var out []*colmetricspb.ExportMetricsServiceRequest
	for _, f := range []string{"testdata/metrics.peer-gym-v1.jsonl", "testdata/openmetrics.peer.jsonl", "testdata/vllm.peer.jsonl"} {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			req, err := DecodeMetrics(sc.Bytes())
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			out = append(out, req)
		}
		fh.Close()
	}
	return out
}

func checkRoundTrip(t *testing.T, req *colmetricspb.ExportMetricsServiceRequest) {
	t.Helper()
	var e ProtoEncoder
	data := e.AppendMetricsRequest(nil, req.ResourceMetrics)
	if want := proto.Size(req); len(data) != want {
		t.Errorf("encoded %d bytes, proto.Size says %d", len(data), want)
	}
	var got colmetricspb.ExportMetricsServiceRequest
	if err := proto.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(&got, req) {
		t.Fatal("decoded request differs from the encoded one")
	}
}

func TestMetricsEncoderFixtures(t *testing.T) {
	reqs := fixtureRequests(t)
	if len(reqs) < 3 {
		t.Fatalf("only %d fixture lines", len(reqs))
	}
	for _, req := range reqs {
		checkRoundTrip(t, req)
	}
}

// Fields the fixtures lack: int values, flags, min/max, exponential
// histograms and nested values, zero-valued oneofs.
func TestMetricsEncoderAllFields(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	f := func() *float64 { v := r.Float64(); return &v }
	zero := 0.0
	kv := []*commonpb.KeyValue{
		{Key: "s", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{}}},
		{Key: "i", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: -5}}},
		{Key: "b", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{}}},
		{Key: "d", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{}}},
		{Key: "y", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte{1, 2}}}},
		{Key: "a", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{{Value: &commonpb.AnyValue_IntValue{IntValue: 1}}}}}}},
		{Key: "empty"},
	}
	req := &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{{
		SchemaUrl: "https://x",
		ScopeMetrics: []*metricspb.ScopeMetrics{{
			Scope: &commonpb.InstrumentationScope{Name: "n", Version: "v", Attributes: kv, DroppedAttributesCount: 3},
			Metrics: []*metricspb.Metric{
				{Name: "g", Unit: "s", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: []*metricspb.NumberDataPoint{
					{Value: &metricspb.NumberDataPoint_AsInt{AsInt: -7}, Flags: 1, Attributes: kv, Exemplars: []*metricspb.Exemplar{{Value: &metricspb.Exemplar_AsInt{AsInt: 3}, TraceId: make([]byte, 16), SpanId: []byte{1, 2, 3, 4, 5, 6, 7, 8}, FilteredAttributes: kv}}},
					{Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: 0}},
				}}}},
				{Name: "s", Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{IsMonotonic: true, AggregationTemporality: 1, DataPoints: []*metricspb.NumberDataPoint{{StartTimeUnixNano: 1, TimeUnixNano: 2}}}}},
				{Name: "h", Data: &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{DataPoints: []*metricspb.HistogramDataPoint{{Count: 3, Sum: &zero, Min: f(), Max: f(), BucketCounts: []uint64{1, 2}, ExplicitBounds: []float64{0.5}, Flags: 1}}}}},
				{Name: "e", Data: &metricspb.Metric_ExponentialHistogram{ExponentialHistogram: &metricspb.ExponentialHistogram{DataPoints: []*metricspb.ExponentialHistogramDataPoint{{Scale: 2, Count: 5, Positive: &metricspb.ExponentialHistogramDataPoint_Buckets{Offset: -1, BucketCounts: []uint64{1, 4}}}}}}},
				{Name: "q", Data: &metricspb.Metric_Summary{Summary: &metricspb.Summary{DataPoints: []*metricspb.SummaryDataPoint{{Count: 2, Sum: 1.5, QuantileValues: []*metricspb.SummaryDataPoint_ValueAtQuantile{{Quantile: 0, Value: 3}, {}}}}}}},
				{Name: "nodata", Metadata: kv},
			},
		}},
	}, {}}}
	checkRoundTrip(t, req)
}

func BenchmarkMetricsEncoder(b *testing.B) {
	reqs := fixtureRequests(b)
	var e ProtoEncoder
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		for _, r := range reqs {
			buf = e.AppendMetricsRequest(buf[:0], r.ResourceMetrics)
		}
	}
}

func BenchmarkProtoMarshalMetrics(b *testing.B) {
	reqs := fixtureRequests(b)
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		for _, r := range reqs {
			buf, _ = proto.MarshalOptions{}.MarshalAppend(buf[:0], r)
		}
	}
}
