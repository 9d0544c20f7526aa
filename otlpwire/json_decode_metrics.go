package otlpwire

import (
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
)

// The resource and scope messages of metrics: see json_decode_envelope.go.

var (
	resourceMetricsNames = envelopeNames{"resource", "scopeMetrics", "scope_metrics"}
	scopeMetricsNames    = envelopeNames{"scope", "metrics", "metrics"}
)

func (d *jsonDecoder) resourceMetricsMsg(m *metricspb.ResourceMetrics) error {
	return jsonEnvelope(d, &resourceMetricsNames, &m.Resource, d.resource, &m.ScopeMetrics, &d.scopeMetrics, d.scopeMetricsMsg, &m.SchemaUrl)
}

func (d *jsonDecoder) scopeMetricsMsg(m *metricspb.ScopeMetrics) error {
	return jsonEnvelope(d, &scopeMetricsNames, &m.Scope, d.scope, &m.Metrics, &d.metrics, d.metric, &m.SchemaUrl)
}

// The common metric data messages are allocated together with the oneof
// wrapper that points to them: one allocation instead of two.
type (
	jsonGaugeData struct {
		oneof metricspb.Metric_Gauge
		msg   metricspb.Gauge
	}
	jsonSumData struct {
		oneof metricspb.Metric_Sum
		msg   metricspb.Sum
	}
	jsonHistogramData struct {
		oneof metricspb.Metric_Histogram
		msg   metricspb.Histogram
	}
)

// Fields of Metric; gauge through summary form the data oneof.
const (
	mName = iota
	mDescription
	mUnit
	mGauge
	mSum
	mHistogram
	mExponentialHistogram
	mSummary
	mMetadata
	mOneof = 1<<mGauge | 1<<mSum | 1<<mHistogram | 1<<mExponentialHistogram | 1<<mSummary
)

func metricField(k []byte) (int, string) {
	switch string(k) {
	case "name":
		return mName, "name"
	case "description":
		return mDescription, "description"
	case "unit":
		return mUnit, "unit"
	case "gauge":
		return mGauge, "gauge"
	case "sum":
		return mSum, "sum"
	case "histogram":
		return mHistogram, "histogram"
	case "exponentialHistogram", "exponential_histogram":
		return mExponentialHistogram, "exponentialHistogram"
	case "summary":
		return mSummary, "summary"
	case "metadata":
		return mMetadata, "metadata"
	}
	return -1, ""
}

func (d *jsonDecoder) metric(m *metricspb.Metric) error {
	return d.message(metricField, mOneof, func(f int) (err error) {
		switch f {
		case mName:
			m.Name, err = d.str()
		case mDescription:
			m.Description, err = d.str()
		case mUnit:
			m.Unit, err = d.str()
		case mGauge:
			x := d.gauges.new(d)
			g := &x.msg
			x.oneof.Gauge = g
			m.Data = &x.oneof
			err = d.message(dataPointsField, 0, func(int) (err error) {
				g.DataPoints, err = jsonList(d, &d.numberPoints, d.numberPoint)
				return err
			})
		case mSum:
			x := d.sums.new(d)
			x.oneof.Sum = &x.msg
			m.Data = &x.oneof
			err = d.sum(&x.msg)
		case mHistogram:
			x := d.histograms.new(d)
			h := &x.msg
			x.oneof.Histogram = h
			m.Data = &x.oneof
			err = d.message(histogramField, 0, func(f int) (err error) {
				switch f {
				case hDataPoints:
					h.DataPoints, err = jsonList(d, &d.histPoints, d.histogramPoint)
				case hAggregationTemporality:
					h.AggregationTemporality, err = d.temporality()
				}
				return err
			})
		case mExponentialHistogram:
			h := &metricspb.ExponentialHistogram{}
			m.Data = &metricspb.Metric_ExponentialHistogram{ExponentialHistogram: h}
			err = d.message(histogramField, 0, func(f int) (err error) {
				switch f {
				case hDataPoints:
					h.DataPoints, err = jsonList(d, &d.expHistPoints, d.expHistogramPoint)
				case hAggregationTemporality:
					h.AggregationTemporality, err = d.temporality()
				}
				return err
			})
		case mSummary:
			s := &metricspb.Summary{}
			m.Data = &metricspb.Metric_Summary{Summary: s}
			err = d.message(dataPointsField, 0, func(int) (err error) {
				s.DataPoints, err = jsonList(d, &d.summaryPoints, d.summaryPoint)
				return err
			})
		case mMetadata:
			m.Metadata, err = d.attributes()
		}
		return err
	})
}

