package otlpin

import (
	"context"
	"fmt"
	"math/bits"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"

	"github.com/otelstep/otelstep/pipeline"
)

// Export requests over gRPC decode into an exportRequest, not the
// generated request message, so the batch can carry the lease of the body
// its strings and records alias (pipeline.Lease): the body comes from a
// pool and goes back once every sink has encoded the batch. Copying each
// request into a new body was four fifths of the bytes a traces load
// allocated, and the collection of that garbage about a fifth of its CPU.
//
// The services are registered with ServiceDescs of their own (the
// generated ones' names, methods and wire format), whose handlers give
// the codec an *exportRequest to decode into; gRPC calls the codec with
// whatever the handler passes, and the generated handlers pass their
// request message, which has no room for a lease.

// exportRequest is one export request's batch, decoded by otlpCodec.
type exportRequest struct {
	batch pipeline.Batch // Signal is set before decoding
}

// bodyClasses are the sizes of pooled bodies: 16 KiB << i. A bigger request
// gets a body of its own that goes to the garbage collector.
const (
	minBodyShift = 14
	bodyClasses  = 10 // up to 8 MiB
)

// bodyPool holds the bodies of decoded requests, by size class.
type bodyPool struct {
	classes [bodyClasses]sync.Pool // *body
}

// body is a pooled request body and the lease a batch holds on it.
type body struct {
	b     []byte // cap is the class's size
	class int
	pool  *bodyPool
	lease pipeline.Lease
	back  func() // b.put, made once per body
}

// get returns a body of at least n bytes with b[:n] to fill, its lease
// holding one reference; nil when n is above the largest class.
func (p *bodyPool) get(n int) *body {
	c := 0
	if n > 1<<minBodyShift {
		c = bits.Len(uint(n-1)) - minBodyShift
	}
	if c >= bodyClasses {
		return nil
	}
	b, _ := p.classes[c].Get().(*body)
	if b == nil {
		b = &body{b: make([]byte, 1<<(minBodyShift+c)), class: c, pool: p}
		b.back = b.put
	}
	b.b = b.b[:n]
	b.lease.Reset(b.back)
	return b
}

// put returns b to its class; the lease's last release calls it.
func (b *body) put() {
	b.b = b.b[:cap(b.b)]
	b.pool.classes[b.class].Put(b)
}

// decodeExport decodes the request in data into req.batch (req.batch.Signal
// says which), from a pooled body when one is big enough.
func (p *bodyPool) decodeExport(data mem.BufferSlice, req *exportRequest) error {
	n := data.Len()
	var buf []byte
	bd := p.get(n)
	if bd != nil {
		buf = bd.b
		data.CopyTo(buf)
	} else {
		buf = data.Materialize()
	}
	b := &req.batch
	var err error
	switch b.Signal {
	case pipeline.Traces:
		b.Traces, err = pipeline.DecodeTracesOwned(buf)
	case pipeline.Metrics:
		b.Metrics, err = pipeline.DecodeMetricsOwned(buf)
	case pipeline.Logs:
		b.Logs, err = pipeline.DecodeLogsOwned(buf)
	default:
		err = fmt.Errorf("unknown signal %d", b.Signal)
	}
	if err != nil {
		// The body goes to the garbage collector: nothing is sure not to
		// point into it (an error's text, say).
		return fmt.Errorf("%s export request: %w", b.Signal, err)
	}
	if bd != nil {
		b.Leases = append(b.Leases[:0], &bd.lease)
	}
	return nil
}

// exportService returns the ServiceDesc of one OTLP collector service:
// name and method as generated (so the wire is the same), with a handler
// that decodes into an exportRequest and answers with resp.
func exportService(name, file string, sig pipeline.Signal, resp func() any) *grpc.ServiceDesc {
	full := "/" + name + "/Export"
	handler := func(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
		req := &exportRequest{batch: pipeline.Batch{Signal: sig}}
		if err := dec(req); err != nil {
			return nil, err
		}
		export := func(ctx context.Context, _ any) (any, error) {
			if err := srv.(*Receiver).grpcExport(ctx, &req.batch); err != nil {
				return nil, err
			}
			return resp(), nil
		}
		if icpt == nil {
			return export(ctx, req)
		}
		return icpt(ctx, req, &grpc.UnaryServerInfo{Server: srv, FullMethod: full}, export)
	}
	return &grpc.ServiceDesc{
		ServiceName: name,
		HandlerType: (*any)(nil),
		Methods:     []grpc.MethodDesc{{MethodName: "Export", Handler: handler}},
		Metadata:    file,
	}
}

// registerExportServices registers the three OTLP collector services on s
// with r as their server.
func registerExportServices(s *grpc.Server, r *Receiver) {
	s.RegisterService(exportService(coltracepb.TraceService_ServiceDesc.ServiceName,
		coltracepb.TraceService_ServiceDesc.Metadata.(string), pipeline.Traces,
		func() any { return &coltracepb.ExportTraceServiceResponse{} }), r)
	s.RegisterService(exportService(colmetricspb.MetricsService_ServiceDesc.ServiceName,
		colmetricspb.MetricsService_ServiceDesc.Metadata.(string), pipeline.Metrics,
		func() any { return &colmetricspb.ExportMetricsServiceResponse{} }), r)
	s.RegisterService(exportService(collogspb.LogsService_ServiceDesc.ServiceName,
		collogspb.LogsService_ServiceDesc.Metadata.(string), pipeline.Logs,
		func() any { return &collogspb.ExportLogsServiceResponse{} }), r)
}
