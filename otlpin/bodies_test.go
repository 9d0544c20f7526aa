package otlpin

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/otelstep/otelstep/otlpwire"
	"github.com/otelstep/otelstep/pipeline"
)

// leaseRec records each batch's JSON when it arrives and lets go of the
// batches whose number is even at once, as a sink that has encoded them;
// it holds the others.
type leaseRec struct {
	mu     sync.Mutex
	n      int
	held   []*pipeline.Batch
	want   [][]byte
	leases []*pipeline.Lease // of every batch, in order
}

func batchJSON(b *pipeline.Batch) []byte {
	if b.Signal == pipeline.Logs {
		return otlpwire.AppendLogs(nil, b.Logs)
	}
	return otlpwire.AppendTraces(nil, b.Traces)
}

func (c *leaseRec) Consume(_ context.Context, b *pipeline.Batch) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	c.leases = append(c.leases, b.Leases...)
	b.ResolveAcks(nil)
	if c.n%2 == 0 {
		b.Release()
		return nil
	}
	c.held = append(c.held, b)
	c.want = append(c.want, batchJSON(b))
	return nil
}

func bigTraces(i int) *coltracepb.ExportTraceServiceRequest {
	var spans []*tracepb.Span
	for j := range 60 + 37*(i%5) { // 10-40 KB: several body classes
		spans = append(spans, &tracepb.Span{
			TraceId: bytes.Repeat([]byte{byte(i), byte(j)}, 8), SpanId: bytes.Repeat([]byte{byte(j)}, 8),
			Name: fmt.Sprintf("request-%d-span-%d", i, j), StartTimeUnixNano: uint64(i*1000 + j), EndTimeUnixNano: uint64(i*1000 + j + 5),
			Attributes: []*commonpb.KeyValue{
				{Key: "http.route", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: strings.Repeat(fmt.Sprint(i), 1+j%30)}}},
				{Key: "n", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: int64(i*j + 1)}}},
			},
		})
	}
	return &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource:   &resourcepb.Resource{Attributes: []*commonpb.KeyValue{{Key: "service.name", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: fmt.Sprintf("svc-%d", i)}}}}},
		ScopeSpans: []*tracepb.ScopeSpans{{Scope: &commonpb.InstrumentationScope{Name: "s"}, Spans: spans}},
	}}}
}

// Bodies of protobuf export requests, over gRPC and over HTTP, come from a
// pool and go back when the batch is let go, and only then: each body let
// go of is put back once, none still held is, and a batch still held reads
// the same after many later requests (some of which may reuse the bodies
// let go of). Whether the pool hands a body back again is sync.Pool's
// choice (the race detector drops a share of Puts, a collection empties
// it), so the test counts the bodies put back rather than their reuse; in
// a poison build, where put poisons a body instead, the count is the same.
func TestBodiesComeBack(t *testing.T) {
	const n = 40
	logsReq := func(i int) *collogspb.ExportLogsServiceRequest {
		rec := &logspb.LogRecord{TimeUnixNano: uint64(i), Body: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: strings.Repeat(fmt.Sprint(i), 3000)}}}
		return &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{ScopeLogs: []*logspb.ScopeLogs{{LogRecords: []*logspb.LogRecord{rec}}}}}}
	}
	t.Run("grpc", func(t *testing.T) {
		traces, logs := &leaseRec{}, &leaseRec{}
		r := start(t, Options{Traces: traces, Logs: logs})
		cc := dial(t, r)
		tc, lc := coltracepb.NewTraceServiceClient(cc), collogspb.NewLogsServiceClient(cc)
		for i := range n {
			if _, err := tc.Export(context.Background(), bigTraces(i)); err != nil {
				t.Fatal(err)
			}
			if _, err := lc.Export(context.Background(), logsReq(i)); err != nil {
				t.Fatal(err)
			}
		}
		checkBodies(t, n, &r.bodies, traces, logs)
	})
	t.Run("http", func(t *testing.T) {
		traces, logs := &leaseRec{}, &leaseRec{}
		r := start(t, Options{Traces: traces, Logs: logs})
		post := func(path string, m proto.Message) {
			b, _ := proto.Marshal(m)
			resp, err := http.Post("http://"+r.HTTPAddr().String()+path, "application/x-protobuf", bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%s: %s", path, resp.Status)
			}
		}
		for i := range n {
			post("/v1/traces", bigTraces(i))
			post("/v1/logs", logsReq(i))
		}
		checkBodies(t, n, &r.bodies, traces, logs)
	})
}

func checkBodies(t *testing.T, n int, pool *bodyPool, recs ...*leaseRec) {
	t.Helper()
	// Each sink let go of every other batch before its request was
	// answered (leaseRec.Consume), and holds the rest.
	letGo := uint64(len(recs) * n / 2)
	if got := pool.returned.Load(); got != letGo {
		t.Fatalf("%d bodies put back, want the %d of the batches let go of", got, letGo)
	}
	for _, c := range recs {
		c.mu.Lock()
		if c.n != n {
			t.Fatalf("%d batches, want %d", c.n, n)
		}
		for k, b := range c.held {
			if len(b.Leases) != 2 {
				t.Fatalf("held batch %d has %d leases, want its body's and its bytes' grant (admission.go)", k, len(b.Leases))
			}
			if !bytes.Equal(batchJSON(b), c.want[k]) {
				t.Fatalf("%s batch %d changed while held, after later requests", b.Signal, 2*k+1)
			}
		}
		for _, b := range c.held {
			b.Release()
		}
		c.mu.Unlock()
	}
	if got, want := pool.returned.Load(), uint64(len(recs)*n); got != want {
		t.Fatalf("%d bodies put back once the held batches were let go of, want all %d", got, want)
	}
}

// Every size up to the largest class gets the smallest class that holds
// it, and no class wastes more than a fifth.
func TestBodyClasses(t *testing.T) {
	if got := classSize(bodyClasses - 1); got != 8<<20 {
		t.Fatalf("largest class %d bytes, want 8 MiB", got)
	}
	prev := 0
	for c := range bodyClasses {
		size := classSize(c)
		if size <= prev {
			t.Fatalf("class %d: %d bytes, not above class %d's %d", c, size, c-1, prev)
		}
		for _, n := range []int{prev + 1, (prev + size) / 2, size} {
			if got := bodyClass(n); got != c {
				t.Fatalf("%d bytes: class %d, want %d", n, got, c)
			}
		}
		if c > 0 && (size-prev-1)*5 > size {
			t.Fatalf("class %d wastes more than a fifth of %d bytes", c, size)
		}
		prev = size
	}
	if bodyClass(prev+1) != bodyClasses {
		t.Fatalf("%d bytes: class %d, want none", prev+1, bodyClass(prev+1))
	}
}