// dataPointsField indexes Gauge and Summary, whose only field is dataPoints.
func dataPointsField(k []byte) (int, string) {
	if s := string(k); s == "dataPoints" || s == "data_points" {
		return 0, "dataPoints"
	}
	return -1, ""
}

// Fields of Histogram and ExponentialHistogram, and of Sum (which adds
// isMonotonic).
const (
	hDataPoints = iota
	hAggregationTemporality
	hIsMonotonic
)

func histogramField(k []byte) (int, string) {
	switch string(k) {
	case "dataPoints", "data_points":
		return hDataPoints, "dataPoints"
	case "aggregationTemporality", "aggregation_temporality":
		return hAggregationTemporality, "aggregationTemporality"
	}
	return -1, ""
}

func sumField(k []byte) (int, string) {
	if s := string(k); s == "isMonotonic" || s == "is_monotonic" {
		return hIsMonotonic, "isMonotonic"
	}
	return histogramField(k)
}

func (d *jsonDecoder) sum(s *metricspb.Sum) error {
	return d.message(sumField, 0, func(f int) (err error) {
		switch f {
		case hDataPoints:
			s.DataPoints, err = jsonList(d, &d.numberPoints, d.numberPoint)
		case hAggregationTemporality:
			s.AggregationTemporality, err = d.temporality()
		case hIsMonotonic:
			s.IsMonotonic, err = d.boolValue()
		}
		return err
	})
}

func (d *jsonDecoder) temporality() (metricspb.AggregationTemporality, error) {
	v, err := d.enumValue(metricspb.AggregationTemporality_value)
	return metricspb.AggregationTemporality(v), err
}

// Fields of NumberDataPoint; asDouble and asInt form the value oneof.
const (
	ndpAttributes = iota
	ndpStartTimeUnixNano
	ndpTimeUnixNano
	ndpAsDouble
	ndpAsInt
	ndpExemplars
	ndpFlags
	ndpOneof = 1<<ndpAsDouble | 1<<ndpAsInt
)

func numberPointField(k []byte) (int, string) {
	switch string(k) {
	case "attributes":
		return ndpAttributes, "attributes"
	case "startTimeUnixNano", "start_time_unix_nano":
		return ndpStartTimeUnixNano, "startTimeUnixNano"
	case "timeUnixNano", "time_unix_nano":
		return ndpTimeUnixNano, "timeUnixNano"
	case "asDouble", "as_double":
		return ndpAsDouble, "asDouble"
	case "asInt", "as_int":
		return ndpAsInt, "asInt"
	case "exemplars":
		return ndpExemplars, "exemplars"
	case "flags":
		return ndpFlags, "flags"
	}
	return -1, ""
}

func (d *jsonDecoder) numberPoint(p *metricspb.NumberDataPoint) error {
	return d.message(numberPointField, ndpOneof, func(f int) (err error) {
		switch f {
		case ndpAttributes:
			p.Attributes, err = d.attributes()
		case ndpStartTimeUnixNano:
			p.StartTimeUnixNano, err = d.uint64Value()
		case ndpTimeUnixNano:
			p.TimeUnixNano, err = d.uint64Value()
		case ndpAsDouble:
			w := d.asDoubles.new(d)
			w.AsDouble, err = d.doubleValue()
			p.Value = w
		case ndpAsInt:
			w := &metricspb.NumberDataPoint_AsInt{}
			w.AsInt, err = d.int64Value()
			p.Value = w
		case ndpExemplars:
			p.Exemplars, err = jsonList(d, &d.exemplars, d.exemplar)
		case ndpFlags:
			p.Flags, err = d.uint32Value()
		}
		return err
	})
}

// Fields of HistogramDataPoint.
const (
	hdpAttributes = iota
	hdpStartTimeUnixNano
	hdpTimeUnixNano
	hdpCount
	hdpSum
	hdpBucketCounts
	hdpExplicitBounds
	hdpExemplars
	hdpFlags
	hdpMin
	hdpMax
)

func histogramPointField(k []byte) (int, string) {
	switch string(k) {
	case "attributes":
		return hdpAttributes, "attributes"
	case "startTimeUnixNano", "start_time_unix_nano":
		return hdpStartTimeUnixNano, "startTimeUnixNano"
	case "timeUnixNano", "time_unix_nano":
		return hdpTimeUnixNano, "timeUnixNano"
	case "count":
		return hdpCount, "count"
	case "sum":
		return hdpSum, "sum"
	case "bucketCounts", "bucket_counts":
		return hdpBucketCounts, "bucketCounts"
	case "explicitBounds", "explicit_bounds":
		return hdpExplicitBounds, "explicitBounds"
	case "exemplars":
		return hdpExemplars, "exemplars"
	case "flags":
		return hdpFlags, "flags"
	case "min":
		return hdpMin, "min"
	case "max":
		return hdpMax, "max"
	}
	return -1, ""
}

