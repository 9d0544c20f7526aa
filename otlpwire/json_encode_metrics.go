package otlpwire

import (
	"strconv"

	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
)

func appendResourceMetrics(b []byte, rm *metricspb.ResourceMetrics, skip []string, pw *pointWriter) []byte {
	b = append(b, '{')
	if rm == nil {
		return append(b, '}')
	}
	first := true
	if rm.Resource != nil {
		b = key(b, &first, "resource")
		b = appendResource(b, rm.Resource, skip)
	}
	b = fieldList(b, &first, "scopeMetrics", rm.ScopeMetrics, func(b []byte, sm *metricspb.ScopeMetrics) []byte {
		return appendScopeMetrics(b, sm, pw)
	})
	b = fieldString(b, &first, "schemaUrl", rm.SchemaUrl)
	return append(b, '}')
}

func appendScopeMetrics(b []byte, sm *metricspb.ScopeMetrics, pw *pointWriter) []byte {
	b = append(b, '{')
	if sm == nil {
		return append(b, '}')
	}
	first := true
	if sm.Scope != nil {
		b = key(b, &first, "scope")
		b = appendScope(b, sm.Scope)
	}
	b = fieldList(b, &first, "metrics", sm.Metrics, func(b []byte, m *metricspb.Metric) []byte {
		return appendMetric(pw.maybeFlush(b), m, pw)
	})
	b = fieldString(b, &first, "schemaUrl", sm.SchemaUrl)
	return append(b, '}')
}

// appendMetric writes one metric; c (nil for none) caches shared point
// attributes.
func appendMetric(b []byte, m *metricspb.Metric, pw *pointWriter) []byte {
	b = append(b, '{')
	if m == nil {
		return append(b, '}')
	}
	first := true
	b = fieldString(b, &first, "name", m.Name)
	b = fieldString(b, &first, "description", m.Description)
	b = fieldString(b, &first, "unit", m.Unit)
	switch d := m.Data.(type) {
	case *metricspb.Metric_Gauge:
		b = key(b, &first, "gauge")
		b = append(b, '{')
		if d.Gauge != nil && len(d.Gauge.DataPoints) > 0 {
			b = append(b, `"dataPoints":`...)
			b = appendNumberDataPoints(b, d.Gauge.DataPoints, pw)
		}
		b = append(b, '}')
	case *metricspb.Metric_Sum:
		b = key(b, &first, "sum")
		b = append(b, '{')
		if s := d.Sum; s != nil {
			f := true
			if len(s.DataPoints) > 0 {
				b = key(b, &f, "dataPoints")
				b = appendNumberDataPoints(b, s.DataPoints, pw)
			}
			b = fieldInt32(b, &f, "aggregationTemporality", int32(s.AggregationTemporality))
			b = fieldBool(b, &f, "isMonotonic", s.IsMonotonic)
		}
		b = append(b, '}')
	case *metricspb.Metric_Histogram:
		b = key(b, &first, "histogram")
		b = append(b, '{')
		if h := d.Histogram; h != nil {
			f := true
			b = fieldList(b, &f, "dataPoints", h.DataPoints, func(b []byte, p *metricspb.HistogramDataPoint) []byte {
				return appendHistogramDataPoint(b, p, pw)
			})
			b = fieldInt32(b, &f, "aggregationTemporality", int32(h.AggregationTemporality))
		}
		b = append(b, '}')
	case *metricspb.Metric_ExponentialHistogram:
		b = key(b, &first, "exponentialHistogram")
		b = append(b, '{')
		if h := d.ExponentialHistogram; h != nil {
			f := true
			b = fieldList(b, &f, "dataPoints", h.DataPoints, func(b []byte, p *metricspb.ExponentialHistogramDataPoint) []byte {
				return appendExpHistogramDataPoint(b, p, pw)
			})
			b = fieldInt32(b, &f, "aggregationTemporality", int32(h.AggregationTemporality))
		}
		b = append(b, '}')
	case *metricspb.Metric_Summary:
		b = key(b, &first, "summary")
		b = append(b, '{')
		if s := d.Summary; s != nil {
			f := true
			b = fieldList(b, &f, "dataPoints", s.DataPoints, func(b []byte, p *metricspb.SummaryDataPoint) []byte {
				return appendSummaryDataPoint(b, p, pw)
			})
		}
		b = append(b, '}')
	}
	b = fieldSharedAttrs(b, &first, "metadata", m.Metadata, pw.shared)
	return append(b, '}')
}

