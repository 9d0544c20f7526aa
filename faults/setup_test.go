package faults

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/otelstep/otelstep/internal/proctest"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// A port in use is a setup error: exit 2 at once, naming the address.
func TestPortInUse(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	n := configure(t, Setup{GRPCAddr: busy.Addr().String()})
	p := proctest.Launch(t, proctest.Command(otelstepBin, n.Env, "--config", n.Config))
	var code int
	select {
	case <-p.Done:
		code = p.Cmd.ProcessState.ExitCode()
	case <-time.After(patience):
		t.Fatalf("still running %v after start with its gRPC port in use:\n%s", patience, p.Out.String())
	}
	if code != 2 {
		t.Errorf("exit %d, want 2:\n%s", code, p.Out.String())
	}
	if !strings.Contains(p.Out.String(), busy.Addr().String()) {
		t.Errorf("the message does not name %s:\n%s", busy.Addr(), p.Out.String())
	}
	n.checkNoToken(t, p)
	report(t, fmt.Sprintf("exit %d", code), 0)
}

// rawCodec sends a gRPC request's bytes as they are.
type rawCodec struct{}

type rawBytes []byte

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.(rawBytes))}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return proto.Unmarshal(data.Materialize(), v.(proto.Message))
}

func (rawCodec) Name() string { return "proto" }

// Malformed gRPC export requests (truncated, garbage) are INVALID_ARGUMENT,
// each naming what is wrong; the process goes on taking good requests
// between them, and stops with exit 0 with every good one in the JSONL.
func TestMalformedGRPC(t *testing.T) {
	n := configure(t, Setup{})
	p := n.start(t)
	cc, err := grpc.NewClient(n.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	good := spansRequest([]string{"probe"})
	bad := []rawBytes{
		{0x0a, 0x05, 0x12}, // a resource_spans that ends early
		{0xff, 0xff, 0xff}, // no field at all
		good[:len(good)-3], // a real request cut short
		append(rawBytes{0x0a, 0x80, 0x80, 0x80, 0x80, 0x10}, good...), // a length past the end
	}
	l := newLedger()
	exp := grpcExporter(t, n.GRPC)
	invalid := 0
	for i := range size(len(bad)*5, len(bad)*500) {
		err := cc.Invoke(context.Background(), "/opentelemetry.proto.collector.trace.v1.TraceService/Export", bad[i%len(bad)],
			&coltracepb.ExportTraceServiceResponse{}, grpc.ForceCodecV2(rawCodec{}))
		if status.Code(err) == codes.InvalidArgument && status.Convert(err).Message() != "" {
			invalid++
		} else {
			t.Errorf("malformed request %d: %v, want InvalidArgument with a message", i%len(bad), err)
		}
		if err := l.export(exp, "good", 3); err != nil {
			t.Errorf("a good request after a malformed one: %v", err)
		}
	}
	e := p.Stop(t)
	figure := checkExit(t, p, e)
	lost := n.jsonl(t).Missing(l.Answered())
	n.checkNoToken(t, p)
	report(t, fmt.Sprintf("%d malformed requests: %d INVALID_ARGUMENT; %s", invalid, invalid, figure), lost)
}

// gzipBomb is a gzip body of n zero bytes: gzip members of bombMember
// zeros each (the last one shorter), which a gzip reader reads on as one
// stream. Each member is compressed once and repeated, so a bomb costs
// the test one member's compression, not n bytes' (under -race, most of
// the case's time).
func gzipBomb(n int64) []byte {
	member := func(n int64) []byte {
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		_, _ = io.CopyN(zw, zeros{}, n)
		_ = zw.Close()
		return b.Bytes()
	}
	full := member(min(n, bombMember))
	var b bytes.Buffer
	for ; n >= bombMember; n -= bombMember {
		b.Write(full)
	}
	if n > 0 {
		b.Write(member(n))
	}
	return b.Bytes()
}

// bombMember is the zeros of one gzip member of a bomb: more than the
// receiver's request limit (20 MiB unless set), so that the first member
// alone must be cut short while it inflates.
const bombMember = 32 << 20

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// A gzip bomb (a small body that inflates far past the request limit) is
// refused with a 4xx without inflating it whole; memory stays bounded and
// good requests go on being taken.
func TestGzipBomb(t *testing.T) {
	n := configure(t, Setup{})
	p := n.start(t)
	inflated := int64(size(256<<20, 4<<30))
	bomb := gzipBomb(inflated)
	l := newLedger()
	statuses := map[int]int{}
	for range size(4, 20) {
		req, _ := http.NewRequest("POST", "http://"+n.HTTP+"/v1/traces", bytes.NewReader(bomb))
		req.Header.Set("Content-Type", "application/x-protobuf")
		req.Header.Set("Content-Encoding", "gzip")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("bomb: %v", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		statuses[resp.StatusCode]++
		if resp.StatusCode < 400 || resp.StatusCode >= 500 {
			t.Errorf("a gzip bomb of %d bytes (%d MiB inflated) answered %d, want 4xx", len(bomb), inflated>>20, resp.StatusCode)
		}
		if code, _ := l.post(n.HTTP, "good", 5); code != 200 {
			t.Errorf("a good request after a bomb answered %d", code)
		}
	}
	e := p.Stop(t)
	figure := checkExit(t, p, e)
	lost := n.jsonl(t).Missing(l.Answered())
	report(t, fmt.Sprintf("bombs of %d KiB → %d MiB answered %v; %s", len(bomb)>>10, inflated>>20, statuses, figure), lost)
}
