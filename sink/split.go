package sink

import (
	"github.com/otelstep/otelstep/pipeline"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// SplitBatch returns the first max (at least 1) items of b and the rest
// (nil if none), splitting a resource, a scope and a metric's points where
// needed. b is not modified; the pieces share unsplit messages with it.
func SplitBatch(b *pipeline.Batch, max int) (head, rest *pipeline.Batch) {
	return splitBatch(b, max)
}

// splitBatch returns the first max items of b and the rest (nil if none).
// b is not modified; pieces share unsplit messages with it.
func splitBatch(b *pipeline.Batch, max int) (head, rest *pipeline.Batch) {
	head = &pipeline.Batch{Signal: b.Signal}
	rest = &pipeline.Batch{Signal: b.Signal}
	switch b.Signal {
	case pipeline.Metrics:
		head.Metrics, rest.Metrics = splitSlice(b.Metrics, max, pipeline.ResourceMetricsPoints, splitRM)
	case pipeline.Traces:
		head.Traces, rest.Traces = splitSlice(b.Traces, max, pipeline.ResourceSpansCount, splitRS)
	case pipeline.Logs:
		head.Logs, rest.Logs = splitSlice(b.Logs, max, pipeline.ResourceLogsCount, splitRL)
	}
	if rest.Len() == 0 {
		rest = nil
	}
	return head, rest
}

// splitSlice puts the leading elements of xs holding room items into head,
// splitting the element that straddles the boundary with split.
func splitSlice[T any](xs []T, room int, count func(T) int, split func(T, int) (T, T)) (head, rest []T) {
	for i, x := range xs {
		c := count(x)
		if c <= room {
			room -= c
			continue
		}
		if room == 0 {
			return xs[:i:i], xs[i:]
		}
		h, r := split(x, room)
		head = append(xs[:i:i], h)
		rest = append([]T{r}, xs[i+1:]...)
		return head, rest
	}
	return xs, nil
}

func splitRM(rm *metricspb.ResourceMetrics, k int) (*metricspb.ResourceMetrics, *metricspb.ResourceMetrics) {
	h := &metricspb.ResourceMetrics{Resource: rm.Resource, SchemaUrl: rm.SchemaUrl}
	r := &metricspb.ResourceMetrics{Resource: rm.Resource, SchemaUrl: rm.SchemaUrl}
	h.ScopeMetrics, r.ScopeMetrics = splitSlice(rm.ScopeMetrics, k, pipeline.ScopeMetricsPoints, splitSM)
	return h, r
}

func splitSM(sm *metricspb.ScopeMetrics, k int) (*metricspb.ScopeMetrics, *metricspb.ScopeMetrics) {
	h := &metricspb.ScopeMetrics{Scope: sm.Scope, SchemaUrl: sm.SchemaUrl}
	r := &metricspb.ScopeMetrics{Scope: sm.Scope, SchemaUrl: sm.SchemaUrl}
	h.Metrics, r.Metrics = splitSlice(sm.Metrics, k, pipeline.MetricPoints, splitMetric)
	return h, r
}

func splitMetric(m *metricspb.Metric, k int) (*metricspb.Metric, *metricspb.Metric) {
	h := &metricspb.Metric{Name: m.Name, Description: m.Description, Unit: m.Unit, Metadata: m.Metadata}
	r := &metricspb.Metric{Name: m.Name, Description: m.Description, Unit: m.Unit, Metadata: m.Metadata}
	switch d := m.Data.(type) {
	case *metricspb.Metric_Gauge:
		p := d.Gauge.DataPoints
		h.Data = &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: p[:k:k]}}
		r.Data = &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: p[k:]}}
	case *metricspb.Metric_Sum:
		p := d.Sum.DataPoints
		h.Data = &metricspb.Metric_Sum{Sum: &metricspb.Sum{DataPoints: p[:k:k], AggregationTemporality: d.Sum.AggregationTemporality, IsMonotonic: d.Sum.IsMonotonic}}
		r.Data = &metricspb.Metric_Sum{Sum: &metricspb.Sum{DataPoints: p[k:], AggregationTemporality: d.Sum.AggregationTemporality, IsMonotonic: d.Sum.IsMonotonic}}
	case *metricspb.Metric_Histogram:
		p := d.Histogram.DataPoints
		h.Data = &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{DataPoints: p[:k:k], AggregationTemporality: d.Histogram.AggregationTemporality}}
		r.Data = &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{DataPoints: p[k:], AggregationTemporality: d.Histogram.AggregationTemporality}}
	case *metricspb.Metric_ExponentialHistogram:
		p := d.ExponentialHistogram.DataPoints
		t := d.ExponentialHistogram.AggregationTemporality
		h.Data = &metricspb.Metric_ExponentialHistogram{ExponentialHistogram: &metricspb.ExponentialHistogram{DataPoints: p[:k:k], AggregationTemporality: t}}
		r.Data = &metricspb.Metric_ExponentialHistogram{ExponentialHistogram: &metricspb.ExponentialHistogram{DataPoints: p[k:], AggregationTemporality: t}}
	case *metricspb.Metric_Summary:
		p := d.Summary.DataPoints
		h.Data = &metricspb.Metric_Summary{Summary: &metricspb.Summary{DataPoints: p[:k:k]}}
		r.Data = &metricspb.Metric_Summary{Summary: &metricspb.Summary{DataPoints: p[k:]}}
	default:
		return m, r
	}
	return h, r
}