func (d *jsonDecoder) histogramPoint(p *metricspb.HistogramDataPoint) error {
	return d.message(histogramPointField, 0, func(f int) (err error) {
		switch f {
		case hdpAttributes:
			p.Attributes, err = d.attributes()
		case hdpStartTimeUnixNano:
			p.StartTimeUnixNano, err = d.uint64Value()
		case hdpTimeUnixNano:
			p.TimeUnixNano, err = d.uint64Value()
		case hdpCount:
			p.Count, err = d.uint64Value()
		case hdpSum:
			p.Sum, err = d.optionalDouble()
		case hdpBucketCounts:
			p.BucketCounts, err = d.uint64s()
		case hdpExplicitBounds:
			p.ExplicitBounds, err = scalars(d, &d.f64s, &d.f64Lists, d.doubleValue)
		case hdpExemplars:
			p.Exemplars, err = jsonList(d, &d.exemplars, d.exemplar)
		case hdpFlags:
			p.Flags, err = d.uint32Value()
		case hdpMin:
			p.Min, err = d.optionalDouble()
		case hdpMax:
			p.Max, err = d.optionalDouble()
		}
		return err
	})
}

// optionalDouble reads a proto3 optional double: present (even when zero)
// unless null, which message handles before calling.
func (d *jsonDecoder) optionalDouble() (*float64, error) {
	v, err := d.doubleValue()
	if err != nil {
		return nil, err
	}
	return &v, nil
}

func (d *jsonDecoder) uint64s() ([]uint64, error) {
	return scalars(d, &d.u64s, &d.u64Lists, d.uint64Value)
}

// Fields of ExponentialHistogramDataPoint.
const (
	ehAttributes = iota
	ehStartTimeUnixNano
	ehTimeUnixNano
	ehCount
	ehSum
	ehScale
	ehZeroCount
	ehPositive
	ehNegative
	ehFlags
	ehExemplars
	ehMin
	ehMax
	ehZeroThreshold
)

func expHistogramPointField(k []byte) (int, string) {
	switch string(k) {
	case "attributes":
		return ehAttributes, "attributes"
	case "startTimeUnixNano", "start_time_unix_nano":
		return ehStartTimeUnixNano, "startTimeUnixNano"
	case "timeUnixNano", "time_unix_nano":
		return ehTimeUnixNano, "timeUnixNano"
	case "count":
		return ehCount, "count"
	case "sum":
		return ehSum, "sum"
	case "scale":
		return ehScale, "scale"
	case "zeroCount", "zero_count":
		return ehZeroCount, "zeroCount"
	case "positive":
		return ehPositive, "positive"
	case "negative":
		return ehNegative, "negative"
	case "flags":
		return ehFlags, "flags"
	case "exemplars":
		return ehExemplars, "exemplars"
	case "min":
		return ehMin, "min"
	case "max":
		return ehMax, "max"
	case "zeroThreshold", "zero_threshold":
		return ehZeroThreshold, "zeroThreshold"
	}
	return -1, ""
}

func (d *jsonDecoder) expHistogramPoint(p *metricspb.ExponentialHistogramDataPoint) error {
	return d.message(expHistogramPointField, 0, func(f int) (err error) {
		switch f {
		case ehAttributes:
			p.Attributes, err = d.attributes()
		case ehStartTimeUnixNano:
			p.StartTimeUnixNano, err = d.uint64Value()
		case ehTimeUnixNano:
			p.TimeUnixNano, err = d.uint64Value()
		case ehCount:
			p.Count, err = d.uint64Value()
		case ehSum:
			p.Sum, err = d.optionalDouble()
		case ehScale:
			p.Scale, err = d.int32Value()
		case ehZeroCount:
			p.ZeroCount, err = d.uint64Value()
		case ehPositive:
			p.Positive, err = d.buckets()
		case ehNegative:
			p.Negative, err = d.buckets()
		case ehFlags:
			p.Flags, err = d.uint32Value()
		case ehExemplars:
			p.Exemplars, err = jsonList(d, &d.exemplars, d.exemplar)
		case ehMin:
			p.Min, err = d.optionalDouble()
		case ehMax:
			p.Max, err = d.optionalDouble()
		case ehZeroThreshold:
			p.ZeroThreshold, err = d.doubleValue()
		}
		return err
	})
}

// Fields of ExponentialHistogramDataPoint.Buckets.
const (
	bkOffset = iota
	bkBucketCounts
)

