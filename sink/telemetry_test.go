package sink

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/otelstep/otelstep/config"
	"github.com/otelstep/otelstep/pipeline"
	"github.com/otelstep/otelstep/telemetry"
)

func newTestTelemetry(t *testing.T) *telemetry.Telemetry {
	t.Helper()
	tm, err := telemetry.New(config.Telemetry{}, telemetry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tm.Shutdown(context.Background()) })
	return tm
}

func telemetryPage(t *testing.T, tm *telemetry.Telemetry) string {
	t.Helper()
	rec := httptest.NewRecorder()
	tm.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return rec.Body.String()
}

func wantLines(t *testing.T, page string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(page, l+"\n") {
			t.Errorf("no %s in:\n%s", l, page)
		}
	}
}

// The HTTP sink records the items the backend took, the request retried,
// each request's duration, and its queue.
func TestHTTPTelemetry(t *testing.T) {
	tm := newTestTelemetry(t)
	be := newBackend(t, func(n int32, w http.ResponseWriter) bool {
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	h, _ := newTestHTTP(t, be.URL(), HTTPOptions{Name: "otlphttp/t", QueueSize: 7, Telemetry: tm.Sink("otlphttp/t")})
	wantLines(t, telemetryPage(t, tm), `otelcol_exporter_queue_capacity{exporter="otlphttp/t"} 7`, `otelcol_exporter_queue_size{exporter="otlphttp/t"} 0`)
	_ = h.Start(context.Background())
	_ = h.Enqueue(context.Background(), metricsBatch("a", 5))
	waitFor(t, patience, func() bool { return h.Stats().SentBatches == 1 }, "sent after a retry")
	if err := h.Shutdown(ctxT(patience)); err != nil {
		t.Fatal(err)
	}
	wantLines(t, telemetryPage(t, tm),
		`otelcol_exporter_sent_metric_points_total{exporter="otlphttp/t"} 5`,
		`otelstep_exporter_retries_total{exporter="otlphttp/t"} 1`,
		`otelstep_exporter_request_duration_seconds_count{exporter="otlphttp/t"} 2`,
	)
}

// A full queue's drops are counted, as the collector counts a failed
// enqueue, and the backfill's backlog is observed.
func TestHTTPTelemetryDrops(t *testing.T) {
	tm := newTestTelemetry(t)
	// not started: nothing is sent, the queue of one fills
	h, _ := newTestHTTP(t, "http://127.0.0.1:1", HTTPOptions{Name: "x", QueueSize: 1, Telemetry: tm.Sink("x")})
	h.AddBacklog(func() Backlog {
		return Backlog{ToBackfill: Lines{Batches: 1, Bytes: 100, Items: 3}, ForReplay: Lines{Batches: 1, Bytes: 200, Items: 4}}
	})
	for i := range 3 {
		_ = h.Enqueue(context.Background(), metricsBatch(strconv.Itoa(i), 1))
	}
	wantLines(t, telemetryPage(t, tm), `otelstep_exporter_dropped_batches_total{exporter="x"} 2`, `otelcol_exporter_queue_size{exporter="x"} 1`,
		`otelcol_exporter_enqueue_failed_metric_points_total{exporter="x"} 2`,
		`otelstep_exporter_backfill_backlog_batches{exporter="x"} 2`, `otelstep_exporter_backfill_backlog_bytes{exporter="x"} 300`)
	if st := h.Stats(); st.Fates[LeftQueueFull] != (FateCount{2, 2}) {
		t.Errorf("queue full: %+v, want 2 batches of 1 item", st.Fates[LeftQueueFull])
	}
	h.runCancel() // the one left is not sent: shut down at once
	_ = h.Shutdown(ctxT(patience))
	wantLines(t, telemetryPage(t, tm), `otelstep_exporter_dropped_batches_total{exporter="x"} 3`,
		`otelstep_exporter_unsent_at_stop_metric_points_total{exporter="x"} 1`)
	if st := h.Stats(); st.UnsentBatches != 1 || st.UnsentItems != 1 {
		t.Errorf("unsent at stop: %d batches, %d items; want 1 and 1", st.UnsentBatches, st.UnsentItems)
	}
}

// The file sink counts the items of each whole line and the bytes it
// wrote: all of the file's.
func TestFileTelemetry(t *testing.T) {
	tm := newTestTelemetry(t)
	path := filepath.Join(t.TempDir(), "metrics.jsonl")
	f, err := NewFile(FileOptions{Name: "file/m", Path: path, Signal: pipeline.Metrics, QueueSize: 9, Telemetry: tm.Sink("file/m")})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if err := f.Enqueue(context.Background(), metricsBatch(strconv.Itoa(i), 3)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Shutdown(ctxT(patience)); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	wantLines(t, telemetryPage(t, tm),
		`otelcol_exporter_sent_metric_points_total{exporter="file/m"} 12`,
		`otelstep_exporter_jsonl_bytes_total{exporter="file/m"} `+strconv.FormatInt(fi.Size(), 10),
	)
}

// A batch's count (pipeline.Batch.Items) reaches the sinks as it is: they
// do not walk the batch again (a batch of 3 points that says 42 here, to
// tell).
func TestFanoutPassesCount(t *testing.T) {
	tm := newTestTelemetry(t)
	path := filepath.Join(t.TempDir(), "metrics.jsonl")
	f, err := NewFile(FileOptions{Name: "file/m", Path: path, Signal: pipeline.Metrics, Telemetry: tm.Sink("file/m")})
	if err != nil {
		t.Fatal(err)
	}
	_ = f.Start(context.Background())
	fo := NewFanout(f)
	said := metricsBatch("a", 3)
	said.Items = 42
	if err := fo.Consume(context.Background(), said); err != nil {
		t.Fatal(err)
	}
	if err := fo.Consume(context.Background(), metricsBatch("b", 3)); err != nil {
		t.Fatal(err)
	}
	if err := f.Shutdown(ctxT(patience)); err != nil {
		t.Fatal(err)
	}
	wantLines(t, telemetryPage(t, tm), `otelcol_exporter_sent_metric_points_total{exporter="file/m"} 45`)
}
