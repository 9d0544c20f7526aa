package otlpin

import (
	"context"
	"fmt"
	"runtime"
	"strings"
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
	"github.com/otelstep/otelstep/telemetry"
)

// handshakeTimeout bounds a new gRPC connection's HTTP/2 handshake, as
// the OTLP/HTTP server's ReadHeaderTimeout bounds a request's headers.
const handshakeTimeout = 10 * time.Second

// maxStreams is the streams (requests) open at once on one gRPC
// connection, as HTTP/2 servers commonly allow: an OTLP exporter has one
// or a few requests in flight.
const maxStreams = 100

func (r *Receiver) newGRPCServer() *grpc.Server {
	max := r.maxMsg
	if max > int64(int(^uint(0)>>1)) {
		max = int64(int(^uint(0) >> 1))
	}
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(int(max)),
		// Each request runs on one of a few long-lived goroutines, whose
		// stacks have grown to what a handler needs, rather than on a new
		// one per stream that grows its stack on every request; when
		// they are all busy gRPC starts one per stream.
		grpc.NumStreamWorkers(uint32(runtime.GOMAXPROCS(0))),
		// Idle connections closed, pings policed (Options.GRPCKeepalive),
		// and a connection that has not finished its HTTP/2 handshake in
		// handshakeTimeout closed (gRPC waits 120 s).
		grpc.KeepaliveParams(r.opts.GRPCKeepalive),
		grpc.KeepaliveEnforcementPolicy(r.opts.GRPCKeepalivePolicy),
		grpc.ConnectionTimeout(handshakeTimeout),
	}
	// A client opens at most maxStreams requests at once on a connection
	// (it waits for one to end before the next): what one connection can
	// hold of the receiver stays bounded however many streams it asks for.
	opts = append(opts, grpc.MaxConcurrentStreams(maxStreams))
	if l, ok := r.grpcLn.(*Limited); ok && l.shedding {
		// Which connections have streams open, for the listener to shed
		// idle ones only (limit.go).
		opts = append(opts, grpc.StatsHandler(connTracker{l}))
	}
	opts = append(opts, grpc.ForceServerCodecV2(otlpCodec{std: encoding.GetCodecV2(grpcproto.Name), bodies: &r.bodies, admit: r.admit}))
	// A stream that comes while the byte budget is spent is refused before
	// gRPC reads its message (admission.go); one that comes with room left
	// is read, and refused by the codec if its message does not fit.
	opts = append(opts, grpc.InTapHandle(func(ctx context.Context, info *tap.Info) (context.Context, error) {
		if r.admit.full() {
			err := status.Error(codes.Unavailable, "otlpin: "+errOverBudget.Error()+", retry later")
			r.grpcRefuse(ctx, signalOfMethod(info.FullMethodName), ReasonOverBudget, err)
			return nil, err
		}
		return ctx, nil
	}))
	s := grpc.NewServer(opts...)
	registerExportServices(s, r)
	return s
}

// otlpCodec is the server's codec: the three export requests (decoded into
// an exportRequest by our own service handlers, grpcreq.go) by pipeline's
// reflection-free decoder (proto.Unmarshal's reflection would be a large
// part of an OTLP load's CPU), everything else, and every response, by
// gRPC's standard proto codec std. It is named "proto" like std, the codec
// a gRPC client asks for; std is what the server would use for every
// request otherwise (the default for an unknown content-subtype too), so
// forcing this one changes nothing else. A request that does not decode fails with codes.InvalidArgument
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
		err := status.Errorf(codes.Unimplemented, "otlpin: no %s pipeline is configured", b.Signal)
		r.grpcRefuse(ctx, b.Signal.String(), ReasonNoPipeline, err)
		return err
	}
	sig := b.Signal
	err := r.deliver(ctx, c, b)
	switch classify(err) {
	case outcomeOK:
		return nil
	case outcomeRetry:
		err = retryLater(sig, err)
		r.grpcRefuse(ctx, sig.String(), ReasonRetryLater, err)
		return err
	default:
		err = status.Errorf(codes.Internal, "otlpin: %s pipeline failed: %v", sig, err)
		r.grpcRefuse(ctx, sig.String(), ReasonPipelineFailed, err)
		return err
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

// grpcRefuse records a request of signal refused with the status error
// err (refuse).
func (r *Receiver) grpcRefuse(ctx context.Context, signal string, reason Reason, err error) {
	st := status.Convert(err)
	r.refuse(refusal{signal: signal, tr: telemetry.GRPC, reason: reason, remote: grpcRemote(ctx), answer: "gRPC " + st.Code().String(), err: st.Message()})
}

// decodeRefusal is the reason of a request whose message gRPC could not
// read (dec's error, a status): too large, or not decompressed.
func decodeRefusal(err error) Reason {
	switch status.Code(err) {
	case codes.ResourceExhausted:
		return ReasonTooLarge
	case codes.Internal:
		if strings.Contains(status.Convert(err).Message(), "decompress") {
			return ReasonDecompress
		}
	}
	return ReasonDecode
}

// signalOfMethod is the signal of an OTLP export method's full name
// ("/opentelemetry.proto.collector.trace.v1.TraceService/Export"),
// "unknown" for any other.
func signalOfMethod(m string) string {
	for sig, name := range map[pipeline.Signal]string{pipeline.Traces: ".trace.", pipeline.Metrics: ".metrics.", pipeline.Logs: ".logs."} {
		if strings.HasPrefix(m, "/opentelemetry.proto.collector") && strings.Contains(m, name) {
			return sig.String()
		}
	}
	return "unknown"
}

func grpcRemote(ctx context.Context) string {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return p.Addr.String()
	}
	return "unknown"
}
