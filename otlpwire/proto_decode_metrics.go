package otlpwire

import (
	"encoding/binary"
	"math"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/encoding/protowire"
)

// ExportMetricsServiceRequest and everything under it; see proto_decode.go.
// Depths: request 1, ResourceMetrics 2, Resource and ScopeMetrics 3, Scope
// and Metric 4, Gauge, Sum, Histogram, ExponentialHistogram and Summary 5,
// data points 6, their attributes, exemplars, buckets and quantiles 7,
// exemplars' attributes 8.

var metricsRequest = requestShape[metricspb.ResourceMetrics]{
	fields:    resourceMetricsRequestFields,
	resources: func(d *decoder) *list[metricspb.ResourceMetrics] { return &d.rms },
	resource:  (*decoder).resourceMetrics,
}

func (d *decoder) metrics() ([]*metricspb.ResourceMetrics, *DecodeError) {
	return metricsRequest.decode(d)
}

var resourceMetricsShape = envelopeShape[resourcepb.Resource, metricspb.ScopeMetrics]{
	fields: resourceMetricsFields,
	head:   (*decoder).resourceField,
	items:  func(d *decoder) *list[metricspb.ScopeMetrics] { return &d.sms },
	item:   (*decoder).scopeMetrics,
}

func (d *decoder) resourceMetrics(m *metricspb.ResourceMetrics, p, end int) (e *DecodeError) {
	m.ScopeMetrics, e = resourceMetricsShape.decode(d, p, end, &m.Resource, m.ScopeMetrics, &m.SchemaUrl)
	return e
}

var scopeMetricsShape = envelopeShape[commonpb.InstrumentationScope, metricspb.Metric]{
	fields: scopeMetricsFields,
	head:   (*decoder).scopeField,
	items:  func(d *decoder) *list[metricspb.Metric] { return &d.mets },
	item:   (*decoder).metric,
}

func (d *decoder) scopeMetrics(m *metricspb.ScopeMetrics, p, end int) (e *DecodeError) {
	m.Metrics, e = scopeMetricsShape.decode(d, p, end, &m.Scope, m.Metrics, &m.SchemaUrl)
	return e
}