func splitRS(rs *tracepb.ResourceSpans, k int) (*tracepb.ResourceSpans, *tracepb.ResourceSpans) {
	h := &tracepb.ResourceSpans{Resource: rs.Resource, SchemaUrl: rs.SchemaUrl}
	r := &tracepb.ResourceSpans{Resource: rs.Resource, SchemaUrl: rs.SchemaUrl}
	h.ScopeSpans, r.ScopeSpans = splitSlice(rs.ScopeSpans, k,
		pipeline.ScopeSpansCount,
		func(ss *tracepb.ScopeSpans, k int) (*tracepb.ScopeSpans, *tracepb.ScopeSpans) {
			h := &tracepb.ScopeSpans{Scope: ss.Scope, SchemaUrl: ss.SchemaUrl}
			r := &tracepb.ScopeSpans{Scope: ss.Scope, SchemaUrl: ss.SchemaUrl}
			h.Spans, r.Spans = splitItems(ss, ss.Spans, h, r, k)
			return h, r
		})
	return h, r
}

func splitRL(rl *logspb.ResourceLogs, k int) (*logspb.ResourceLogs, *logspb.ResourceLogs) {
	h := &logspb.ResourceLogs{Resource: rl.Resource, SchemaUrl: rl.SchemaUrl}
	r := &logspb.ResourceLogs{Resource: rl.Resource, SchemaUrl: rl.SchemaUrl}
	h.ScopeLogs, r.ScopeLogs = splitSlice(rl.ScopeLogs, k,
		pipeline.ScopeLogsCount,
		func(sl *logspb.ScopeLogs, k int) (*logspb.ScopeLogs, *logspb.ScopeLogs) {
			h := &logspb.ScopeLogs{Scope: sl.Scope, SchemaUrl: sl.SchemaUrl}
			r := &logspb.ScopeLogs{Scope: sl.Scope, SchemaUrl: sl.SchemaUrl}
			h.LogRecords, r.LogRecords = splitItems(sl, sl.LogRecords, h, r, k)
			return h, r
		})
	return h, r
}

// splitItems splits the first k items of scope message s (its messages,
// then its received records) into head h and the rest into r: it returns
// the two message slices and sets the records of each.
func splitItems[S pipeline.Scope, T any](s S, msgs []T, h, r S, k int) (hm, rm []T) {
	recs := pipeline.Records(s)
	if k <= len(msgs) {
		pipeline.SetRecords(r, recs)
		return msgs[:k:k], msgs[k:]
	}
	a, b := pipeline.SplitRecords(recs, k-len(msgs))
	pipeline.SetRecords(h, a)
	pipeline.SetRecords(r, b)
	return msgs, nil
}
