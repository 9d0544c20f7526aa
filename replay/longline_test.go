package replay

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/otelstep/otelstep/otlpwire"
	"github.com/otelstep/otelstep/pipeline"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// bigTraceLine is one line of n spans prefix-0..n-1 in one resource and
// one scope, as otelstep writes a large batch.
func bigTraceLine(prefix string, n int) []byte {
	spans := make([]*tracepb.Span, n)
	for i := range spans {
		spans[i] = &tracepb.Span{Name: fmt.Sprintf("%s-%d", prefix, i), TraceId: bytes.Repeat([]byte{1}, 16),
			SpanId: []byte{1, 2, 3, 4, 5, 6, byte(i >> 8), byte(i)}, StartTimeUnixNano: 1, EndTimeUnixNano: 2}
	}
	return otlpwire.AppendTraces(nil, pipeline.TracesFromProto([]*tracepb.ResourceSpans{{
		Resource:   &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "svc")}},
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}},
	}}))
}

// bigMetricLine is one line of a gauge of n points in one resource: a
// scrape of n series, as otelstep writes it.
func bigMetricLine(n int) []byte {
	pts := make([]*metricspb.NumberDataPoint, n)
	for i := range pts {
		pts[i] = &metricspb.NumberDataPoint{TimeUnixNano: 1, Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: float64(i)},
			Attributes: []*commonpb.KeyValue{str("series", fmt.Sprint(i))}}
	}
	return otlpwire.AppendMetrics(nil, []*metricspb.ResourceMetrics{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "svc")}},
		ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{{Name: "up",
			Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: pts}}}}}},
	}})
}

func writeLines(t *testing.T, path string, lines ...[]byte) {
	t.Helper()
	var buf bytes.Buffer
	for _, l := range lines {
		buf.Write(l)
		buf.WriteByte('\n')
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A line longer than BatchBytes (lowered here: otelstep's own lines reach
// over a hundred megabytes) is sent in requests of about BatchBytes each,
// split within its one resource and its one metric: every span and point
// once, the line counted once and done, the lines around it sent as usual.
// A line longer than MaxLineBytes is reported and skipped without stopping
// the rest.
func TestLongLineSentInPieces(t *testing.T) {
	be := newBackend()
	srv := be
	defer srv.Close()
	dir := t.TempDir()
	traces, metrics := filepath.Join(dir, "traces.jsonl"), filepath.Join(dir, "metrics.jsonl")
	big := bigTraceLine("big", 3000)
	writeLines(t, traces, traceLine("before"), big, traceLine("after"), bigTraceLine("huge", 20000), traceLine("last"))
	bigM := bigMetricLine(5000)
	writeLines(t, metrics, bigM)
	o := opts(srv, traces, metrics)
	o.BatchBytes = 16 << 10
	o.MaxLineBytes = 1 << 20 // the line of 20,000 spans is over it
	if len(big) <= o.BatchBytes*8 || len(big) > o.MaxLineBytes || len(bigM) <= o.BatchBytes*8 {
		t.Fatalf("the big lines are %d and %d bytes: not what the test needs", len(big), len(bigM))
	}
	s := mustRun(t, context.Background(), o)
	_, spans := be.snapshot()
	wantEach(t, spans, "big", 3000)
	for _, n := range []string{"before", "after", "last"} {
		if spans[n] != 1 {
			t.Errorf("span %s sent %d times", n, spans[n])
		}
	}
	if spans["huge-0"] != 0 {
		t.Error("the line over MaxLineBytes was sent")
	}
	points, tracesReqs, metricsReqs, badAttr := be.view().points, be.view().paths["/v1/traces"], be.view().paths["/v1/metrics"], be.view().badAttr
	if points != 5000 || badAttr != 0 {
		t.Errorf("points %d, want 5000; resources without the token %d", points, badAttr)
	}
	// About len/BatchBytes requests each: at least 8 (each smaller than
	// BatchBytes of JSON would be) and far fewer than one per item.
	if tracesReqs < 8 || tracesReqs > 3000/10 || metricsReqs < 8 || metricsReqs > 5000/10 {
		t.Errorf("requests: %d for the traces, %d for the metrics", tracesReqs, metricsReqs)
	}
	if s.Signals[1].Lines != 4 || s.Signals[0].Lines != 1 {
		t.Errorf("lines: traces %d, metrics %d", s.Signals[1].Lines, s.Signals[0].Lines)
	}
	if s.OK() || s.Failures() != 1 || len(s.Problems) != 1 || !strings.Contains(s.Problems[0], traces+":4: line too long") {
		t.Errorf("OK %v, failures %d, problems %q: want the line over MaxLineBytes skipped", s.OK(), s.Failures(), s.Problems)
	}
	// Done: a second run sends nothing.
	r1, _ := be.snapshot()
	mustRun(t, context.Background(), o)
	if r2, _ := be.snapshot(); r2 != r1 {
		t.Errorf("a second run sent %d requests", r2-r1)
	}
}

// A stop while a long line's pieces are being sent lets the line finish:
// every piece once, the line done, and the next run goes on after it.
func TestStopFinishesLongLine(t *testing.T) {
	be := newBackend()
	started, release := make(chan struct{}), make(chan struct{})
	first := true
	be.answer = func(n int, names []string, w http.ResponseWriter) int {
		if first && len(names) > 0 && strings.HasPrefix(names[0], "big-") {
			first = false
			close(started)
			<-release
		}
		return 200
	}
	srv := be
	defer srv.Close()
	f := filepath.Join(t.TempDir(), "traces.jsonl")
	writeLines(t, f, bigTraceLine("big", 2000), traceLine("next"))
	o := opts(srv, f)
	o.BatchBytes = 16 << 10
	o.Concurrency = 1
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *Summary)
	go func() { done <- mustRun(t, ctx, o) }()
	<-started
	cancel()
	close(release)
	s := <-done
	if !s.Stopped {
		t.Fatal("not stopped")
	}
	_, spans := be.snapshot()
	wantEach(t, spans, "big", 2000)
	if spans["next"] != 0 {
		t.Errorf("the line after was sent on a stop")
	}
	s = mustRun(t, context.Background(), opts(srv, f))
	_, spans = be.snapshot()
	wantEach(t, spans, "big", 2000)
	if spans["next"] != 1 || !s.OK() {
		t.Errorf("resume: next sent %d times, OK %v (%s)", spans["next"], s.OK(), s.Reason())
	}
}