// metric decodes a Metric. A data member merges into a current member of
// the same kind and replaces one of another kind, as in proto.Unmarshal.
func (d *decoder) metric(m *metricspb.Metric, p, end int) *DecodeError {
	kvMark := d.kvs.mark()
	for p < end {
		tag, q := uint64(d.b[p]), p+1
		var e *DecodeError
		if tag-8 >= 0x80-8 { // not a one-byte tag (field 1 to 15)
			if tag, q, e = d.tagSlow(p, end); e != nil {
				return e
			}
		}
		switch tag {
		case 1<<3 | wtLen:
			if m.Name, p, e = d.str(q, end); e != nil {
				return e.in("name")
			}
		case 2<<3 | wtLen:
			if m.Description, p, e = d.str(q, end); e != nil {
				return e.in("description")
			}
		case 3<<3 | wtLen:
			if m.Unit, p, e = d.str(q, end); e != nil {
				return e.in("unit")
			}
		case 5<<3 | wtLen:
			a, z, e := d.lenPrefix(q, end)
			if e != nil {
				return e.in("gauge")
			}
			w, ok := m.Data.(*metricspb.Metric_Gauge)
			if !ok || w.Gauge == nil {
				g := d.gauges.one(p, d.n)
				g.w.Gauge = &g.m
				w = &g.w
			}
			if e := d.gauge(w.Gauge, a, z); e != nil {
				return e.in("gauge")
			}
			m.Data, p = w, z
		case 7<<3 | wtLen:
			a, z, e := d.lenPrefix(q, end)
			if e != nil {
				return e.in("sum")
			}
			w, ok := m.Data.(*metricspb.Metric_Sum)
			if !ok || w.Sum == nil {
				s := d.sums.one(p, d.n)
				s.w.Sum = &s.m
				w = &s.w
			}
			if e := d.sum(w.Sum, a, z); e != nil {
				return e.in("sum")
			}
			m.Data, p = w, z
		case 9<<3 | wtLen:
			a, z, e := d.lenPrefix(q, end)
			if e != nil {
				return e.in("histogram")
			}
			w, ok := m.Data.(*metricspb.Metric_Histogram)
			if !ok || w.Histogram == nil {
				h := d.histos.one(p, d.n)
				h.w.Histogram = &h.m
				w = &h.w
			}
			if e := d.histogram(w.Histogram, a, z); e != nil {
				return e.in("histogram")
			}
			m.Data, p = w, z
		case 10<<3 | wtLen:
			a, z, e := d.lenPrefix(q, end)
			if e != nil {
				return e.in("exponential_histogram")
			}
			w, ok := m.Data.(*metricspb.Metric_ExponentialHistogram)
			if !ok || w.ExponentialHistogram == nil {
				h := d.expHists.one(p, d.n)
				h.w.ExponentialHistogram = &h.m
				w = &h.w
			}
			if e := d.expHistogram(w.ExponentialHistogram, a, z); e != nil {
				return e.in("exponential_histogram")
			}
			m.Data, p = w, z
		case 11<<3 | wtLen:
			a, z, e := d.lenPrefix(q, end)
			if e != nil {
				return e.in("summary")
			}
			w, ok := m.Data.(*metricspb.Metric_Summary)
			if !ok || w.Summary == nil {
				w = &metricspb.Metric_Summary{Summary: &metricspb.Summary{}}
			}
			if e := d.summary(w.Summary, a, z); e != nil {
				return e.in("summary")
			}
			m.Data, p = w, z
		case 12<<3 | wtLen:
			i := len(m.Metadata) + d.kvs.count(kvMark)
			if p, e = d.attribute(q, end, 5); e != nil {
				return e.at("metadata", i)
			}
		default:
			if p, e = d.other(tag, p, q, end, metricFields); e != nil {
				return e
			}
		}
	}
	m.Metadata = d.kvs.finish(kvMark, m.Metadata, p, d.n)
	return nil
}

func (d *decoder) gauge(m *metricspb.Gauge, p, end int) *DecodeError {
	mark := d.nps.mark()
	for p < end {
		tag, q := uint64(d.b[p]), p+1
		var e *DecodeError
		if tag-8 >= 0x80-8 { // not a one-byte tag (field 1 to 15)
			if tag, q, e = d.tagSlow(p, end); e != nil {
				return e
			}
		}
		switch tag {
		case 1<<3 | wtLen:
			i := len(m.DataPoints) + d.nps.count(mark)
			if p, e = d.numberPoint(q, end); e != nil {
				return e.at("data_points", i)
			}
		default:
			if p, e = d.other(tag, p, q, end, gaugeFields); e != nil {
				return e
			}
		}
	}
	m.DataPoints = d.nps.finish(mark, m.DataPoints, p, d.n)
	return nil
}

func (d *decoder) sum(m *metricspb.Sum, p, end int) *DecodeError {
	mark := d.nps.mark()
	for p < end {
		tag, q := uint64(d.b[p]), p+1
		var e *DecodeError
		if tag-8 >= 0x80-8 { // not a one-byte tag (field 1 to 15)
			if tag, q, e = d.tagSlow(p, end); e != nil {
				return e
			}
		}
		switch tag {
		case 1<<3 | wtLen:
			i := len(m.DataPoints) + d.nps.count(mark)
			if p, e = d.numberPoint(q, end); e != nil {
				return e.at("data_points", i)
			}
		case 2<<3 | wtVarint:
			v, z, e := d.varint(q, end)
			if e != nil {
				return e.in("aggregation_temporality")
			}
			m.AggregationTemporality, p = metricspb.AggregationTemporality(int32(v)), z
		case 3<<3 | wtVarint:
			v, z, e := d.varint(q, end)
			if e != nil {
				return e.in("is_monotonic")
			}
			m.IsMonotonic, p = v != 0, z
		default:
			if p, e = d.other(tag, p, q, end, sumFields); e != nil {
				return e
			}
		}
	}
	m.DataPoints = d.nps.finish(mark, m.DataPoints, p, d.n)
	return nil
}

