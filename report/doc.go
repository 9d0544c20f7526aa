// Package report turns a job's JSONL files into a summary (JSON or
// markdown) and one self-contained HTML page: `otelstep report`.
//
// Contracts:
//
//   - Input. Each DIR is a job's otel/ folder or a job folder holding one;
//     its metrics.jsonl, traces.jsonl and logs.jsonl are read, otelstep's
//     and the collector's file exporter's alike (each line is decoded by
//     its first key, so a file of mixed signals reads too). One streaming
//     pass per file; a line is held in memory only while it is decoded.
//     A damaged line, a cut last line, a line over Options.MaxLineBytes or
//     one that is no export request is counted in FileStats and skipped,
//     never fatal. The report only reads: it writes nothing but what its
//     caller asks for (the --out file, stdout).
//   - Secrets. The Authorization resource attribute and any attribute
//     named like a credential (token, secret, password, api key, cookie)
//     are left out of the identity, the labels and every table, and their
//     values are redacted (redact.Redactor) from every output: summary,
//     markdown and the page's data and tables.
//   - Metrics become Prometheus series as Prometheus's own OTLP ingestion
//     makes them (otlptranslator's UnderscoreEscapingWithSuffixes names:
//     _total on monotonic sums, unit suffixes; histograms as _bucket{le},
//     _sum, _count; summaries as {quantile}, _sum, _count; job and
//     instance from service.namespace/service.name and service.instance.id;
//     data-point attributes as labels; a no-recorded-value point as a
//     staleness marker). Names are first renamed as the job's transform
//     does (`vllm:x` → `vllm_x`), so files written with or without it read
//     the same. Delta sums and histograms are accumulated into the
//     cumulative series Prometheus would need. Exponential histograms are
//     counted, not charted. Samples are kept XOR-encoded (the TSDB's
//     chunk encoding), a few bytes each.
//   - Panels are PromQL range queries evaluated by Prometheus's engine
//     (promql) over those series, at about Config.Points steps over the
//     job's span, no finer than its scrape interval (the median spacing of
//     `up`), with `$__rate_interval` as Grafana sets it (max of 4 scrape
//     intervals and step + scrape interval). DefaultPanels lists the
//     panels and their stable ids; LoadPanels adds or replaces them from
//     YAML. A series' mean, min, max and last are over the steps the query
//     has a value at. Jobs compared share one step.
//   - Spans: per service (service.name.override when set, else
//     service.name) and span name, the count, the errors (status ERROR)
//     and the nearest-rank p50 and p99 of every span's exact duration; the
//     slowest traces as waterfalls, from a bounded set of candidates kept
//     in the one pass. Logs: records by severity (text, else the number's
//     range) and the most frequent error bodies (severity ERROR or above;
//     at most 10000 distinct bodies counted apart). Scrape targets: from
//     `up`, the share of successful scrapes, the scrapes, the failed ones
//     and the gaps (spacings over 1.5 times the median).
//   - The page is one HTML file that makes no request when opened: the
//     vendored uPlot (assets/, with its licence), the styles and the data
//     are inline, and a Content-Security-Policy forbids anything else.
//     Each drawn panel's element carries data-panel="ID" and id="ID".
package report
