package otlpin

import (
	"context"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
)

// Clients that never finish (a body sent a byte at a time and never
// ended, a gRPC stream opened and left idle) hold Shutdown no longer than
// DrainTimeout: then their connections are closed, nothing of theirs was
// taken, and Shutdown returns nil. A request that finishes within the
// drain time is delivered and answered.
func TestShutdownDrainBounded(t *testing.T) {
	var got rec
	r := start(t, Options{DrainTimeout: 50 * time.Millisecond, Traces: &got})

	// OTLP/HTTP: the headers and part of the body, never the rest.
	trickle, err := net.Dial("tcp", r.HTTPAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer trickle.Close()
	body := goodTrace()
	fmt.Fprintf(trickle, "POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\nContent-Length: %d\r\n\r\n", len(body))
	if _, err := trickle.Write(body[:1]); err != nil {
		t.Fatal(err)
	}

	// OTLP/gRPC: an Export stream whose request never comes.
	cc, err := grpc.NewClient(r.GRPCAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	stream, err := cc.NewStream(context.Background(), &grpc.StreamDesc{ClientStreams: true, ServerStreams: true},
		"/opentelemetry.proto.collector.trace.v1.TraceService/Export")
	if err != nil {
		t.Fatal(err)
	}
	// The stream is open at the server once a request on another one has
	// been answered after it: both go over the one connection, in order.
	if resp, _ := post(t, r, "/v1/traces", ctProtobuf, "", goodTrace()); resp.StatusCode != 200 {
		t.Fatalf("a whole request: %d", resp.StatusCode)
	}
	if err := cc.Invoke(context.Background(), "/opentelemetry.proto.collector.trace.v1.TraceService/Export", mustTrace(t), &coltracepb.ExportTraceServiceResponse{}); err != nil {
		t.Fatalf("a whole gRPC request: %v", err)
	}

	done := make(chan error, 1)
	go func() { done <- r.Shutdown(context.Background()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Shutdown: %v, want nil after the drain time", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Shutdown still waits for clients that never finish")
	}
	// Both stuck clients were cut off, unanswered.
	_ = trickle.SetReadDeadline(time.Now().Add(time.Minute))
	if rest, err := io.ReadAll(trickle); err != nil || len(rest) != 0 {
		t.Errorf("the trickling connection: read %q, %v; want it closed without an answer", rest, err)
	}
	var resp coltracepb.ExportTraceServiceResponse
	if err := stream.RecvMsg(&resp); err == nil {
		t.Error("the idle gRPC stream got an answer")
	}
	got.mu.Lock()
	defer got.mu.Unlock()
	if len(got.bs) != 2 {
		t.Errorf("%d batches taken, want the 2 whole requests'", len(got.bs))
	}
}

func mustTrace(t *testing.T) *coltracepb.ExportTraceServiceRequest {
	t.Helper()
	req := &coltracepb.ExportTraceServiceRequest{}
	if err := proto.Unmarshal(goodTrace(), req); err != nil {
		t.Fatal(err)
	}
	return req
}
