package otlpin

import (
	"testing"

	"github.com/otelstep/otelstep/internal/otlptest"
	"github.com/otelstep/otelstep/otlpwire"
	"github.com/otelstep/otelstep/pipeline"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

func named(name string) *resourcepb.Resource {
	return &resourcepb.Resource{Attributes: []*commonpb.KeyValue{{Key: "n", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: name}}}}}
}

func scopeNamed(name string) *commonpb.InstrumentationScope {
	return &commonpb.InstrumentationScope{Name: name}
}

// dropEmpty keeps exactly the scopes with items and the resources with such
// a scope, in order, for items kept as records (decoded) and as messages.
func TestDropEmpty(t *testing.T) {
	span := &tracepb.Span{TraceId: make([]byte, 16), Name: "s"}
	traces := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{
		{Resource: named("empty")},
		{Resource: named("a"), ScopeSpans: []*tracepb.ScopeSpans{{Scope: scopeNamed("e1")}, {Scope: scopeNamed("a1"), Spans: []*tracepb.Span{span}}, {Scope: scopeNamed("e2")}}},
		{Resource: named("only empty scopes"), ScopeSpans: []*tracepb.ScopeSpans{{}, {Scope: scopeNamed("e3")}}},
		{Resource: named("b"), ScopeSpans: []*tracepb.ScopeSpans{{Scope: scopeNamed("b1"), Spans: []*tracepb.Span{span, span}}}},
	}}
	wantTraces := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{
		{Resource: named("a"), ScopeSpans: []*tracepb.ScopeSpans{{Scope: scopeNamed("a1"), Spans: []*tracepb.Span{span}}}},
		{Resource: named("b"), ScopeSpans: []*tracepb.ScopeSpans{{Scope: scopeNamed("b1"), Spans: []*tracepb.Span{span, span}}}},
	}}
	rec := &logspb.LogRecord{Body: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "x"}}}
	logs := &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{
		{Resource: named("a"), ScopeLogs: []*logspb.ScopeLogs{{Scope: scopeNamed("a1"), LogRecords: []*logspb.LogRecord{rec}}, {Scope: scopeNamed("e1")}}},
		{Resource: named("empty"), ScopeLogs: []*logspb.ScopeLogs{{}}},
	}}
	wantLogs := &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{
		{Resource: named("a"), ScopeLogs: []*logspb.ScopeLogs{{Scope: scopeNamed("a1"), LogRecords: []*logspb.LogRecord{rec}}}},
	}}
	gauge := func(n int) *metricspb.Metric {
		g := &metricspb.Gauge{}
		for range n {
			g.DataPoints = append(g.DataPoints, &metricspb.NumberDataPoint{Value: &metricspb.NumberDataPoint_AsInt{AsInt: 1}})
		}
		return &metricspb.Metric{Name: "g", Data: &metricspb.Metric_Gauge{Gauge: g}}
	}
	metrics := &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{
		{Resource: named("points-less metrics"), ScopeMetrics: []*metricspb.ScopeMetrics{{Scope: scopeNamed("e1"), Metrics: []*metricspb.Metric{gauge(0), {Name: "no data"}}}}},
		{Resource: named("a"), ScopeMetrics: []*metricspb.ScopeMetrics{{Scope: scopeNamed("e2")}, {Scope: scopeNamed("a1"), Metrics: []*metricspb.Metric{gauge(0), gauge(2)}}}},
	}}
	wantMetrics := &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{
		// A metric without points beside one with some stays.
		{Resource: named("a"), ScopeMetrics: []*metricspb.ScopeMetrics{{Scope: scopeNamed("a1"), Metrics: []*metricspb.Metric{gauge(0), gauge(2)}}}},
	}}
	for _, c := range []struct {
		sig       pipeline.Signal
		in, want  proto.Message
		wantItems int
	}{
		{pipeline.Traces, traces, wantTraces, 3},
		{pipeline.Logs, logs, wantLogs, 1},
		{pipeline.Metrics, metrics, wantMetrics, 2},
	} {
		// Decoded (spans and log records kept as records) and as built.
		decoded, err := otlpwire.UnmarshalRequest(c.sig, marshal(c.in))
		if err != nil {
			t.Fatal(err)
		}
		built := &pipeline.Batch{Signal: c.sig}
		switch m := proto.Clone(c.in).(type) {
		case *coltracepb.ExportTraceServiceRequest:
			built.Traces = pipeline.TracesFromProto(m.ResourceSpans)
		case *collogspb.ExportLogsServiceRequest:
			built.Logs = pipeline.LogsFromProto(m.ResourceLogs)
		case *colmetricspb.ExportMetricsServiceRequest:
			built.Metrics = m.ResourceMetrics
		}
		built.Items = pipeline.CountItems(built)
		for _, b := range []*pipeline.Batch{decoded, built} {
			dropEmpty(b)
			if got := otlptest.RequestOf(b); !proto.Equal(got, c.want) {
				t.Errorf("%v: got %v\nwant %v", c.sig, got, c.want)
			}
			if n := pipeline.CountItems(b); b.Items != c.wantItems || n != c.wantItems {
				t.Errorf("%v: %d items, counted %d", c.sig, n, b.Items)
			}
		}
	}
}

// A batch of only empty resources and scopes is left with none; one with
// nothing empty is left as it is, its slices unchanged.
func TestDropEmptyAllOrNothing(t *testing.T) {
	b := &pipeline.Batch{Signal: pipeline.Traces, Traces: pipeline.TracesFromProto([]*tracepb.ResourceSpans{{}, {ScopeSpans: []*tracepb.ScopeSpans{{}, {Scope: scopeNamed("s")}}}})}
	dropEmpty(b)
	if b.Len() != 0 {
		t.Errorf("%d resources left", b.Len())
	}
	b = &pipeline.Batch{Signal: pipeline.Logs}
	dropEmpty(b)
	if b.Len() != 0 {
		t.Errorf("%d resources", b.Len())
	}
	full := []*pipeline.ResourceLogs{{ScopeLogs: []*pipeline.ScopeLogs{{LogRecords: []*logspb.LogRecord{{}}}}}}
	scopes := full[0].ScopeLogs
	b = &pipeline.Batch{Signal: pipeline.Logs, Logs: full}
	dropEmpty(b)
	if len(b.Logs) != 1 || &b.Logs[0] != &full[0] || &b.Logs[0].ScopeLogs[0] != &scopes[0] {
		t.Errorf("a batch with nothing empty changed: %v", b.Logs)
	}
}

func marshal(m proto.Message) []byte {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}
