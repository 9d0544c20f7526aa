// Package pipeline holds the few types every stage shares: the signal kinds,
// the batch that flows from receivers (scraper, otlpin) through processors
// (resource) to the sinks, with the spans and log records it carries as
// received (items.go), the leases on its memory (lease.go) and the acks of
// the senders waiting until its items are written (ack.go), the Consumer
// interface that links the stages, and the series' attribute sets
// whose encodings the sinks store (attrset.go: AttrSet, SharedAttrs).
//
// Data flows one way: a receiver calls Consume on the first processor, which
// calls Consume on the next, and the last one is the sink fan-out. A batch is
// owned by the callee once Consume returns nil: the caller must not touch it
// again. Processors may mutate a batch in place before passing it on. A
// batch's Leases (lease.go) let its producer have the memory back once the
// last holder is done with it; a holder that keeps any part of a batch
// (a string of it as a map key, say) past that must copy it.
package pipeline

import (
	"context"
	"errors"

	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
)

// Signal is one of the three OTLP signals.
type Signal uint8

const (
	Metrics Signal = iota
	Traces
	Logs
)

// String returns the signal's name as used in config pipeline ids and in the
// OTLP/HTTP paths (/v1/metrics, /v1/traces, /v1/logs).
func (s Signal) String() string {
	switch s {
	case Metrics:
		return "metrics"
	case Traces:
		return "traces"
	case Logs:
		return "logs"
	}
	return "unknown"
}

// ParseSignal is the inverse of Signal.String.
func ParseSignal(s string) (Signal, bool) {
	switch s {
	case "metrics":
		return Metrics, true
	case "traces":
		return Traces, true
	case "logs":
		return Logs, true
	}
	return 0, false
}

// SignalOfPath is the signal of an OTLP/HTTP path (/v1/metrics, /v1/traces,
// /v1/logs).
func SignalOfPath(path string) (Signal, bool) {
	switch path {
	case "/v1/metrics":
		return Metrics, true
	case "/v1/traces":
		return Traces, true
	case "/v1/logs":
		return Logs, true
	}
	return 0, false
}

// Batch is a unit of telemetry of one signal. Exactly one of the slices is
// used, the one matching Signal.
type Batch struct {
	Signal  Signal
	Metrics []*metricspb.ResourceMetrics
	Traces  []*ResourceSpans
	Logs    []*ResourceLogs
	// Items is how many data points, spans or log records the batch
	// holds: the unit the batch processor's sizes count, and otelstep's
	// telemetry, logs and stop line report. Whoever builds a batch sets
	// it once: the receivers' decoding (otlpwire.DecodeRequestOwned),
	// the scraper, spanmetrics, the batch processor as it merges and
	// splits, and a producer that builds a batch of messages (the
	// OTLP/JSON receiver, replay, a test) with CountItems. Every stage after
	// reads it and never walks the batch to count again; a stage that
	// added or removed items would set it anew (the processors change
	// resources and names only).
	Items int
	// Leases are the producers' claims on the batch's memory (lease.go):
	// nil for a batch nobody wants back.
	Leases []*Lease
	// Acks are the senders waiting until the batch's items are written
	// (ack.go): nil for a batch nobody waits on. Read-only once shared,
	// as Leases.
	Acks []*Ack
	// Scraped is true when every item was converted by the scraper from
	// its targets' pages, as opposed to received over OTLP, derived from
	// received items (span_metrics) or read back from JSONL. The exporter
	// compresses the two kinds differently (sink.Compression); whoever
	// copies, merges or splits batches carries it, a merge keeping it only
	// when every part has it.
	Scraped bool
}

// Len returns the number of resources in the batch.
func (b *Batch) Len() int {
	switch b.Signal {
	case Metrics:
		return len(b.Metrics)
	case Traces:
		return len(b.Traces)
	case Logs:
		return len(b.Logs)
	}
	return 0
}

// CountItems counts the data points, spans or log records of b by walking
// its resources, for its producer to set b.Items (see Items): for a batch
// of messages that is the lengths of their slices; records (Records.Len)
// are read through.
func CountItems(b *Batch) int {
	n := 0
	switch b.Signal {
	case Metrics:
		for _, rm := range b.Metrics {
			n += ResourceMetricsPoints(rm)
		}
	case Traces:
		for _, rs := range b.Traces {
			n += rs.Len()
		}
	case Logs:
		for _, rl := range b.Logs {
			n += rl.Len()
		}
	}
	return n
}

// ResourceMetricsPoints returns the number of data points under one resource.
func ResourceMetricsPoints(rm *metricspb.ResourceMetrics) int {
	n := 0
	for _, sm := range rm.GetScopeMetrics() {
		n += ScopeMetricsPoints(sm)
	}
	return n
}

// ScopeMetricsPoints returns the number of data points under one scope.
func ScopeMetricsPoints(sm *metricspb.ScopeMetrics) int {
	n := 0
	for _, m := range sm.GetMetrics() {
		n += MetricPoints(m)
	}
	return n
}

// MetricPoints returns the number of data points of one metric.
func MetricPoints(m *metricspb.Metric) int {
	switch d := m.GetData().(type) {
	case *metricspb.Metric_Gauge:
		return len(d.Gauge.GetDataPoints())
	case *metricspb.Metric_Sum:
		return len(d.Sum.GetDataPoints())
	case *metricspb.Metric_Histogram:
		return len(d.Histogram.GetDataPoints())
	case *metricspb.Metric_ExponentialHistogram:
		return len(d.ExponentialHistogram.GetDataPoints())
	case *metricspb.Metric_Summary:
		return len(d.Summary.GetDataPoints())
	}
	return 0
}

// Consumer takes batches. Consume may block while the downstream buffer that
// must not drop (the JSONL sink) is full; it returns ctx.Err() or ErrFull when
// the caller should give up and tell its sender to retry later.
type Consumer interface {
	Consume(ctx context.Context, b *Batch) error
}

// ConsumerFunc adapts a function to Consumer.
type ConsumerFunc func(ctx context.Context, b *Batch) error

// Consume calls f.
func (f ConsumerFunc) Consume(ctx context.Context, b *Batch) error { return f(ctx, b) }

// A Flusher takes the hint that its producer has sent all it has for now:
// a scrape round is over. A stage that holds data for a while (the batch
// processor, up to its timeout) sends what it holds at once, and a stage
// that passes batches on passes the hint on. It is only a hint: what a
// stage sends, and when at the latest, do not depend on it.
//
// Why: a job's targets are scraped in one instant, and without the hint
// the batch processor would send the round's remainder at its timeout,
// when the process has gone idle: a wake-up of its own, for a process
// whose cost at a job's load is mostly waking up. Sent at the end of the
// round, the round's data leaves with the round.
type Flusher interface {
	Flush(ctx context.Context)
}

// Flush passes the hint to c if it takes it.
func Flush(ctx context.Context, c Consumer) {
	if f, ok := c.(Flusher); ok {
		f.Flush(ctx)
	}
}

// ErrFull is returned by Consume when a buffer that must not drop data is
// full. Receivers turn it into "retry later" (gRPC UNAVAILABLE, HTTP 503).
var ErrFull = errors.New("pipeline: buffer full, retry later")

// ErrStopped is returned by Consume once the pipeline is shutting down.
var ErrStopped = errors.New("pipeline: stopped")