func appendNumberDataPoints(b []byte, ps []*metricspb.NumberDataPoint, pw *pointWriter) []byte {
	b = append(b, '[')
	for i, p := range ps {
		if i > 0 {
			b = append(pw.maybeFlush(b), ',')
		}
		b = append(b, '{')
		if p != nil {
			first := true
			b = fieldPointAttrs(b, &first, p.Attributes, pw.shared)
			b = pw.times(b, &first, p.StartTimeUnixNano, p.TimeUnixNano)
			switch v := p.Value.(type) {
			case *metricspb.NumberDataPoint_AsDouble:
				b = key(b, &first, "asDouble")
				b = appendFloat(b, v.AsDouble)
			case *metricspb.NumberDataPoint_AsInt:
				b = key(b, &first, "asInt")
				b = append(b, '"')
				b = strconv.AppendInt(b, v.AsInt, 10)
				b = append(b, '"')
			}
			b = appendExemplars(b, &first, p.Exemplars)
			b = fieldUint32(b, &first, "flags", p.Flags)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

func appendExemplars(b []byte, first *bool, es []*metricspb.Exemplar) []byte {
	if len(es) == 0 {
		return b
	}
	b = key(b, first, "exemplars")
	b = append(b, '[')
	for i, e := range es {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		if e != nil {
			f := true
			b = fieldAttrs(b, &f, "filteredAttributes", e.FilteredAttributes, nil)
			b = fieldUint64(b, &f, "timeUnixNano", e.TimeUnixNano)
			switch v := e.Value.(type) {
			case *metricspb.Exemplar_AsDouble:
				b = key(b, &f, "asDouble")
				b = appendFloat(b, v.AsDouble)
			case *metricspb.Exemplar_AsInt:
				b = key(b, &f, "asInt")
				b = append(b, '"')
				b = strconv.AppendInt(b, v.AsInt, 10)
				b = append(b, '"')
			}
			b = fieldHex(b, &f, "spanId", e.SpanId)
			b = fieldHex(b, &f, "traceId", e.TraceId)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

func appendUint64s(b []byte, first *bool, name string, vs []uint64) []byte {
	if len(vs) == 0 {
		return b
	}
	b = key(b, first, name)
	b = append(b, '[')
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = strconv.AppendUint(b, v, 10)
		b = append(b, '"')
	}
	return append(b, ']')
}

func appendDoubles(b []byte, first *bool, name string, vs []float64) []byte {
	if len(vs) == 0 {
		return b
	}
	b = key(b, first, name)
	b = append(b, '[')
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendFloat(b, v)
	}
	return append(b, ']')
}

func appendHistogramDataPoint(b []byte, p *metricspb.HistogramDataPoint, pw *pointWriter) []byte {
	b = pw.maybeFlush(b)
	b = append(b, '{')
	if p == nil {
		return append(b, '}')
	}
	first := true
	b = fieldPointAttrs(b, &first, p.Attributes, pw.shared)
	b = pw.times(b, &first, p.StartTimeUnixNano, p.TimeUnixNano)
	b = fieldUint64(b, &first, "count", p.Count)
	b = fieldOptDouble(b, &first, "sum", p.Sum)
	b = appendUint64s(b, &first, "bucketCounts", p.BucketCounts)
	b = appendDoubles(b, &first, "explicitBounds", p.ExplicitBounds)
	b = appendExemplars(b, &first, p.Exemplars)
	b = fieldUint32(b, &first, "flags", p.Flags)
	b = fieldOptDouble(b, &first, "min", p.Min)
	b = fieldOptDouble(b, &first, "max", p.Max)
	return append(b, '}')
}

func appendBuckets(b []byte, first *bool, name string, bk *metricspb.ExponentialHistogramDataPoint_Buckets) []byte {
	if bk == nil {
		return b
	}
	b = key(b, first, name)
	b = append(b, '{')
	f := true
	b = fieldInt32(b, &f, "offset", bk.Offset)
	b = appendUint64s(b, &f, "bucketCounts", bk.BucketCounts)
	return append(b, '}')
}

func appendExpHistogramDataPoint(b []byte, p *metricspb.ExponentialHistogramDataPoint, pw *pointWriter) []byte {
	b = pw.maybeFlush(b)
	b = append(b, '{')
	if p == nil {
		return append(b, '}')
	}
	first := true
	b = fieldPointAttrs(b, &first, p.Attributes, pw.shared)
	b = pw.times(b, &first, p.StartTimeUnixNano, p.TimeUnixNano)
	b = fieldUint64(b, &first, "count", p.Count)
	b = fieldOptDouble(b, &first, "sum", p.Sum)
	b = fieldInt32(b, &first, "scale", p.Scale)
	b = fieldUint64(b, &first, "zeroCount", p.ZeroCount)
	b = appendBuckets(b, &first, "positive", p.Positive)
	b = appendBuckets(b, &first, "negative", p.Negative)
	b = fieldUint32(b, &first, "flags", p.Flags)
	b = appendExemplars(b, &first, p.Exemplars)
	b = fieldOptDouble(b, &first, "min", p.Min)
	b = fieldOptDouble(b, &first, "max", p.Max)
	b = fieldDouble(b, &first, "zeroThreshold", p.ZeroThreshold)
	return append(b, '}')
}

func appendSummaryDataPoint(b []byte, p *metricspb.SummaryDataPoint, pw *pointWriter) []byte {
	b = pw.maybeFlush(b)
	b = append(b, '{')
	if p == nil {
		return append(b, '}')
	}
	first := true
	b = fieldPointAttrs(b, &first, p.Attributes, pw.shared)
	b = pw.times(b, &first, p.StartTimeUnixNano, p.TimeUnixNano)
	b = fieldUint64(b, &first, "count", p.Count)
	b = fieldDouble(b, &first, "sum", p.Sum)
	if len(p.QuantileValues) > 0 {
		b = key(b, &first, "quantileValues")
		b = append(b, '[')
		for i, q := range p.QuantileValues {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '{')
			if q != nil {
				f := true
				b = fieldDouble(b, &f, "quantile", q.Quantile)
				b = fieldDouble(b, &f, "value", q.Value)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = fieldUint32(b, &first, "flags", p.Flags)
	return append(b, '}')
}
