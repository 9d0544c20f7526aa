package otlpin

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/gzip" // accept gzip-compressed requests
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/otelstep/otelstep/pipeline"
)

// handshakeTimeout bounds a new gRPC connection's HTTP/2 handshake, as
// the OTLP/HTTP server's ReadHeaderTimeout bounds a request's headers.
const handshakeTimeout = 10 * time.Second

func (r *Receiver) newGRPCServer() *grpc.Server {
	max := r.maxMsg
	if max > int64(int(^uint(0)>>1)) {
		max = int64(int(^uint(0) >> 1))
	}
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(int(max)),
		// Each request runs on one of a few long-lived goroutines, whose
		// stacks have grown to what a handler needs, rather than on a new
		// one per stream that grows its stack on every request (2% of
		// the CPU of a traces load); when they are all busy gRPC starts
		// one per stream as before.
		grpc.NumStreamWorkers(uint32(runtime.GOMAXPROCS(0))),
		// Idle connections closed, pings policed (Options.GRPCKeepalive),
		// and a connection that has not finished its HTTP/2 handshake in
		// handshakeTimeout closed (gRPC waits 120 s).
		grpc.KeepaliveParams(r.opts.GRPCKeepalive),
		grpc.KeepaliveEnforcementPolicy(r.opts.GRPCKeepalivePolicy),
		grpc.ConnectionTimeout(handshakeTimeout),
	}
	opts = append(opts, grpc.ForceServerCodecV2(otlpCodec{std: encoding.GetCodecV2(grpcproto.Name), bodies: &r.bodies, admit: r.admit}))
	// A stream that comes while the byte budget is spent is refused before
	// gRPC reads its message (admission.go); one that comes with room left
	// is read, and refused by the codec if its message does not fit.
	opts = append(opts, grpc.InTapHandle(func(ctx context.Context, _ *tap.Info) (context.Context, error) {
		if r.admit.full() {
			return nil, status.Error(codes.Unavailable, "otlpin: "+errOverBudget.Error()+", retry later")
		}
		return ctx, nil
	}))
	s := grpc.NewServer(opts...)
	registerExportServices(s, r)
	return s
}

// otlpCodec is the server's codec: the three export requests (decoded into
// an exportRequest by our own service handlers, grpcreq.go) by pipeline's
// reflection-free decoder (proto.Unmarshal was a third of the CPU of an
// OTLP load), everything else, and every response, by gRPC's standard
// proto codec std. It is named "proto" like std, the codec a gRPC client
// asks for; the server used std for every request before (the default for
// an unknown content-subtype too), so forcing this one changes nothing
// else. A request that does not decode fails with codes.InvalidArgument
// (exportService's handler: gRPC answers an error of the codec itself, as
// codes.Internal, so decodeExport reports it in the request instead).
type otlpCodec struct {
	std    encoding.CodecV2
	bodies *bodyPool  // the export requests' bodies (grpcreq.go)
	admit  *admission // the receiver's budget of request bytes in flight
}

func (c otlpCodec) Marshal(v any) (mem.BufferSlice, error) { return c.std.Marshal(v) }

func (c otlpCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if m, ok := v.(*exportRequest); ok {
		// Copied out of gRPC's buffers (which it frees or reuses after
		// Unmarshal) into a pooled body the batch holds (bodies.go), its
		// size taken from the budget first (admission.go). A decoding
		// error is m.err, a refusal m.refused.
		g := c.admit.take(int64(data.Len()))
		if g == nil {
			m.refused = errOverBudget
			return nil
		}
		if err := c.bodies.decodeExport(data, m); err != nil || m.err != nil {
			g.lease.Release()
			return err
		}
		m.batch.Leases = append(m.batch.Leases, &g.lease)
		return nil
	}
	return c.std.Unmarshal(data, v)
}

func (c otlpCodec) Name() string { return grpcproto.Name }

// grpcExport delivers b and maps the outcome to a gRPC status error.
func (r *Receiver) grpcExport(ctx context.Context, b *pipeline.Batch) error {
	c := r.consumer(b.Signal)
	if c == nil {
		b.Release()
		r.grpcReject(ctx, b.Signal, "no pipeline for signal")
		return status.Errorf(codes.Unimplemented, "otlpin: no %s pipeline is configured", b.Signal)
	}
	err := r.deliver(ctx, c, b)
	switch classify(err) {
	case outcomeOK:
		return nil
	case outcomeRetry:
		r.log.Warn("OTLP/gRPC export refused, sender told to retry", "remote", grpcRemote(ctx), "signal", b.Signal.String(), "error", err)
		return retryLater(b.Signal, err)
	default:
		r.log.Warn("OTLP/gRPC export failed", "remote", grpcRemote(ctx), "signal", b.Signal.String(), "error", err)
		return status.Errorf(codes.Internal, "otlpin: %s pipeline failed: %v", b.Signal, err)
	}
}

// retryLater is the status of a request of signal sig refused for now
// (err, classified outcomeRetry): UNAVAILABLE, with a RetryInfo detail.
func retryLater(sig pipeline.Signal, err error) error {
	st := status.New(codes.Unavailable, fmt.Sprintf("otlpin: %s pipeline cannot take data now, retry later: %v", sig, err))
	if ds, derr := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(retryAfter)}); derr == nil {
		st = ds
	}
	return st.Err()
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