func bucketsField(k []byte) (int, string) {
	switch string(k) {
	case "offset":
		return bkOffset, "offset"
	case "bucketCounts", "bucket_counts":
		return bkBucketCounts, "bucketCounts"
	}
	return -1, ""
}

func (d *jsonDecoder) buckets() (*metricspb.ExponentialHistogramDataPoint_Buckets, error) {
	b := &metricspb.ExponentialHistogramDataPoint_Buckets{}
	return b, d.message(bucketsField, 0, func(f int) (err error) {
		switch f {
		case bkOffset:
			b.Offset, err = d.int32Value()
		case bkBucketCounts:
			b.BucketCounts, err = d.uint64s()
		}
		return err
	})
}

// Fields of SummaryDataPoint.
const (
	sdpAttributes = iota
	sdpStartTimeUnixNano
	sdpTimeUnixNano
	sdpCount
	sdpSum
	sdpQuantileValues
	sdpFlags
)

func summaryPointField(k []byte) (int, string) {
	switch string(k) {
	case "attributes":
		return sdpAttributes, "attributes"
	case "startTimeUnixNano", "start_time_unix_nano":
		return sdpStartTimeUnixNano, "startTimeUnixNano"
	case "timeUnixNano", "time_unix_nano":
		return sdpTimeUnixNano, "timeUnixNano"
	case "count":
		return sdpCount, "count"
	case "sum":
		return sdpSum, "sum"
	case "quantileValues", "quantile_values":
		return sdpQuantileValues, "quantileValues"
	case "flags":
		return sdpFlags, "flags"
	}
	return -1, ""
}

func (d *jsonDecoder) summaryPoint(p *metricspb.SummaryDataPoint) error {
	return d.message(summaryPointField, 0, func(f int) (err error) {
		switch f {
		case sdpAttributes:
			p.Attributes, err = d.attributes()
		case sdpStartTimeUnixNano:
			p.StartTimeUnixNano, err = d.uint64Value()
		case sdpTimeUnixNano:
			p.TimeUnixNano, err = d.uint64Value()
		case sdpCount:
			p.Count, err = d.uint64Value()
		case sdpSum:
			p.Sum, err = d.doubleValue()
		case sdpQuantileValues:
			p.QuantileValues, err = jsonList(d, &d.quantiles, d.quantile)
		case sdpFlags:
			p.Flags, err = d.uint32Value()
		}
		return err
	})
}

// Fields of SummaryDataPoint.ValueAtQuantile.
const (
	qQuantile = iota
	qValue
)

func quantileField(k []byte) (int, string) {
	switch string(k) {
	case "quantile":
		return qQuantile, "quantile"
	case "value":
		return qValue, "value"
	}
	return -1, ""
}

func (d *jsonDecoder) quantile(q *metricspb.SummaryDataPoint_ValueAtQuantile) error {
	return d.message(quantileField, 0, func(f int) (err error) {
		switch f {
		case qQuantile:
			q.Quantile, err = d.doubleValue()
		case qValue:
			q.Value, err = d.doubleValue()
		}
		return err
	})
}

// Fields of Exemplar; asDouble and asInt form the value oneof.
const (
	exFilteredAttributes = iota
	exTimeUnixNano
	exAsDouble
	exAsInt
	exSpanID
	exTraceID
	exOneof = 1<<exAsDouble | 1<<exAsInt
)

func exemplarField(k []byte) (int, string) {
	switch string(k) {
	case "filteredAttributes", "filtered_attributes":
		return exFilteredAttributes, "filteredAttributes"
	case "timeUnixNano", "time_unix_nano":
		return exTimeUnixNano, "timeUnixNano"
	case "asDouble", "as_double":
		return exAsDouble, "asDouble"
	case "asInt", "as_int":
		return exAsInt, "asInt"
	case "spanId", "span_id":
		return exSpanID, "spanId"
	case "traceId", "trace_id":
		return exTraceID, "traceId"
	}
	return -1, ""
}

func (d *jsonDecoder) exemplar(e *metricspb.Exemplar) error {
	return d.message(exemplarField, exOneof, func(f int) (err error) {
		switch f {
		case exFilteredAttributes:
			e.FilteredAttributes, err = d.attributes()
		case exTimeUnixNano:
			e.TimeUnixNano, err = d.uint64Value()
		case exAsDouble:
			w := &metricspb.Exemplar_AsDouble{}
			w.AsDouble, err = d.doubleValue()
			e.Value = w
		case exAsInt:
			w := &metricspb.Exemplar_AsInt{}
			w.AsInt, err = d.int64Value()
			e.Value = w
		case exSpanID:
			e.SpanId, err = d.idValue(SpanIDSize)
		case exTraceID:
			e.TraceId, err = d.idValue(TraceIDSize)
		}
		return err
	})
}