func (d *decoder) histogram(m *metricspb.Histogram, p, end int) *DecodeError {
	mark := d.hps.mark()
	for p < end {
		tag, q := uint64(d.b[p]), p+1
		var e *DecodeError
		if tag-8 >= 0x80-8 { // not a one-byte tag (field 1 to 15)
			if tag, q, e = d.tagSlow(p, end); e != nil {
				return e
			}
		}
		switch tag {
		case 1<<3 | wtLen:
			i := len(m.DataPoints) + d.hps.count(mark)
			a, z, e := d.lenPrefix(q, end)
			if e != nil {
				return e.at("data_points", i)
			}
			dp := d.hps.new(p, d.n)
			if e := d.histogramPoint(dp, a, z); e != nil {
				return e.at("data_points", i)
			}
			d.hps.push(dp)
			p = z
		case 2<<3 | wtVarint:
			v, z, e := d.varint(q, end)
			if e != nil {
				return e.in("aggregation_temporality")
			}
			m.AggregationTemporality, p = metricspb.AggregationTemporality(int32(v)), z
		default:
			if p, e = d.other(tag, p, q, end, histogramFields); e != nil {
				return e
			}
		}
	}
	m.DataPoints = d.hps.finish(mark, m.DataPoints, p, d.n)
	return nil
}

func (d *decoder) expHistogram(m *metricspb.ExponentialHistogram, p, end int) *DecodeError {
	mark := d.ehps.mark()
	for p < end {
		tag, q := uint64(d.b[p]), p+1
		var e *DecodeError
		if tag-8 >= 0x80-8 { // not a one-byte tag (field 1 to 15)
			if tag, q, e = d.tagSlow(p, end); e != nil {
				return e
			}
		}
		switch tag {
		case 1<<3 | wtLen:
			i := len(m.DataPoints) + d.ehps.count(mark)
			a, z, e := d.lenPrefix(q, end)
			if e != nil {
				return e.at("data_points", i)
			}
			dp := d.ehps.new(p, d.n)
			if e := d.expHistogramPoint(dp, a, z); e != nil {
				return e.at("data_points", i)
			}
			d.ehps.push(dp)
			p = z
		case 2<<3 | wtVarint:
			v, z, e := d.varint(q, end)
			if e != nil {
				return e.in("aggregation_temporality")
			}
			m.AggregationTemporality, p = metricspb.AggregationTemporality(int32(v)), z
		default:
			if p, e = d.other(tag, p, q, end, histogramFields); e != nil {
				return e
			}
		}
	}
	m.DataPoints = d.ehps.finish(mark, m.DataPoints, p, d.n)
	return nil
}

func (d *decoder) summary(m *metricspb.Summary, p, end int) *DecodeError {
	mark := d.sps.mark()
	for p < end {
		tag, q := uint64(d.b[p]), p+1
		var e *DecodeError
		if tag-8 >= 0x80-8 { // not a one-byte tag (field 1 to 15)
			if tag, q, e = d.tagSlow(p, end); e != nil {
				return e
			}
		}
		switch tag {
		case 1<<3 | wtLen:
			i := len(m.DataPoints) + d.sps.count(mark)
			a, z, e := d.lenPrefix(q, end)
			if e != nil {
				return e.at("data_points", i)
			}
			dp := d.sps.new(p, d.n)
			if e := d.summaryPoint(dp, a, z); e != nil {
				return e.at("data_points", i)
			}
			d.sps.push(dp)
			p = z
		default:
			if p, e = d.other(tag, p, q, end, summaryFields); e != nil {
				return e
			}
		}
	}
	m.DataPoints = d.sps.finish(mark, m.DataPoints, p, d.n)
	return nil
}

