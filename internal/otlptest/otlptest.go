// Package otlptest holds OTLP test data that more than one package's tests
// use: scrape-shaped metrics whose series keep shared attribute slices, and
// trace batches for the codecs' edges and benchmarks.
package otlptest

import (
	"bytes"
	"fmt"
	"math"

	"github.com/otelstep/otelstep/pipeline"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

func str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// EdgeSpans returns trace batches with every span field set, empty and
// odd spans (an unknown kind, an empty status), an empty scope and a
// resource-less ResourceSpans, and a nil batch: what a codec must carry
// besides real exporters' requests.
func EdgeSpans() [][]*tracepb.ResourceSpans {
	full := &tracepb.Span{
		TraceId: bytes.Repeat([]byte{0xab}, 16), SpanId: bytes.Repeat([]byte{0xcd}, 8), ParentSpanId: []byte{1, 2, 3, 4, 5, 6, 7, 8},
		TraceState: "k=v", Name: "op", Kind: tracepb.Span_SPAN_KIND_CONSUMER, Flags: 0x101,
		StartTimeUnixNano: 1, EndTimeUnixNano: 1<<63 + 5,
		Attributes: []*commonpb.KeyValue{str("a", "b"), {Key: "i", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: -7}}},
			{Key: "arr", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{{Value: &commonpb.AnyValue_BoolValue{BoolValue: true}}}}}}},
			{Key: "nil-value"}},
		DroppedAttributesCount: 3,
		Events:                 []*tracepb.Span_Event{{TimeUnixNano: 9, Name: "ev", Attributes: []*commonpb.KeyValue{str("e", "1")}, DroppedAttributesCount: 1}, {}},
		DroppedEventsCount:     2,
		Links:                  []*tracepb.Span_Link{{TraceId: bytes.Repeat([]byte{9}, 16), SpanId: bytes.Repeat([]byte{8}, 8), TraceState: "x", Attributes: []*commonpb.KeyValue{str("l", "2")}, DroppedAttributesCount: 4, Flags: 1}, {}},
		DroppedLinksCount:      5,
		Status:                 &tracepb.Status{Message: "bad", Code: tracepb.Status_STATUS_CODE_ERROR},
	}
	return [][]*tracepb.ResourceSpans{
		[]*tracepb.ResourceSpans{{
			Resource:  &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "s")}, DroppedAttributesCount: 1},
			SchemaUrl: "https://schema/1",
			ScopeSpans: []*tracepb.ScopeSpans{
				{Scope: &commonpb.InstrumentationScope{Name: "lib", Version: "1", Attributes: []*commonpb.KeyValue{str("x", "y")}, DroppedAttributesCount: 2},
					SchemaUrl: "https://schema/2", Spans: []*tracepb.Span{full, {}, {Status: &tracepb.Status{}}, {Kind: tracepb.Span_SpanKind(-1)}}},
				{}, // empty scope spans
			},
		}, {}}, // a resource-less ResourceSpans
		nil,
	}
}

// BenchSpans returns one resource of n spans shaped like the bench's: 8
// string attributes of 16 bytes, a server span with ids from its index.
func BenchSpans(n int) []*tracepb.ResourceSpans {
	spans := make([]*tracepb.Span, n)
	for i := range spans {
		attrs := make([]*commonpb.KeyValue, 8)
		for j := range attrs {
			attrs[j] = &commonpb.KeyValue{Key: "attr." + string(rune('a'+j)), Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "abcdefghijklmnop"}}}
		}
		spans[i] = &tracepb.Span{TraceId: bytes.Repeat([]byte{byte(i)}, 16), SpanId: bytes.Repeat([]byte{byte(i)}, 8), Name: "op",
			Kind: tracepb.Span_SPAN_KIND_SERVER, StartTimeUnixNano: uint64(i), EndTimeUnixNano: uint64(i) + 1e6, Attributes: attrs, Status: &tracepb.Status{}}
	}
	return []*tracepb.ResourceSpans{{Resource: &resourcepb.Resource{}, ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}}}}
}

// ScrapeSim builds batches the way the scraper does: each series' point
// attributes are a set shared in Shared, held for the series' whole life,
// and every scrape sends the set's slice with a new value; a series dies,
// one appears, and some points carry fresh attributes that are no set's.
type ScrapeSim struct {
	// Shared finds the sets: what the sinks' encoders are given.
	Shared *pipeline.SharedAttrs
	// Each series' attributes, a set's slice, by point kind; the last Summ
	// entry is a suffix of a gauge series' (no set's) and the last Hist
	// entry a gauge series' slice under a second kind.
	Gauge, Hist, Summ, Exp [][]*commonpb.KeyValue
	// ExemplarAttrs, and each batch's resource and scope attributes, are
	// sets' slices too, where no encoder looks for one.
	ExemplarAttrs []*commonpb.KeyValue
	// Meta is the metadata of metric "meta", a set's slice as a scraped
	// family's.
	Meta []*commonpb.KeyValue
	// Sets holds every set made, as the scraper's series hold theirs.
	Sets []*pipeline.AttrSet
}

