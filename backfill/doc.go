// Package backfill is otelstep's live backfill: while the job runs, it
// sends again, from a pipeline's JSONL file, what the pipeline's OTLP/HTTP
// exporter did not deliver (its queue was full, the backend was down),
// so that the backend has everything without anyone running `otelstep
// replay` once the backend is back.
//
// A Set holds, for each JSONL file and OTLP/HTTP exporter that share a
// pipeline, the exporter's delivery record of the file (replay.Record),
// which the sink fan-out tells of each line's fate (sink.Fanout.Track),
// and the goroutine (Run) that sends what the record holds as given up
// on. The service builds the Set with its pipelines (Track), starts it
// once the sinks run (Start), stops it first at the stop (Stop: a request
// in flight is cut short, its lines left to the next run) and writes the
// records last (Close).
//
// Run sends one request at a time, only once the live exporter's queue is
// empty (the live data goes first), at most Options.Rate a second, through
// the exporter itself (its client, headers and compression). A request
// the backend does not take is retried for Retry.MaxElapsedTime; then the
// backfill pauses until the live exporter is answered again or its pause
// (doubling up to 5 minutes) ends. A request the backend refuses (401,
// 400: the same again) is not sent again: the rest is recorded as refused,
// left to `otelstep replay`, and logged once. A file moved or replaced
// under otelstep is not backfilled (logged). Delivery is at least once: a
// request cut at a stop may have reached the backend.
//
// Why the record, the reading and the sending stay in package replay: the
// delivery record is replay's checkpoint of the file for the exporter's
// endpoint (so that a replay afterwards sends exactly what is not in it),
// and a backfill sends lines exactly as replay does (read back, grouped
// into requests, stamped with the token, a bad line reported and
// skipped). One implementation of each, in replay (replay.Record.Resend),
// keeps the two from drifting apart; this package holds what only the
// live process does: when to send, through what, and the wiring.
package backfill