// exemplar decodes one element of a repeated Exemplar field whose tag ended
// at q and pushes it on d.exs.
func (d *decoder) exemplar(q, end int) (int, *DecodeError) {
	a, z, e := d.lenPrefix(q, end)
	if e != nil {
		return 0, e
	}
	m := d.exs.new(q, d.n)
	if e := d.exemplarMsg(m, a, z); e != nil {
		return 0, e
	}
	d.exs.push(m)
	return z, nil
}

// numberPoint decodes one element of a repeated NumberDataPoint field whose
// tag ended at q and pushes it on d.nps.
func (d *decoder) numberPoint(q, end int) (int, *DecodeError) {
	p, end, e := d.lenPrefix(q, end)
	if e != nil {
		return 0, e
	}
	z := end
	m := d.nps.new(p, d.n)
	kvMark, exMark := d.kvs.mark(), d.exs.mark()
	for p < end {
		tag, q := uint64(d.b[p]), p+1
		var e *DecodeError
		if tag-8 >= 0x80-8 { // not a one-byte tag (field 1 to 15)
			if tag, q, e = d.tagSlow(p, end); e != nil {
				return 0, e
			}
		}
		switch tag {
		case 2<<3 | wtI64:
			if m.StartTimeUnixNano, p, e = d.fixed64(q, end); e != nil {
				return 0, e.in("start_time_unix_nano")
			}
		case 3<<3 | wtI64:
			if m.TimeUnixNano, p, e = d.fixed64(q, end); e != nil {
				return 0, e.in("time_unix_nano")
			}
		case 4<<3 | wtI64:
			v, z, e := d.fixed64(q, end)
			if e != nil {
				return 0, e.in("as_double")
			}
			w := d.npDbls.one(p, d.n)
			w.AsDouble = math.Float64frombits(v)
			m.Value, p = w, z
		case 5<<3 | wtLen:
			i := len(m.Exemplars) + d.exs.count(exMark)
			if p, e = d.exemplar(q, end); e != nil {
				return 0, e.at("exemplars", i)
			}
		case 6<<3 | wtI64:
			v, z, e := d.fixed64(q, end)
			if e != nil {
				return 0, e.in("as_int")
			}
			w := d.npInts.one(p, d.n)
			w.AsInt = int64(v)
			m.Value, p = w, z
		case 7<<3 | wtLen:
			i := len(m.Attributes) + d.kvs.count(kvMark)
			if p, e = d.attribute(q, end, 7); e != nil {
				return 0, e.at("attributes", i)
			}
		case 8<<3 | wtVarint:
			v, z, e := d.varint(q, end)
			if e != nil {
				return 0, e.in("flags")
			}
			m.Flags, p = uint32(v), z
		default:
			if p, e = d.other(tag, p, q, end, numberPointFields); e != nil {
				return 0, e
			}
		}
	}
	m.Attributes = d.kvs.finish(kvMark, m.Attributes, p, d.n)
	m.Exemplars = d.exs.finish(exMark, m.Exemplars, p, d.n)
	d.nps.push(m)
	return z, nil
}

// f64 returns a pointer to v (optional double fields).
func (d *decoder) f64(v uint64, p int) *float64 {
	f := d.f64ptrs.one(p, d.n)
	*f = math.Float64frombits(v)
	return f
}

