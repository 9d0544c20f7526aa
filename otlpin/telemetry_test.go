package otlpin

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/otelstep/otelstep/config"
	"github.com/otelstep/otelstep/pipeline"
	"github.com/otelstep/otelstep/telemetry"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
)

// refuse is a consumer that refuses everything.
type refuse struct{}

func (refuse) Consume(context.Context, *pipeline.Batch) error { return errors.New("pipeline failed") }

// Each request's items are counted once, accepted or refused, by signal
// and by the transport they came over.
func TestReceiverTelemetry(t *testing.T) {
	tm, err := telemetry.New(config.Telemetry{}, telemetry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Shutdown(context.Background())
	r := start(t, Options{Traces: &rec{}, Metrics: refuse{}, Telemetry: tm.Receiver("otlp/in")})

	spans := func(n int) *coltracepb.ExportTraceServiceRequest {
		ss := &tracepb.ScopeSpans{}
		for i := range n {
			ss.Spans = append(ss.Spans, &tracepb.Span{TraceId: make([]byte, 16), SpanId: []byte{1, 2, 3, 4, 5, 6, 7, byte(i + 1)}, Name: "s"})
		}
		return &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{ss}}}}
	}
	body, _ := proto.Marshal(spans(3))
	if resp, b := post(t, r, "/v1/traces", "application/x-protobuf", "", body); resp.StatusCode != 200 {
		t.Fatalf("HTTP: %d %s", resp.StatusCode, b)
	}
	cc, err := grpc.NewClient(r.GRPCAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	if _, err := coltracepb.NewTraceServiceClient(cc).Export(context.Background(), spans(2)); err != nil {
		t.Fatal(err)
	}
	gauge := &metricspb.Metric{Name: "g", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: []*metricspb.NumberDataPoint{{}, {}, {}, {}}}}}
	mreq := &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{{ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{gauge}}}}}}
	if _, err := colmetricspb.NewMetricsServiceClient(cc).Export(context.Background(), mreq); err == nil {
		t.Fatal("a refused batch answered OK")
	}

	rw := httptest.NewRecorder()
	tm.Handler().ServeHTTP(rw, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	page := rw.Body.String()
	for _, w := range []string{
		`otelcol_receiver_accepted_spans_total{receiver="otlp/in",transport="http"} 3`,
		`otelcol_receiver_accepted_spans_total{receiver="otlp/in",transport="grpc"} 2`,
		`otelcol_receiver_refused_metric_points_total{receiver="otlp/in",transport="grpc"} 4`,
	} {
		if !strings.Contains(page, w+"\n") {
			t.Errorf("no %s in:\n%s", w, page)
		}
	}
}
