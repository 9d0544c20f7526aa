package otlpin

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"

	"github.com/otelstep/otelstep/otlpwire"
	"github.com/otelstep/otelstep/pipeline"
)

// Export requests over gRPC decode into an exportRequest, not the
// generated request message, so the batch can carry the lease of its body
// (bodies.go).
//
// The services are registered with ServiceDescs of their own (the
// generated ones' names, methods and wire format), whose handlers give
// the codec an *exportRequest to decode into; gRPC calls the codec with
// whatever the handler passes, and the generated handlers pass their
// request message, which has no room for a lease.

// exportRequest is one export request's batch, decoded by otlpCodec.
type exportRequest struct {
	batch pipeline.Batch // Signal is set before decoding
	// err is why the request did not decode. The codec reports it here
	// and not as its error, which gRPC answers itself, as codes.Internal,
	// before the handler runs: the handler answers codes.InvalidArgument.
	err error
	// refused is set when the receiver's byte budget had no room for the
	// request (admission.go): it was not decoded, and is answered "retry
	// later".
	refused error
}

// decodeExport decodes the request in data into req.batch (req.batch.Signal
// says which), from a pooled body when one is big enough. A request that
// does not decode is req.err, not an error.
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
	if err := otlpwire.DecodeRequestOwned(b, buf); err != nil {
		// The body goes to the garbage collector: nothing is sure not to
		// point into it (an error's text, say).
		req.err = fmt.Errorf("%s export request: %w", b.Signal, err)
		return nil
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
		r := srv.(*Receiver)
		if err := dec(req); err != nil {
			r.grpcRefuse(ctx, sig.String(), decodeRefusal(err), err)
			return nil, err
		}
		if req.refused != nil {
			err := retryLater(sig, req.refused)
			r.grpcRefuse(ctx, sig.String(), ReasonOverBudget, err)
			return nil, err
		}
		if req.err != nil {
			// Malformed (an id of the wrong length, say): nothing of it
			// is passed on, and the sender is not to send it again.
			err := status.Errorf(codes.InvalidArgument, "otlpin: cannot decode %v", req.err)
			r.grpcRefuse(ctx, sig.String(), ReasonDecode, err)
			return nil, err
		}
		export := func(ctx context.Context, _ any) (any, error) {
			if err := r.grpcExport(ctx, &req.batch); err != nil {
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
