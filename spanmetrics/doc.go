// Package spanmetrics is the config's span_metrics connector: a sink of a
// traces pipeline that turns the spans it is given into request counts and
// duration histograms, and a producer of metrics batches into a metrics
// pipeline, as the collector's spanmetrics connector does.
//
// # What it emits
//
// Every flush (FlushInterval, and once more at Shutdown) sends one metrics
// batch to next: one ResourceMetrics per distinct input resource (resources
// are told apart by all their attributes, in any order, as the collector
// does), whose attributes are a copy of that resource's, with one scope,
// "spanmetricsconnector", holding two metrics:
//
//   - <namespace>.calls: a monotonic Sum of int points, no unit: the spans
//     counted per series;
//   - <namespace>.duration: an explicit-bucket Histogram in "ms" or "s" of
//     end - start (0 when end is not after start), with the configured
//     bounds in that unit, the overflow bucket, sum and count (no min, max
//     or exemplars: the collector emits none by default).
//
// A series is one resource and one combination of its data point
// attributes, in this order: service.name (the resource's), span.name,
// span.kind (SPAN_KIND_SERVER …), status.code (STATUS_CODE_UNSET, _OK,
// _ERROR), collector.instance.id (one random UUID per Connector), then each
// configured dimension: the span's attribute of that name if it has one,
// else the resource's, else the dimension's default if it has one, else
// nothing. Spans of a resource without service.name are not counted (the
// collector skips them too); they are counted and logged instead.
//
// Cumulative (the default): a series' start time is when its first span was
// counted, its time the flush's, and it keeps counting. Delta: each flush
// sends what was counted since the last one that was sent, with the start
// time of that flush, and a series that counted nothing since is not sent
// and is forgotten. A flush with nothing to send sends nothing.
//
// # Differences from the collector, on purpose
//
//   - calls equals the histogram's count in every flush. The collector's
//     first flush of a new series reports calls = 0.
//   - Shutdown flushes once more, so a job shorter than the flush interval
//     still has its span metrics. The collector flushes only on its timer.
//   - A flush the metrics pipeline refuses (pipeline.ErrFull, a timeout) is
//     not lost: cumulative counts are sent by the next flush anyway, and
//     delta counts are put back to be sent with the next one.
//   - Series are bounded (CacheSize) by refusing new series once full, not by
//     evicting old ones: an evicted cumulative series would start again from
//     zero under the same attributes. Spans of refused series are counted
//     and logged once per flush. Resources are bounded too (maxResources);
//     a resource left without series is dropped at the next flush.
//   - A dimension keeps its value's type (as the collector does), and values
//     of different types (the int 1, the string "1") are different series;
//     the collector compares their string forms and merges them under the
//     attributes of whichever came first, and also merges series whose
//     dimension values only differ in which one is missing.
//   - A service.name that is not a string is written as its string form (the
//     collector writes an empty string).
//   - Config.Namespace "" means the default namespace, not no namespace.
//   - Buckets must be positive and increasing; New refuses others.
//
// # Ownership
//
// Enqueue reads every span of the batch before it returns, copies what it
// keeps (names, attribute values, resources), and then lets go of the
// batch's leases (b.Release), so the batch's memory may go back to its pool
// at once; on an error it keeps nothing and releases nothing (the caller
// still owns the batch). Spans may be Span messages, records kept as
// received (pipeline.Records, read with otlpwire.ScanSpan), or both. A batch a flush sends downstream is
// the callee's once Consume returns nil; its data point attribute slices
// are each series' pipeline.AttrSet's, sent again at every flush (made in
// Config.SharedAttrs for the sinks' encoders) and must not be changed;
// everything else in it is new each flush.
//
// Enqueue never blocks (beyond a mutex held while a flush gathers its
// points) and may be called from many goroutines. Shut it down after the
// traces pipeline that feeds it has flushed, and before the metrics
// pipeline it feeds.
package spanmetrics
