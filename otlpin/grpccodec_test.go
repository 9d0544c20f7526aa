package otlpin

import (
	"context"
	"strings"
	"testing"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/otelstep/otelstep/pipeline"
)

func dial(t *testing.T, r *Receiver) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(r.GRPCAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// The three export requests arrive through the server's codec (the
// pipeline decoder), plain and gzip-compressed, equal to what was sent.
func TestGRPCCodecExports(t *testing.T) {
	tr, lg, mt := &rec{}, &rec{}, &rec{}
	r := start(t, Options{Traces: tr, Logs: lg, Metrics: mt})
	cc := dial(t, r)
	attrs := []*commonpb.KeyValue{
		{Key: "k", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: strings.Repeat("v", 70000)}}},
		{Key: "n", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: -3}}},
	}
	res := &resourcepb.Resource{Attributes: attrs}
	traces := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{Resource: res, ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{
		{TraceId: make([]byte, 16), SpanId: []byte{1, 2, 3, 4, 5, 6, 7, 8}, Name: "s", Attributes: attrs, Status: &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR}}}}}}}}
	logs := &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{Resource: res, ScopeLogs: []*logspb.ScopeLogs{{LogRecords: []*logspb.LogRecord{
		{Body: attrs[0].Value, Attributes: attrs, EventName: "e"}}}}}}}
	metrics := &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{{Resource: res, ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{
		{Name: "m", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: []*metricspb.NumberDataPoint{{Attributes: attrs, Value: &metricspb.NumberDataPoint_AsInt{AsInt: 7}}}}}}}}}}}}
	for _, opts := range [][]grpc.CallOption{nil, {grpc.UseCompressor(gzip.Name)}} {
		ctx := context.Background()
		if _, err := coltracepb.NewTraceServiceClient(cc).Export(ctx, traces, opts...); err != nil {
			t.Fatal(err)
		}
		if _, err := collogspb.NewLogsServiceClient(cc).Export(ctx, logs, opts...); err != nil {
			t.Fatal(err)
		}
		if _, err := colmetricspb.NewMetricsServiceClient(cc).Export(ctx, metrics, opts...); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		rec  *rec
		want proto.Message
	}{{tr, traces}, {lg, logs}, {mt, metrics}} {
		c.rec.mu.Lock()
		if len(c.rec.bs) != 2 {
			t.Fatalf("%d batches", len(c.rec.bs))
		}
		for _, b := range c.rec.bs {
			var got proto.Message
			switch b.Signal {
			case pipeline.Traces:
				rss, err := pipeline.TracesProto(b.Traces) // received spans are kept as records
				if err != nil {
					t.Fatal(err)
				}
				got = &coltracepb.ExportTraceServiceRequest{ResourceSpans: rss}
			case pipeline.Logs:
				rls, err := pipeline.LogsProto(b.Logs) // received log records are kept as records
				if err != nil {
					t.Fatal(err)
				}
				got = &collogspb.ExportLogsServiceRequest{ResourceLogs: rls}
			default:
				got = &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: b.Metrics}
			}
			if !proto.Equal(got, c.want) {
				t.Errorf("%s: got %v", b.Signal, got)
			}
		}
		c.rec.mu.Unlock()
	}
}

// rawCodec sends pre-encoded bytes as the request, to put malformed
// protobuf on the wire.
type rawCodec struct{}

type raw []byte

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.(raw))}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return proto.Unmarshal(data.Materialize(), v.(proto.Message))
}

func (rawCodec) Name() string { return "proto" }

// A request that does not decode is refused with codes.InvalidArgument (not
// to be sent again; gRPC's own codec made it codes.Internal), naming what
// is wrong and where, and never reaches the pipeline.
func TestGRPCCodecMalformed(t *testing.T) {
	c := &rec{}
	r := start(t, Options{Traces: c})
	cc := dial(t, r)
	for name, body := range map[string][]byte{
		"truncated":     {0x0a, 0x05, 0x12},
		"invalid UTF-8": {0x0a, 0x07, 0x12, 0x05, 0x12, 0x03, 0x2a, 0x01, 0xff},
	} {
		err := cc.Invoke(context.Background(), "/opentelemetry.proto.collector.trace.v1.TraceService/Export", raw(body),
			&coltracepb.ExportTraceServiceResponse{}, grpc.ForceCodecV2(rawCodec{}))
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "traces export request: resource_spans[0]") {
			t.Errorf("%s: %v", name, err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.bs) != 0 {
		t.Fatalf("%d batches delivered", len(c.bs))
	}
}

// The size limit still applies before decoding.
func TestGRPCCodecSizeLimit(t *testing.T) {
	c := &rec{}
	r := start(t, Options{Traces: c, GRPCMaxRecvBytes: 1000})
	cc := dial(t, r)
	big := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{Name: strings.Repeat("x", 2000)}}}}}}}
	if _, err := coltracepb.NewTraceServiceClient(cc).Export(context.Background(), big); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("over the limit: %v", err)
	}
}

// Anything but the three requests goes to gRPC's proto codec, and so does
// every response.
func TestGRPCCodecFallback(t *testing.T) {
	std := encoding.GetCodecV2("proto")
	c := otlpCodec{std: std, bodies: &bodyPool{}, admit: &admission{limit: 1 << 20}}
	if c.Name() != "proto" {
		t.Fatal(c.Name())
	}
	resp := &coltracepb.ExportTraceServiceResponse{PartialSuccess: &coltracepb.ExportTracePartialSuccess{RejectedSpans: 3, ErrorMessage: "x"}}
	data, err := c.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	var got coltracepb.ExportTraceServiceResponse
	if err := c.Unmarshal(data, &got); err != nil || !proto.Equal(&got, resp) {
		t.Fatalf("%v %v", &got, err)
	}
	// The standard codec keeps unknown fields, for the generated request
	// types too: only our handlers' exportRequest takes the fast path.
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer([]byte{0xa0, 0x06, 0x01})}, &got); err != nil || len(got.ProtoReflect().GetUnknown()) == 0 {
		t.Fatalf("fallback: %v %x", err, got.ProtoReflect().GetUnknown())
	}
	// The request path: several buffers, into a pooled body, its bytes
	// the budget's until the batch is let go of (its body's lease and its
	// grant's).
	req := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{SchemaUrl: "u"}}}
	b, _ := proto.Marshal(req)
	into := &exportRequest{batch: pipeline.Batch{Signal: pipeline.Traces}}
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b[:2]), mem.SliceBuffer(b[2:])}, into); err != nil ||
		len(into.batch.Traces) != 1 || into.batch.Traces[0].SchemaURL != "u" || len(into.batch.Leases) != 2 || c.admit.inUse() != int64(len(b)) {
		t.Fatalf("%v %v, %d leases, %d bytes of the budget in use", into.batch.Traces, err, len(into.batch.Leases), c.admit.inUse())
	}
	into.batch.Release()
	if n := c.admit.inUse(); n != 0 {
		t.Fatalf("%d bytes of the budget in use after the batch was let go of", n)
	}
	// A broken request is the request's error, for the handler to answer
	// (gRPC would answer an error of the codec itself).
	bad := &exportRequest{batch: pipeline.Batch{Signal: pipeline.Traces}}
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer([]byte{0x0a, 0x05, 0x01})}, bad); err != nil || bad.err == nil ||
		!strings.Contains(bad.err.Error(), "traces export request") || len(bad.batch.Traces) != 0 {
		t.Fatalf("a broken request: %v %v", err, bad.err)
	}
}