func (d *decoder) histogramPoint(m *metricspb.HistogramDataPoint, p, end int) *DecodeError {
	kvMark, exMark := d.kvs.mark(), d.exs.mark()
	for p < end {
		tag, q := uint64(d.b[p]), p+1
		var e *DecodeError
		if tag-8 >= 0x80-8 { // not a one-byte tag (field 1 to 15)
			if tag, q, e = d.tagSlow(p, end); e != nil {
				return e
			}
		}
		switch tag {
		case 2<<3 | wtI64:
			if m.StartTimeUnixNano, p, e = d.fixed64(q, end); e != nil {
				return e.in("start_time_unix_nano")
			}
		case 3<<3 | wtI64:
			if m.TimeUnixNano, p, e = d.fixed64(q, end); e != nil {
				return e.in("time_unix_nano")
			}
		case 4<<3 | wtI64:
			if m.Count, p, e = d.fixed64(q, end); e != nil {
				return e.in("count")
			}
		case 5<<3 | wtI64:
			v, z, e := d.fixed64(q, end)
			if e != nil {
				return e.in("sum")
			}
			m.Sum, p = d.f64(v, p), z
		case 6<<3 | wtLen:
			if m.BucketCounts, p, e = d.packedFixed64(m.BucketCounts, q, end); e != nil {
				return e.in("bucket_counts")
			}
		case 6<<3 | wtI64:
			v, z, e := d.fixed64(q, end)
			if e != nil {
				return e.in("bucket_counts")
			}
			m.BucketCounts, p = append(m.BucketCounts, v), z
		case 7<<3 | wtLen:
			if m.ExplicitBounds, p, e = d.packedDouble(m.ExplicitBounds, q, end); e != nil {
				return e.in("explicit_bounds")
			}
		case 7<<3 | wtI64:
			v, z, e := d.fixed64(q, end)
			if e != nil {
				return e.in("explicit_bounds")
			}
			m.ExplicitBounds, p = append(m.ExplicitBounds, math.Float64frombits(v)), z
		case 8<<3 | wtLen:
			i := len(m.Exemplars) + d.exs.count(exMark)
			if p, e = d.exemplar(q, end); e != nil {
				return e.at("exemplars", i)
			}
		case 9<<3 | wtLen:
			i := len(m.Attributes) + d.kvs.count(kvMark)
			if p, e = d.attribute(q, end, 7); e != nil {
				return e.at("attributes", i)
			}
		case 10<<3 | wtVarint:
			v, z, e := d.varint(q, end)
			if e != nil {
				return e.in("flags")
			}
			m.Flags, p = uint32(v), z
		case 11<<3 | wtI64:
			v, z, e := d.fixed64(q, end)
			if e != nil {
				return e.in("min")
			}
			m.Min, p = d.f64(v, p), z
		case 12<<3 | wtI64:
			v, z, e := d.fixed64(q, end)
			if e != nil {
				return e.in("max")
			}
			m.Max, p = d.f64(v, p), z
		default:
			if p, e = d.other(tag, p, q, end, histogramPointFields); e != nil {
				return e
			}
		}
	}
	m.Attributes = d.kvs.finish(kvMark, m.Attributes, p, d.n)
	m.Exemplars = d.exs.finish(exMark, m.Exemplars, p, d.n)
	return nil
}

