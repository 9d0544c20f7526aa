package batch

import (
	"github.com/otelstep/otelstep/pipeline"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
)

// Split returns the first n (at least 1) items of b and the rest
// (nil if none), splitting a resource, a scope and a metric's points where
// needed, each with its Items. b is not modified; the pieces share unsplit
// messages with it.
func Split(b *pipeline.Batch, n int) (head, rest *pipeline.Batch) {
	head = &pipeline.Batch{Signal: b.Signal, Scraped: b.Scraped}
	rest = &pipeline.Batch{Signal: b.Signal, Scraped: b.Scraped}
	switch b.Signal {
	case pipeline.Metrics:
		head.Metrics, rest.Metrics = splitSlice(b.Metrics, n, pipeline.ResourceMetricsPoints, splitRM)
	case pipeline.Traces:
		head.Traces, rest.Traces = splitSlice(b.Traces, n, (*pipeline.ResourceSpans).Len, splitRS)
	case pipeline.Logs:
		head.Logs, rest.Logs = splitSlice(b.Logs, n, (*pipeline.ResourceLogs).Len, splitRL)
	}
	// Every item of b is in one of the two, and head holds n of them
	// unless b holds fewer.
	head.Items = min(max(n, 0), b.Items)
	rest.Items = b.Items - head.Items
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

func splitRS(rs *pipeline.ResourceSpans, k int) (*pipeline.ResourceSpans, *pipeline.ResourceSpans) {
	h := &pipeline.ResourceSpans{Resource: rs.Resource, SchemaURL: rs.SchemaURL}
	r := &pipeline.ResourceSpans{Resource: rs.Resource, SchemaURL: rs.SchemaURL}
	h.ScopeSpans, r.ScopeSpans = splitSlice(rs.ScopeSpans, k, (*pipeline.ScopeSpans).Len,
		func(ss *pipeline.ScopeSpans, k int) (*pipeline.ScopeSpans, *pipeline.ScopeSpans) {
			h := &pipeline.ScopeSpans{Scope: ss.Scope, SchemaURL: ss.SchemaURL}
			r := &pipeline.ScopeSpans{Scope: ss.Scope, SchemaURL: ss.SchemaURL}
			h.Spans, r.Spans, h.Records, r.Records = splitItems(ss.Spans, ss.Records, k)
			return h, r
		})
	return h, r
}

func splitRL(rl *pipeline.ResourceLogs, k int) (*pipeline.ResourceLogs, *pipeline.ResourceLogs) {
	h := &pipeline.ResourceLogs{Resource: rl.Resource, SchemaURL: rl.SchemaURL}
	r := &pipeline.ResourceLogs{Resource: rl.Resource, SchemaURL: rl.SchemaURL}
	h.ScopeLogs, r.ScopeLogs = splitSlice(rl.ScopeLogs, k, (*pipeline.ScopeLogs).Len,
		func(sl *pipeline.ScopeLogs, k int) (*pipeline.ScopeLogs, *pipeline.ScopeLogs) {
			h := &pipeline.ScopeLogs{Scope: sl.Scope, SchemaURL: sl.SchemaURL}
			r := &pipeline.ScopeLogs{Scope: sl.Scope, SchemaURL: sl.SchemaURL}
			h.LogRecords, r.LogRecords, h.Records, r.Records = splitItems(sl.LogRecords, sl.Records, k)
			return h, r
		})
	return h, r
}

// splitItems splits the first k items of a scope (its messages msgs, then
// its records recs) from the rest.
func splitItems[T any](msgs []T, recs pipeline.Records, k int) (hm, rm []T, hr, rr pipeline.Records) {
	if k <= len(msgs) {
		return msgs[:k:k], msgs[k:], nil, recs
	}
	hr, rr = recs.Split(k - len(msgs))
	return msgs, nil, hr, rr
}
