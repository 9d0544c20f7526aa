package faults

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// Ledger keeps what a case sent and what otelstep answered 200 (taken:
// it must reach the JSONL, and the backend when it is up).
type Ledger struct {
	mu       sync.Mutex
	sent     Items
	answered Items
	refused  int // requests answered otherwise (retry later, an error)
}

func newLedger() *Ledger { return &Ledger{sent: newItems(), answered: newItems()} }

// Answered is a copy of what was answered 200.
func (l *Ledger) Answered() Items {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.answered.clone()
}

// Refused is the number of requests not answered 200.
func (l *Ledger) Refused() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refused
}

func (l *Ledger) record(names []string, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, n := range names {
		l.sent.Spans[n]++
		if ok {
			l.answered.Spans[n]++
		}
	}
	if !ok {
		l.refused++
	}
}

// spanIDs makes ids no two spans of a run share.
var spanSeq atomic.Uint64

// spanNames is n names starting with prefix, unique in the run.
func spanNames(prefix string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", prefix, spanSeq.Add(1))
	}
	return names
}

// spanStubs are SDK spans named names, each with its own valid ids.
func spanStubs(names []string) []sdktrace.ReadOnlySpan {
	stubs := make(tracetest.SpanStubs, len(names))
	now := time.Now()
	for i, n := range names {
		var tid trace.TraceID
		var sid trace.SpanID
		seq := spanSeq.Add(1)
		binary.BigEndian.PutUint64(tid[8:], seq)
		tid[0] = 1
		binary.BigEndian.PutUint64(sid[:], seq)
		stubs[i] = tracetest.SpanStub{
			Name:        n,
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}),
			StartTime:   now,
			EndTime:     now.Add(time.Millisecond),
		}
	}
	return stubs.Snapshots()
}

// SpanExporter is an OTel SDK span exporter (OTLP/HTTP or OTLP/gRPC) with
// its own retries off: the case sees each answer.
type SpanExporter interface {
	ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error
	Shutdown(context.Context) error
}

// httpExporter is the SDK's OTLP/HTTP span exporter to addr.
func httpExporter(t testing.TB, addr string) SpanExporter {
	t.Helper()
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpoint(addr), otlptracehttp.WithInsecure(),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}), otlptracehttp.WithTimeout(patience))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = exp.Shutdown(context.Background()) })
	return exp
}

// grpcExporter is the SDK's OTLP/gRPC span exporter to addr.
func grpcExporter(t testing.TB, addr string) SpanExporter {
	t.Helper()
	exp, err := otlptracegrpc.New(context.Background(), otlptracegrpc.WithEndpoint(addr), otlptracegrpc.WithInsecure(),
		otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: false}), otlptracegrpc.WithTimeout(patience))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = exp.Shutdown(context.Background()) })
	return exp
}

// export sends n spans named after prefix in one request and records the
// answer; it returns the exporter's error (nil: answered 200).
func (l *Ledger) export(exp SpanExporter, prefix string, n int) error {
	names := spanNames(prefix, n)
	err := exp.ExportSpans(context.Background(), spanStubs(names))
	l.record(names, err == nil)
	return err
}

// spansRequest is an OTLP/HTTP protobuf body of spans named names.
func spansRequest(names []string) []byte {
	ss := &tracepb.ScopeSpans{}
	for _, n := range names {
		seq := spanSeq.Add(1)
		tid, sid := make([]byte, 16), make([]byte, 8)
		tid[0] = 1
		binary.BigEndian.PutUint64(tid[8:], seq)
		binary.BigEndian.PutUint64(sid, seq)
		ss.Spans = append(ss.Spans, &tracepb.Span{Name: n, TraceId: tid, SpanId: sid, StartTimeUnixNano: 1, EndTimeUnixNano: 2})
	}
	body, err := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{ss}}}})
	if err != nil {
		panic(err)
	}
	return body
}

// post sends n spans named after prefix to OTLP/HTTP at addr as one raw
// protobuf request and records the answer, returning its status (0: no
// answer) and Retry-After.
func (l *Ledger) post(addr, prefix string, n int) (int, string) {
	names := spanNames(prefix, n)
	resp, err := http.Post("http://"+addr+"/v1/traces", "application/x-protobuf", bytes.NewReader(spansRequest(names)))
	if err != nil {
		l.record(names, false)
		return 0, ""
	}
	resp.Body.Close()
	l.record(names, resp.StatusCode == 200)
	return resp.StatusCode, resp.Header.Get("Retry-After")
}

// grpcExporterOn is the SDK's OTLP/gRPC span exporter over cc.
func grpcExporterOn(t testing.TB, cc *grpc.ClientConn) SpanExporter {
	t.Helper()
	exp, err := otlptracegrpc.New(context.Background(), otlptracegrpc.WithGRPCConn(cc),
		otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: false}), otlptracegrpc.WithTimeout(patience))
	if err != nil {
		t.Fatal(err)
	}
	return exp
}

// invoke sends n spans named after prefix to OTLP/gRPC over cc as one raw
// Export call and records the answer, returning its error (nil: OK).
func (l *Ledger) invoke(cc *grpc.ClientConn, prefix string, n int) error {
	names := spanNames(prefix, n)
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(spansRequest(names), &req); err != nil {
		panic(err)
	}
	err := cc.Invoke(context.Background(), "/opentelemetry.proto.collector.trace.v1.TraceService/Export", &req, &coltracepb.ExportTraceServiceResponse{})
	l.record(names, err == nil)
	return err
}