func (d *decoder) expHistogramPoint(m *metricspb.ExponentialHistogramDataPoint, p, end int) *DecodeError {
	kvMark, exMark := d.kvs.mark(), d.exs.mark()
	for p < end {
		tag, q := uint64(d.b[p]), p+1
		var e *DecodeError
		if tag-8 >= 0x80-8 { // not a one-byte tag (field 1 to 15)
			if tag, q, e = d.tagSlow(p, end); e != nil {
				return e
			}
		}
		switch tag {
		case 1<<3 | wtLen:
			i := len(m.Attributes) + d.kvs.count(kvMark)
			if p, e = d.attribute(q, end, 7); e != nil {
				return e.at("attributes", i)
			}
		case 2<<3 | wtI64:
			if m.StartTimeUnixNano, p, e = d.fixed64(q, end); e != nil {
				return e.in("start_time_unix_nano")
			}
		case 3<<3 | wtI64:
			if m.TimeUnixNano, p, e = d.fixed64(q, end); e != nil {
				return e.in("time_unix_nano")
			}
		case 4<<3 | wtI64:
			if m.Count, p, e = d.fixed64(q, end); e != nil {
				return e.in("count")
			}
		case 5<<3 | wtI64:
			v, z, e := d.fixed64(q, end)
			if e != nil {
				return e.in("sum")
			}
			m.Sum, p = d.f64(v, p), z
		case 6<<3 | wtVarint:
			v, z, e := d.varint(q, end)
			if e != nil {
				return e.in("scale")
			}
			m.Scale, p = sint32(v), z
		case 7<<3 | wtI64:
			if m.ZeroCount, p, e = d.fixed64(q, end); e != nil {
				return e.in("zero_count")
			}
		case 8<<3 | wtLen:
			if p, e = d.bucketsField(&m.Positive, q, end); e != nil {
				return e.in("positive")
			}
		case 9<<3 | wtLen:
			if p, e = d.bucketsField(&m.Negative, q, end); e != nil {
				return e.in("negative")
			}
		case 10<<3 | wtVarint:
			v, z, e := d.varint(q, end)
			if e != nil {
				return e.in("flags")
			}
			m.Flags, p = uint32(v), z
		case 11<<3 | wtLen:
			i := len(m.Exemplars) + d.exs.count(exMark)
			if p, e = d.exemplar(q, end); e != nil {
				return e.at("exemplars", i)
			}
		case 12<<3 | wtI64:
			v, z, e := d.fixed64(q, end)
			if e != nil {
				return e.in("min")
			}
			m.Min, p = d.f64(v, p), z
		case 13<<3 | wtI64:
			v, z, e := d.fixed64(q, end)
			if e != nil {
				return e.in("max")
			}
			m.Max, p = d.f64(v, p), z
		case 14<<3 | wtI64:
			v, z, e := d.fixed64(q, end)
			if e != nil {
				return e.in("zero_threshold")
			}
			m.ZeroThreshold, p = math.Float64frombits(v), z
		default:
			if p, e = d.other(tag, p, q, end, expHistogramPointFields); e != nil {
				return e
			}
		}
	}
	m.Attributes = d.kvs.finish(kvMark, m.Attributes, p, d.n)
	m.Exemplars = d.exs.finish(exMark, m.Exemplars, p, d.n)
	return nil
}

// sint32 decodes a zigzag-encoded sint32 as proto.Unmarshal does: the low
// 32 bits of the varint.
func sint32(v uint64) int32 { return int32(protowire.DecodeZigZag(v & math.MaxUint32)) }

// bucketsField decodes a positive or negative buckets field (depth 7) into
// *b, merging into buckets already there.
func (d *decoder) bucketsField(b **metricspb.ExponentialHistogramDataPoint_Buckets, q, end int) (int, *DecodeError) {
	p, end, e := d.lenPrefix(q, end)
	if e != nil {
		return 0, e
	}
	z := end
	if *b == nil {
		*b = d.buckets.one(p, d.n)
	}
	m := *b
	for p < end {
		tag, q := uint64(d.b[p]), p+1
		var e *DecodeError
		if tag-8 >= 0x80-8 { // not a one-byte tag (field 1 to 15)
			if tag, q, e = d.tagSlow(p, end); e != nil {
				return 0, e
			}
		}
		switch tag {
		case 1<<3 | wtVarint:
			v, z, e := d.varint(q, end)
			if e != nil {
				return 0, e.in("offset")
			}
			m.Offset, p = sint32(v), z
		case 2<<3 | wtLen:
			if m.BucketCounts, p, e = d.packedVarint(m.BucketCounts, q, end); e != nil {
				return 0, e.in("bucket_counts")
			}
		case 2<<3 | wtVarint:
			v, z, e := d.varint(q, end)
			if e != nil {
				return 0, e.in("bucket_counts")
			}
			m.BucketCounts, p = append(m.BucketCounts, v), z
		default:
			if p, e = d.other(tag, p, q, end, bucketsFields); e != nil {
				return 0, e
			}
		}
	}
	return z, nil
}

