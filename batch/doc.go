// Package batch is the batch processor: the collector's `batch` processor,
// between the other processors (resource, transform) and a pipeline's sink
// fan-out. It gathers the batches handed to it into fewer, larger ones,
// per signal, so that the JSONL files get longer lines and the backend
// fewer requests.
//
// What it batches: every batch of a signal is appended to that signal's
// pending batch, in the order Consume took them (resources are not merged
// with each other). The pending batch is sent to the next consumer once it
// holds SendBatchSize items (data points, spans or log records; default
// 8192) or Timeout after its first item came (default 200 ms), whichever
// is first, and when its producer hints that it has nothing more for now
// (pipeline.Flusher: the end of a scrape round). With SendBatchMaxSize set
// no batch sent holds more items: a larger one is cut (Split) at resource,
// scope, metric and then item granularity, the pieces sharing the
// unsplit messages read-only. A batch's leases and acks go with its
// items: a merged batch holds every producer's, both halves of a split
// hold all of them.
//
// The ack linger: an OTLP receiver answers a request only once its items
// are written to the pipeline's JSONL files (pipeline.Ack), so a batch
// holding acks is sent AckLinger (default DefaultAckLinger, 5 ms) after
// the first of them came rather than at Timeout: requests a few
// milliseconds apart still share a line and a backend request, and no
// sender's answer waits for the timeout. Scraped batches carry no ack and
// wait for size or Timeout.
//
// Backpressure: Consume returns nil only once it took the batch, and an
// error (pipeline.ErrFull when ctx ends before the next consumer takes a
// full pending batch, pipeline.ErrStopped after Shutdown) only when it
// did not, so a sender may retry without duplicates. At most one batch
// beyond SendBatchSize per signal is held while the next consumer refuses;
// what the timer sends is retried until taken. Every send to the next
// consumer is serialised, which keeps each signal's order.
//
// At stop: Shutdown stops the timer and sends every pending batch to the
// next consumer within its ctx; Consume then returns pipeline.ErrStopped.
// What the next consumer has not taken when ctx ends is not sent, and
// Shutdown returns the error. The service stops the receivers before the
// batch processors and the sinks after them, so what was taken reaches the
// sinks.
package batch
