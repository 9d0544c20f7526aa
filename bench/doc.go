// Package bench is otelstep's throughput measurement, `otelstep bench`: it
// runs whole collectors (otelstep, and with a peer another collector) as
// child processes on one synthetic load and measures them from the OS (CPU
// seconds, peak RSS), so that the figures are what a job would see.
// RunScrape serves Prometheus targets on loopback for them to scrape,
// RunOTLP sends them OTLP; both give the collectors an OTLP/HTTP Backend
// that decodes and counts what it is sent, so that a run also checks that
// what went in came out. RunOTLP's Rate is an open-loop schedule: request k
// is due k/Rate seconds after the load starts and is sent as soon as a
// sender is free, never earlier, so that every collector is offered the
// same requests in the window; one over a second late is skipped and
// counted, and the report gives items offered, sent and accepted a second.
// With Rounds above 1 they measure every collector once a round on the same
// load, alternating who runs first (otelstep in odd rounds, the peers in
// even ones), and report each figure's median over the rounds with its
// range, the counts that must add up as totals, and each ratio as the
// median of the ratios taken within each round. bench/README.md has the
// commands and the current results.
//
// Its Go benchmarks measure the scrape path in one process, page bytes in
// and both sinks' bytes (protobuf and gzip for the backend, OTLP/JSON for
// the file) out:
//
//	go test -run '^$' -bench . -benchmem ./bench/
package bench