func (d *decoder) summaryPoint(m *metricspb.SummaryDataPoint, p, end int) *DecodeError {
	kvMark, qMark := d.kvs.mark(), d.quants.mark()
	for p < end {
		tag, q := uint64(d.b[p]), p+1
		var e *DecodeError
		if tag-8 >= 0x80-8 { // not a one-byte tag (field 1 to 15)
			if tag, q, e = d.tagSlow(p, end); e != nil {
				return e
			}
		}
		switch tag {
		case 2<<3 | wtI64:
			if m.StartTimeUnixNano, p, e = d.fixed64(q, end); e != nil {
				return e.in("start_time_unix_nano")
			}
		case 3<<3 | wtI64:
			if m.TimeUnixNano, p, e = d.fixed64(q, end); e != nil {
				return e.in("time_unix_nano")
			}
		case 4<<3 | wtI64:
			if m.Count, p, e = d.fixed64(q, end); e != nil {
				return e.in("count")
			}
		case 5<<3 | wtI64:
			v, z, e := d.fixed64(q, end)
			if e != nil {
				return e.in("sum")
			}
			m.Sum, p = math.Float64frombits(v), z
		case 6<<3 | wtLen:
			i := len(m.QuantileValues) + d.quants.count(qMark)
			a, z, e := d.lenPrefix(q, end)
			if e != nil {
				return e.at("quantile_values", i)
			}
			qv := d.quants.new(p, d.n)
			if e := d.quantile(qv, a, z); e != nil {
				return e.at("quantile_values", i)
			}
			d.quants.push(qv)
			p = z
		case 7<<3 | wtLen:
			i := len(m.Attributes) + d.kvs.count(kvMark)
			if p, e = d.attribute(q, end, 7); e != nil {
				return e.at("attributes", i)
			}
		case 8<<3 | wtVarint:
			v, z, e := d.varint(q, end)
			if e != nil {
				return e.in("flags")
			}
			m.Flags, p = uint32(v), z
		default:
			if p, e = d.other(tag, p, q, end, summaryPointFields); e != nil {
				return e
			}
		}
	}
	m.Attributes = d.kvs.finish(kvMark, m.Attributes, p, d.n)
	m.QuantileValues = d.quants.finish(qMark, m.QuantileValues, p, d.n)
	return nil
}

func (d *decoder) quantile(m *metricspb.SummaryDataPoint_ValueAtQuantile, p, end int) *DecodeError {
	for p < end {
		tag, q := uint64(d.b[p]), p+1
		var e *DecodeError
		if tag-8 >= 0x80-8 { // not a one-byte tag (field 1 to 15)
			if tag, q, e = d.tagSlow(p, end); e != nil {
				return e
			}
		}
		switch tag {
		case 1<<3 | wtI64:
			v, z, e := d.fixed64(q, end)
			if e != nil {
				return e.in("quantile")
			}
			m.Quantile, p = math.Float64frombits(v), z
		case 2<<3 | wtI64:
			v, z, e := d.fixed64(q, end)
			if e != nil {
				return e.in("value")
			}
			m.Value, p = math.Float64frombits(v), z
		default:
			if p, e = d.other(tag, p, q, end, quantileFields); e != nil {
				return e
			}
		}
	}
	return nil
}

