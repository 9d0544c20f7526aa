package otlpin

import (
	"github.com/otelstep/otelstep/pipeline"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
)

// dropEmpty drops from b the scopes that hold no items (data points, spans,
// log records) and then the resources left with no scope, so that no sink
// writes a resource of nothing (a JSONL line of no records). The receiver
// calls it on each request it decoded; a request left with no resource is
// answered with success and passed on to nobody. A metric with
// no data points, in a scope with others that have some, is kept. b's
// slices are filtered in place: b must be the caller's alone.
func dropEmpty(b *pipeline.Batch) {
	switch b.Signal {
	case pipeline.Metrics:
		b.Metrics = keepIf(b.Metrics, func(rm *metricspb.ResourceMetrics) bool {
			rm.ScopeMetrics = keepIf(rm.ScopeMetrics, scopeMetricsHasPoints)
			return len(rm.ScopeMetrics) > 0
		})
	case pipeline.Traces:
		b.Traces = keepIf(b.Traces, func(rs *pipeline.ResourceSpans) bool {
			rs.ScopeSpans = keepIf(rs.ScopeSpans, func(ss *pipeline.ScopeSpans) bool {
				return len(ss.Spans) > 0 || !ss.Records.Empty()
			})
			return len(rs.ScopeSpans) > 0
		})
	case pipeline.Logs:
		b.Logs = keepIf(b.Logs, func(rl *pipeline.ResourceLogs) bool {
			rl.ScopeLogs = keepIf(rl.ScopeLogs, func(sl *pipeline.ScopeLogs) bool {
				return len(sl.LogRecords) > 0 || !sl.Records.Empty()
			})
			return len(rl.ScopeLogs) > 0
		})
	}
}

// keepIf returns the elements of s for which ok is true, in order, in s's
// own array (s itself when ok holds for all, so nothing is written then),
// the dropped ones' slots past the end zeroed. ok is called once per
// element.
func keepIf[T any](s []T, ok func(T) bool) []T {
	for i, x := range s {
		if ok(x) {
			continue
		}
		out := s[:i]
		for _, y := range s[i+1:] {
			if ok(y) {
				out = append(out, y)
			}
		}
		clear(s[len(out):])
		return out
	}
	return s
}

func scopeMetricsHasPoints(sm *metricspb.ScopeMetrics) bool {
	for _, m := range sm.GetMetrics() {
		if pipeline.MetricPoints(m) > 0 {
			return true
		}
	}
	return false
}
