package otlpin

import (
	"context"
	"fmt"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	_ "google.golang.org/grpc/encoding/gzip" // accept gzip-compressed requests
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"

	"github.com/otelstep/otelstep/pipeline"
)

func (r *Receiver) newGRPCServer() *grpc.Server {
	max := r.maxBody
	if max > int64(int(^uint(0)>>1)) {
		max = int64(int(^uint(0) >> 1))
	}
	s := grpc.NewServer(grpc.MaxRecvMsgSize(int(max)))
	colmetricspb.RegisterMetricsServiceServer(s, grpcMetrics{r: r})
	coltracepb.RegisterTraceServiceServer(s, grpcTraces{r: r})
	collogspb.RegisterLogsServiceServer(s, grpcLogs{r: r})
	return s
}

type grpcMetrics struct {
	colmetricspb.UnimplementedMetricsServiceServer
	r *Receiver
}

func (g grpcMetrics) Export(ctx context.Context, req *colmetricspb.ExportMetricsServiceRequest) (*colmetricspb.ExportMetricsServiceResponse, error) {
	if err := g.r.grpcExport(ctx, &pipeline.Batch{Signal: pipeline.Metrics, Metrics: req.GetResourceMetrics()}); err != nil {
		return nil, err
	}
	return &colmetricspb.ExportMetricsServiceResponse{}, nil
}

type grpcTraces struct {
	coltracepb.UnimplementedTraceServiceServer
	r *Receiver
}

func (g grpcTraces) Export(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	if err := g.r.grpcExport(ctx, &pipeline.Batch{Signal: pipeline.Traces, Traces: req.GetResourceSpans()}); err != nil {
		return nil, err
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

type grpcLogs struct {
	collogspb.UnimplementedLogsServiceServer
	r *Receiver
}

func (g grpcLogs) Export(ctx context.Context, req *collogspb.ExportLogsServiceRequest) (*collogspb.ExportLogsServiceResponse, error) {
	if err := g.r.grpcExport(ctx, &pipeline.Batch{Signal: pipeline.Logs, Logs: req.GetResourceLogs()}); err != nil {
		return nil, err
	}
	return &collogspb.ExportLogsServiceResponse{}, nil
}

// grpcExport delivers b and maps the outcome to a gRPC status error.
func (r *Receiver) grpcExport(ctx context.Context, b *pipeline.Batch) error {
	c := r.consumer(b.Signal)
	if c == nil {
		r.grpcReject(ctx, b.Signal, "no pipeline for signal")
		return status.Errorf(codes.Unimplemented, "otlpin: no %s pipeline is configured", b.Signal)
	}
	err := r.deliver(ctx, c, b)
	switch classify(err) {
	case outcomeOK:
		return nil
	case outcomeRetry:
		r.log.Warn("OTLP/gRPC export refused, sender told to retry", "remote", grpcRemote(ctx), "signal", b.Signal.String(), "error", err)
		st := status.New(codes.Unavailable, fmt.Sprintf("otlpin: %s pipeline cannot take data now, retry later: %v", b.Signal, err))
		if ds, derr := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(retryAfter)}); derr == nil {
			st = ds
		}
		return st.Err()
	default:
		r.log.Warn("OTLP/gRPC export failed", "remote", grpcRemote(ctx), "signal", b.Signal.String(), "error", err)
		return status.Errorf(codes.Internal, "otlpin: %s pipeline failed: %v", b.Signal, err)
	}
}

func (r *Receiver) grpcReject(ctx context.Context, s pipeline.Signal, reason string) {
	r.log.Debug("OTLP/gRPC request rejected", "remote", grpcRemote(ctx), "signal", s.String(), "reason", reason)
}

func grpcRemote(ctx context.Context) string {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return p.Addr.String()
	}
	return "unknown"
}