func (d *decoder) exemplarMsg(m *metricspb.Exemplar, p, end int) *DecodeError {
	kvMark := d.kvs.mark()
	for p < end {
		tag, q := uint64(d.b[p]), p+1
		var e *DecodeError
		if tag-8 >= 0x80-8 { // not a one-byte tag (field 1 to 15)
			if tag, q, e = d.tagSlow(p, end); e != nil {
				return e
			}
		}
		switch tag {
		case 2<<3 | wtI64:
			if m.TimeUnixNano, p, e = d.fixed64(q, end); e != nil {
				return e.in("time_unix_nano")
			}
		case 3<<3 | wtI64:
			v, z, e := d.fixed64(q, end)
			if e != nil {
				return e.in("as_double")
			}
			w := d.exDbls.one(p, d.n)
			w.AsDouble = math.Float64frombits(v)
			m.Value, p = w, z
		case 4<<3 | wtLen:
			if m.SpanId, p, e = d.id(q, end, SpanIDSize); e != nil {
				return e.in("span_id")
			}
		case 5<<3 | wtLen:
			if m.TraceId, p, e = d.id(q, end, TraceIDSize); e != nil {
				return e.in("trace_id")
			}
		case 6<<3 | wtI64:
			v, z, e := d.fixed64(q, end)
			if e != nil {
				return e.in("as_int")
			}
			m.Value, p = &metricspb.Exemplar_AsInt{AsInt: int64(v)}, z
		case 7<<3 | wtLen:
			i := len(m.FilteredAttributes) + d.kvs.count(kvMark)
			if p, e = d.attribute(q, end, 8); e != nil {
				return e.at("filtered_attributes", i)
			}
		default:
			if p, e = d.other(tag, p, q, end, exemplarFields); e != nil {
				return e
			}
		}
	}
	m.FilteredAttributes = d.kvs.finish(kvMark, m.FilteredAttributes, p, d.n)
	return nil
}

// packedFixed64 appends the packed fixed64 values of the length-delimited
// field at q to dst. A length that is not a multiple of 8 is an error, as
// in proto.Unmarshal (its last element is truncated).
func (d *decoder) packedFixed64(dst []uint64, q, end int) ([]uint64, int, *DecodeError) {
	a, z, e := d.lenPrefix(q, end)
	if e != nil {
		return nil, 0, e
	}
	n := z - a
	if n%8 != 0 {
		return nil, 0, d.errf(a, "packed fixed64 length %d is not a multiple of 8", n)
	}
	if n == 0 {
		return dst, z, nil
	}
	out := d.u64s.alloc(n/8, a, d.n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(d.b[a+8*i:])
	}
	if len(dst) > 0 {
		out = append(dst, out...)
	}
	return out, z, nil
}

// packedDouble is packedFixed64 for doubles.
func (d *decoder) packedDouble(dst []float64, q, end int) ([]float64, int, *DecodeError) {
	a, z, e := d.lenPrefix(q, end)
	if e != nil {
		return nil, 0, e
	}
	n := z - a
	if n%8 != 0 {
		return nil, 0, d.errf(a, "packed double length %d is not a multiple of 8", n)
	}
	if n == 0 {
		return dst, z, nil
	}
	out := d.f64s.alloc(n/8, a, d.n)
	for i := range out {
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(d.b[a+8*i:]))
	}
	if len(dst) > 0 {
		out = append(dst, out...)
	}
	return out, z, nil
}

// packedVarint appends the packed varints of the length-delimited field at q
// to dst.
func (d *decoder) packedVarint(dst []uint64, q, end int) ([]uint64, int, *DecodeError) {
	a, z, e := d.lenPrefix(q, end)
	if e != nil {
		return nil, 0, e
	}
	if a == z {
		return dst, z, nil
	}
	// Each varint ends with the one byte of it below 0x80.
	n := 0
	for _, c := range d.b[a:z] {
		if c < 0x80 {
			n++
		}
	}
	if d.b[z-1] >= 0x80 {
		return nil, 0, d.errf(z-1, "packed varint truncated")
	}
	out := d.u64s.alloc(n, a, d.n)
	for i, p := 0, a; p < z; i++ {
		v, next, e := d.varint(p, z)
		if e != nil {
			return nil, 0, e
		}
		out[i], p = v, next
	}
	if len(dst) > 0 {
		out = append(dst, out...)
	}
	return out, z, nil
}
