// Package scraper runs Prometheus scrape loops and converts the exposition
// pages to OTLP metrics the way the collector-contrib (v0.161.0) prometheus
// receiver does: same metric names, types, units, descriptions, metadata,
// point attributes, values, buckets, quantiles, exemplars, flags and
// synthetic up/scrape_* series. golden_test.go proves it point for point
// against the collector's own output for the pages in testdata.
//
// What the conversion follows, in short:
//   - TYPE decides the family; series that match no TYPE'd family are
//     "unknown" gauges. A series takes the HELP, TYPE and UNIT declared for
//     its name, else for its name without a _bucket, _count, _sum, _total,
//     _info or _created suffix, wherever on the page they are, as
//     Prometheus's scrape cache keeps them: a declaration outlives its
//     page, and one read after the family's samples counts from the next
//     scrape (metatable.go). Counters keep their _total name; info drops _info;
//     info and stateset are non-monotonic sums; gaugehistogram is a gauge
//     with le kept, its _gsum/_gcount unknown gauges.
//   - _created of a TYPE'd counter, histogram or summary (either format) is
//     the start time, and counts as a sample, as in the collector. In the
//     text format a separate B_created gauge family is a gauge, as in the
//     collector, and also the start time of B_total or B (see below).
//   - Histograms and summaries without _count, and histograms with NaN or
//     decreasing buckets, are dropped; the +Inf bucket is the count.
//   - A series on the previous page but not on this one gets one point with
//     flags NO_RECORDED_VALUE (Prometheus's staleness marker) and is then
//     forgotten; a failed scrape does that for every series, plus up=0.
//     Series with an honoured explicit timestamp get no marker (Prometheus
//     keeps no staleness for them).
//   - A page's own up and scrape_* series (a federation page's) are one
//     metric with the synthetic series of their name, of its type and
//     description, as in the collector; a page point of the very series
//     the synthetic one is (no labels of its own) is one point.
//   - The Accept header is Prometheus 3's and the collector's: OpenMetrics
//     1.0.0 and text 1.0.0 with escaping=allow-utf-8, then the older
//     formats (fetch.go), so UTF-8 names (quoted on the page) keep their
//     dots: app.dotted.requests_total with a label http.route.
//   - The same raw series twice on a page: the first wins (Prometheus
//     rejects the repeat); the same labels under two spellings: the last
//     wins.
//   - relabel_configs run on a target's labels as Prometheus's
//     PopulateLabels has them (static labels, then the scrape config's
//     job, __scheme__, __metrics_path__, __param_*, __scrape_interval__
//     and __scrape_timeout__ where those do not set them); what they leave
//     is the target: its URL, interval, timeout, job, instance (the address
//     by default) and labels (target.go).
//   - metric_relabel_configs run on the page's labels merged with the
//     target's (exported_ prefix unless honor_labels), once per new series:
//     the verdict and the resulting attributes are cached per raw series.
//     A series they leave without __name__ fails the scrape, as in
//     Prometheus.
//   - Target.Limits are the scrape config's sample_limit, label_limit,
//     label_name_length_limit and label_value_length_limit, applied where
//     Prometheus's scrape loop applies them (limits.go): the label limits
//     to each new series' labels after metric relabeling (the target's,
//     and __name__ with the metric name as its value, included), the
//     sample limit to the samples metric relabeling kept, a series
//     repeated on the page counted once. A page over one fails the scrape
//     with Prometheus's message; scrape_samples_scraped,
//     scrape_samples_post_metric_relabeling and scrape_series_added report
//     what was counted up to the series that failed it. Past sample_limit
//     the page is read no further (Prometheus reads it to its end, to
//     count it), so that a page of a million series costs no more than
//     the limit's. 0 is no limit.
//   - A Manager's scrapes share a memory budget (Options.MemoryLimit,
//     budget.go): page buffers and the series kept between scrapes are
//     charged before they are allocated, and a scrape that does not fit
//     stops reading there and fails (up = 0, the figures in its error),
//     giving back what it held. The scrape timeout bounds the conversion
//     too: a page whose new series take past it fails as a timeout (up =
//     0, none of its samples, the last page's series marked stale), but
//     the series it resolved are kept, so that the next scrape of the
//     page goes on from there; what is kept changes nothing in the output
//     (the next page converts as on a fresh converter). A scrape that
//     begins with no series kept (a target's first, or its first since a
//     failure forgot them) is judged on its fetch alone, as Prometheus
//     judges every scrape: a healthy target is up from its first page,
//     however long its conversion (bounded by the budget and
//     sample_limit) takes on a busy machine.
//   - Whatever the limits, a name, label value or exemplar label of more
//     than 16 MiB (config.MaxLabelLength, the most the Prometheus labels
//     library encodes: longer panics in it) fails the scrape, naming the
//     line. And a panic in a scrape (a relabel rule that joins labels past
//     that, say) fails that scrape only, logged once with the job, target
//     and where it panicked: up = 0, the previous page's series marked
//     stale and forgotten as on any failed scrape, the other targets'
//     scrapes untouched.
//
// # Differences from the collector
//
// Every row is a difference golden_test.go allows (by its ID); any other
// difference from the collector's output fails that test.
//
// | ID | collector | ours | why ours is better |
// |----|-----------|------|--------------------|
// | `start-time-text` | text-format counters, histograms and summaries without a TYPE'd _created have no start time | the time of the series' first point (the scrape's, or the page's timestamp on it when honor_timestamps), moved to the point's time when the value goes down (a reset), never after the point's time; staleness markers keep the series' start | a cumulative point without a start time cannot be turned into rates by most backends; the first point's time is the earliest honest bound |
// | `start-time-created-gauge` | a text-format counter B_total, histogram or summary B with a B_created gauge beside it (prometheus_client's text exposition, vLLM's page) has no start time | the B_created gauge's value for the same attributes; the gauge is still emitted as a gauge | it is when the series really started: the first scrape would count everything before it as happening at that instant |
//
// Not compared by the golden test: scrape_duration_seconds's value (a
// wall-clock measurement), point and metric order (the collector's metric
// order is a map's), and timestamps equal to the scrape time (normalised).
//
// Known gaps, not exercised by the fixtures: otel_scope_name/
// otel_scope_version labels stay attributes (the collector makes a separate
// scope); native histograms are not negotiated (the Accept header asks for
// text formats only). Under honor_labels a page's own job and instance make
// a resource of their own, as in the collector (Converter.ConvertAll).
//
// # Cost
//
// A target's page barely changes between scrapes, so the work that depends
// only on a series is done when it first appears: its raw series bytes map
// to a cached entry with family, role, attributes and relabel verdict. The
// lines whose series bytes are the previous page's do not even reach
// textparse: the line cache (linecache.go) reads their values, and
// textparse parses from the first line that differs (in OpenMetrics, from
// that family's TYPE line). A known
// series then costs a compare, a float parse and a point.
//
// Each series' point attributes, and each family's metadata, are a
// pipeline.AttrSet kept between scrapes and shared by equal ones
// (attrsets.go), made in Options.SharedAttrs so that the sinks' encoders
// store and reuse their encodings: downstream must not mutate point
// attributes in place.
package scraper