// share makes a set of kvs and keeps it.
func (s *ScrapeSim) share(kvs ...*commonpb.KeyValue) []*commonpb.KeyValue {
	a := s.Shared.Share(kvs)
	s.Sets = append(s.Sets, a)
	return a.KeyValues()
}

// NewScrapeSim makes the series of a target of the given size, their sets
// shared in shared (nil: in a table of their own).
func NewScrapeSim(series int, shared *pipeline.SharedAttrs) *ScrapeSim {
	if shared == nil {
		shared = pipeline.NewSharedAttrs()
	}
	s := &ScrapeSim{Shared: shared}
	s.ExemplarAttrs = s.share(str("trace", "x"))
	s.Meta = s.share(str("prometheus.type", "gauge"))
	odd := []*commonpb.KeyValue{
		{Key: "i", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: -3}}},
		{Key: "b", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{}}},
		{Key: "d", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: math.NaN()}}},
		{Key: "y", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte{0, 255}}}},
		{Key: "a", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{{Value: &commonpb.AnyValue_IntValue{IntValue: 1}}}}}}},
		{Key: "nil-value"},
	}
	for i := range series {
		attrs := []*commonpb.KeyValue{str("cpu", fmt.Sprint(i)), str("mode", "us\"er\u00e9"), str("host", "h")}
		if i%7 == 0 {
			attrs = append(attrs, odd...)
		}
		s.Gauge = append(s.Gauge, s.share(attrs...))
		s.Hist = append(s.Hist, s.share(str("h", fmt.Sprint(i)), str("job", "j")))
		s.Summ = append(s.Summ, s.share(str("q", fmt.Sprint(i))))
		s.Exp = append(s.Exp, s.share(str("e", fmt.Sprint(i))))
	}
	s.Summ = append(s.Summ, s.Gauge[1][1:]) // a suffix: no set's
	s.Hist = append(s.Hist, s.Gauge[2])     // field 9 here, 7 in the gauge
	return s
}

var values = []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0, 1e-7, 123.456}

// Batch returns scrape n (values change with n; from scrape 2 the last
// gauge series is replaced by a new one).
func (s *ScrapeSim) Batch(n int) []*metricspb.ResourceMetrics {
	if n == 2 {
		s.Gauge[len(s.Gauge)-1] = s.share(str("cpu", "new"))
	}
	ts := uint64(1700000000000000000 + n*15e9)
	var gauge, sum []*metricspb.NumberDataPoint
	for i, a := range s.Gauge {
		v := values[(i+n)%len(values)]
		gauge = append(gauge, &metricspb.NumberDataPoint{Attributes: a, TimeUnixNano: ts, Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: v}})
		p := &metricspb.NumberDataPoint{Attributes: a, StartTimeUnixNano: 1, TimeUnixNano: ts, Value: &metricspb.NumberDataPoint_AsInt{AsInt: int64(i * n)}}
		if i%5 == 0 {
			p.Exemplars = []*metricspb.Exemplar{{FilteredAttributes: s.ExemplarAttrs, TimeUnixNano: ts, Value: &metricspb.Exemplar_AsDouble{AsDouble: v},
				TraceId: bytes.Repeat([]byte{byte(n + 1)}, 16), SpanId: bytes.Repeat([]byte{byte(i + 1)}, 8)}}
		}
		if i%11 == 0 {
			p.Flags = 1
		}
		sum = append(sum, p)
	}
	gauge = append(gauge,
		&metricspb.NumberDataPoint{Attributes: []*commonpb.KeyValue{str("fresh", fmt.Sprint(n))}, TimeUnixNano: ts, Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: float64(n)}},
		&metricspb.NumberDataPoint{TimeUnixNano: ts})
	var hist []*metricspb.HistogramDataPoint
	for i, a := range s.Hist {
		sm := float64(n * i)
		hist = append(hist, &metricspb.HistogramDataPoint{Attributes: a, TimeUnixNano: ts, Count: uint64(n), Sum: &sm,
			BucketCounts: []uint64{uint64(n), 0}, ExplicitBounds: []float64{0.5},
			Exemplars: []*metricspb.Exemplar{{FilteredAttributes: s.ExemplarAttrs, Value: &metricspb.Exemplar_AsInt{AsInt: int64(n)}}}})
	}
	var summ []*metricspb.SummaryDataPoint
	for i, a := range s.Summ {
		summ = append(summ, &metricspb.SummaryDataPoint{Attributes: a, TimeUnixNano: ts, Count: uint64(n), Sum: values[(i+n)%len(values)],
			QuantileValues: []*metricspb.SummaryDataPoint_ValueAtQuantile{{Quantile: 0.5, Value: float64(n)}, {Quantile: 1, Value: math.Inf(1)}}})
	}
	var exp []*metricspb.ExponentialHistogramDataPoint
	for _, a := range s.Exp {
		exp = append(exp, &metricspb.ExponentialHistogramDataPoint{Attributes: a, TimeUnixNano: ts, Count: uint64(n), Scale: 2,
			Positive: &metricspb.ExponentialHistogramDataPoint_Buckets{Offset: -1, BucketCounts: []uint64{uint64(n)}}})
	}
	return []*metricspb.ResourceMetrics{{
		Resource: &resourcepb.Resource{Attributes: s.share(str("service.name", "s"), str("Authorization", "Bearer t0k"))},
		ScopeMetrics: []*metricspb.ScopeMetrics{{
			Scope: &commonpb.InstrumentationScope{Name: "otelstep", Attributes: s.share(str("scope", "attr"))},
			Metrics: []*metricspb.Metric{
				{Name: "g", Unit: "1", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: gauge}}},
				{Name: "c_total", Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{DataPoints: sum, AggregationTemporality: 2, IsMonotonic: true}}},
				{Name: "h", Data: &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{DataPoints: hist, AggregationTemporality: 2}}},
				{Name: "s", Data: &metricspb.Metric_Summary{Summary: &metricspb.Summary{DataPoints: summ}}},
				{Name: "e", Data: &metricspb.Metric_ExponentialHistogram{ExponentialHistogram: &metricspb.ExponentialHistogram{DataPoints: exp}}},
				{Name: "meta", Metadata: s.Meta},
			},
		}},
	}}
}

