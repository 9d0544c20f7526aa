package service

import (
	"testing"
	"time"

	"github.com/otelstep/otelstep/sink"
)

// An exporter gathers batches into requests of the collector's batch
// defaults, or of the smallest batch size (send_batch_max_size, else
// send_batch_size) and timeout of the pipelines feeding it; an exporter
// none of them bounds keeps the defaults, and one fed by a pipeline
// without a batch processor gathers nothing.
func TestRequestBatchFromTheBatchProcessors(t *testing.T) {
	cfg := parseConfig(t, "collector.yaml", healthAndOTLP+`processors:
  batch: {}
  batch/small:
    send_batch_size: 500
    timeout: 50ms
  batch/capped:
    send_batch_size: 800
    send_batch_max_size: 1000
exporters:
  otlphttp/a:
    endpoint: http://127.0.0.1:1
  otlphttp/b:
    endpoint: http://127.0.0.1:1
  otlphttp/c:
    endpoint: http://127.0.0.1:1
  otlphttp/d:
    endpoint: http://127.0.0.1:1
service:
  extensions: [health_check]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [otlphttp/a, otlphttp/b]
    logs:
      receivers: [otlp]
      processors: [batch/small]
      exporters: [otlphttp/b]
    metrics:
      receivers: [otlp]
      processors: [batch/capped]
      exporters: [otlphttp/c, otlphttp/d]
    metrics/unbatched:
      receivers: [otlp]
      exporters: [otlphttp/d]
`)
	for id, want := range map[string]struct {
		items int
		wait  time.Duration
	}{
		"otlphttp/a": {sink.DefaultRequestItems, sink.DefaultRequestWait},
		"otlphttp/b": {500, 50 * time.Millisecond},
		"otlphttp/c": {1000, sink.DefaultRequestWait},
		"otlphttp/d": {1000, 0},
	} {
		if items, wait := requestBatch(cfg, id); items != want.items || wait != want.wait {
			t.Errorf("%s: requests of %d items or %s, want %d or %s", id, items, wait, want.items, want.wait)
		}
	}
}
