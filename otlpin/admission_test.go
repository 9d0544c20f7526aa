package otlpin

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"strings"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/otelstep/otelstep/pipeline"
)

// The receiver's byte budget is shared by HTTP and gRPC and held until
// the batches are let go of downstream: while held batches fill it, every
// further request (HTTP of known size, gzipped HTTP of unknown size, gRPC)
// is answered "retry later" (503 with Retry-After, UNAVAILABLE), nothing
// of it delivered; once the batches are let go of, the same requests are
// taken.
func TestAdmissionBudget(t *testing.T) {
	held := &rec{}
	req := marshalT(t, bigTrace(4000))
	size := int64(len(req))
	r := start(t, Options{Traces: held, AdmissionBytes: 2*size + size/2})
	cc := dial(t, r)
	tc := coltracepb.NewTraceServiceClient(cc)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(req)
	zw.Close()
	var msg coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(req, &msg); err != nil {
		t.Fatal(err)
	}
	// Two requests fit: one over HTTP, one over gRPC.
	if resp, body := post(t, r, "/v1/traces", ctProtobuf, "", req); resp.StatusCode != http.StatusOK {
		t.Fatalf("first request of %d bytes into %d: %s %s", size, r.admit.limit, resp.Status, body)
	}
	if _, err := tc.Export(context.Background(), &msg); err != nil {
		t.Fatalf("second request, over gRPC: %v", err)
	}
	refusals := func() {
		t.Helper()
		resp, body := post(t, r, "/v1/traces", ctProtobuf, "", req)
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Errorf("a request past the budget: %s (Retry-After %q) %s, want 503 with Retry-After", resp.Status, resp.Header.Get("Retry-After"), body)
		}
		resp, body = post(t, r, "/v1/traces", ctProtobuf, "gzip", gz.Bytes())
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Errorf("a gzipped request past the budget: %s (Retry-After %q) %s, want 503 with Retry-After", resp.Status, resp.Header.Get("Retry-After"), body)
		}
		if _, err := tc.Export(context.Background(), &msg); status.Code(err) != codes.Unavailable {
			t.Errorf("a gRPC request past the budget: %v, want UNAVAILABLE", err)
		}
	}
	refusals()
	held.mu.Lock()
	n := len(held.bs)
	held.mu.Unlock()
	if n != 2 || r.admit.inUse() != 2*size {
		t.Fatalf("%d batches delivered, %d bytes of the budget in use; want 2 and %d", n, r.admit.inUse(), 2*size)
	}
	// Let go of downstream, the bytes are the budget's again.
	for _, b := range held.bs {
		b.Release()
	}
	held.bs = nil
	if resp, body := post(t, r, "/v1/traces", ctProtobuf, "gzip", gz.Bytes()); resp.StatusCode != http.StatusOK {
		t.Fatalf("a gzipped request after the batches were let go of: %s %s", resp.Status, body)
	}
	if _, err := tc.Export(context.Background(), &msg); err != nil {
		t.Fatalf("a gRPC request after the batches were let go of: %v", err)
	}
	refusals()
	for _, b := range held.bs {
		b.Release()
	}
	// Each refusal counted as over_budget, the last one's peer known.
	st := r.Status()
	if len(st.Refused) != 1 || st.Refused[0].Reason != ReasonOverBudget || st.Refused[0].Count != 6 ||
		st.Refused[0].Transport != "grpc" || !strings.HasPrefix(st.Refused[0].Remote, "127.0.0.1:") {
		t.Errorf("refusals %+v, want 6 over_budget, the last over gRPC from 127.0.0.1", st.Refused)
	}
	if u := r.admit.inUse(); u != 0 {
		t.Fatalf("%d bytes of the budget in use with every batch let go of", u)
	}
	// A request bigger than the whole budget is taken when nothing else
	// is in flight.
	small := start(t, Options{Traces: pipeline.ConsumerFunc(func(_ context.Context, b *pipeline.Batch) error { b.Release(); b.ResolveAcks(nil); return nil }), AdmissionBytes: size / 2})
	if resp, body := post(t, small, "/v1/traces", ctProtobuf, "", req); resp.StatusCode != http.StatusOK {
		t.Fatalf("a request of %d bytes alone, budget %d: %s %s", size, size/2, resp.Status, body)
	}
}

// A gRPC request that comes while the budget is spent is refused before
// gRPC reads it (the tap), and counted as a refusal with its peer.
func TestAdmissionFullRefusedAtTheTap(t *testing.T) {
	held := &rec{}
	req := marshalT(t, bigTrace(100))
	r := start(t, Options{Traces: held, AdmissionBytes: int64(len(req))})
	if resp, body := post(t, r, "/v1/traces", ctProtobuf, "", req); resp.StatusCode != http.StatusOK {
		t.Fatalf("a request of the budget's size: %s %s", resp.Status, body)
	}
	defer func() {
		for _, b := range held.bs {
			b.Release()
		}
	}()
	if !r.admit.full() {
		t.Fatal("the budget is not spent")
	}
	var msg coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(req, &msg); err != nil {
		t.Fatal(err)
	}
	if _, err := coltracepb.NewTraceServiceClient(dial(t, r)).Export(context.Background(), &msg); status.Code(err) != codes.Unavailable {
		t.Fatalf("gRPC with the budget spent: %v, want UNAVAILABLE", err)
	}
	st := r.Status()
	if len(st.Refused) != 1 || st.Refused[0].Reason != ReasonOverBudget || st.Refused[0].Signal != "traces" ||
		st.Refused[0].Transport != "grpc" || !strings.HasPrefix(st.Refused[0].Remote, "127.0.0.1:") {
		t.Errorf("refusals %+v, want one over_budget of traces over gRPC from 127.0.0.1", st.Refused)
	}
}