// ShareAll makes every data point's attributes and every metric's metadata
// in rms a set's slice, shared in shared, as the scraper sends them (equal
// contents, new slices), and returns the sets: the caller holds them for
// as long as it wants them found.
func ShareAll(shared *pipeline.SharedAttrs, rms []*metricspb.ResourceMetrics) []*pipeline.AttrSet {
	var sets []*pipeline.AttrSet
	share := func(kvs *[]*commonpb.KeyValue) {
		if len(*kvs) > 0 {
			a := shared.Share(*kvs)
			sets = append(sets, a)
			*kvs = a.KeyValues()
		}
	}
	for _, rm := range rms {
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				if m == nil {
					continue
				}
				share(&m.Metadata)
				for _, p := range m.GetGauge().GetDataPoints() {
					if p != nil {
						share(&p.Attributes)
					}
				}
				for _, p := range m.GetSum().GetDataPoints() {
					if p != nil {
						share(&p.Attributes)
					}
				}
				for _, p := range m.GetHistogram().GetDataPoints() {
					if p != nil {
						share(&p.Attributes)
					}
				}
				for _, p := range m.GetExponentialHistogram().GetDataPoints() {
					if p != nil {
						share(&p.Attributes)
					}
				}
				for _, p := range m.GetSummary().GetDataPoints() {
					if p != nil {
						share(&p.Attributes)
					}
				}
			}
		}
	}
	return sets
}

// RequestOf is the export request holding b's data, its spans and log
// records unmarshalled from their records: what a test compares with
// proto.Equal against the request it encoded.
func RequestOf(b *pipeline.Batch) proto.Message {
	switch b.Signal {
	case pipeline.Traces:
		// Received spans are kept as records: as messages to compare.
		rss, err := pipeline.TracesProto(b.Traces)
		if err != nil {
			panic(err) // the decoders check every record they keep
		}
		return &coltracepb.ExportTraceServiceRequest{ResourceSpans: rss}
	case pipeline.Logs:
		rls, err := pipeline.LogsProto(b.Logs)
		if err != nil {
			panic(err)
		}
		return &collogspb.ExportLogsServiceRequest{ResourceLogs: rls}
	}
	return &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: b.Metrics}
}

// GaugeBatch returns a metrics batch of one resource (service.name svc,
// batch.id id) holding one gauge, system.cpu.time, with points data points
// valued 0, 1, ... and a cpu attribute.
func GaugeBatch(id string, points int) *pipeline.Batch {
	dps := make([]*metricspb.NumberDataPoint, points)
	for i := range dps {
		dps[i] = &metricspb.NumberDataPoint{
			TimeUnixNano: uint64(1700000000000000000 + i),
			Value:        &metricspb.NumberDataPoint_AsDouble{AsDouble: float64(i)},
			Attributes:   []*commonpb.KeyValue{str("cpu", fmt.Sprint(i%16))},
		}
	}
	return &pipeline.Batch{Signal: pipeline.Metrics, Items: points, Metrics: []*metricspb.ResourceMetrics{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "svc"), str("batch.id", id)}},
		ScopeMetrics: []*metricspb.ScopeMetrics{{
			Scope:   &commonpb.InstrumentationScope{Name: "otelstep"},
			Metrics: []*metricspb.Metric{{Name: "system.cpu.time", Unit: "s", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: dps}}}},
		}},
	}}}
}

// BatchID is the batch.id of the first resource of b that has one, or "".
func BatchID(b *pipeline.Batch) string {
	for _, rm := range b.Metrics {
		for _, kv := range rm.GetResource().GetAttributes() {
			if kv.Key == "batch.id" {
				return kv.GetValue().GetStringValue()
			}
		}
	}
	return ""
}
