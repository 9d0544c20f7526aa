package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/otelstep/otelstep/redact"
	"github.com/otelstep/otelstep/redact/redacttest"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// shown is otelstep's output as a test may print it: without the token,
// whatever otelstep did with it.
func shown(out string) string { return redact.New(testToken).Replace(out) }

// setupConfig is a config with a health endpoint, both OTLP listeners, a
// pull reader of otelstep's own metrics and a JSONL file, at the given
// places.
func setupConfig(t *testing.T, health, grpcAddr, httpAddr, pullPort, jsonl string) string {
	t.Helper()
	return writeConfig(t, t.TempDir(), jsonlConfig(health, `      grpc:
        endpoint: `+grpcAddr+`
      http:
        endpoint: `+httpAddr+`
`, jsonl, `  telemetry:
    metrics:
      readers:
      - pull:
          exporter:
            prometheus:
              host: 127.0.0.1
              port: `+pullPort+`
`))
}

// A port in use (either OTLP listener, the health endpoint, the pull
// reader) or a JSONL path that cannot be written is a setup error: exit 2,
// like a refused config, with a message that names what and where.
func TestSetupErrorsExit2(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	taken := busy.Addr().String()
	_, takenPort, _ := net.SplitHostPort(taken)
	dir := t.TempDir()
	jsonl := filepath.Join(dir, "traces.jsonl")
	// A file where the JSONL file's folder should be: not writable even
	// by root.
	notDir := filepath.Join(dir, "not-a-folder")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	free := func() string { return freePort(t) }
	freePull := func() string { _, p, _ := net.SplitHostPort(free()); return p }
	for _, tc := range []struct {
		name  string
		cfg   string
		wants []string
	}{
		{"OTLP/gRPC port in use", setupConfig(t, free(), taken, free(), freePull(), jsonl), []string{"OTLP/gRPC", taken, "address already in use"}},
		{"OTLP/HTTP port in use", setupConfig(t, free(), free(), taken, freePull(), jsonl), []string{"OTLP/HTTP", taken, "address already in use"}},
		{"health port in use", setupConfig(t, taken, free(), free(), freePull(), jsonl), []string{"health_check", taken, "address already in use"}},
		{"pull reader port in use", setupConfig(t, free(), free(), free(), takenPort, jsonl), []string{"readers[0]", "127.0.0.1:" + takenPort, "address already in use"}},
		{"JSONL path not writable", setupConfig(t, free(), free(), free(), freePull(), filepath.Join(notDir, "traces.jsonl")), []string{"file/traces", filepath.Join(notDir, "traces.jsonl")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := runBinary(t, []string{"OTEL_TOKEN=" + testToken}, "--config", tc.cfg)
			if code != 2 {
				t.Errorf("exit %d, want 2; output:\n%s", code, shown(out))
			}
			for _, w := range tc.wants {
				if !strings.Contains(out, w) {
					t.Errorf("the output does not name %q:\n%s", w, shown(out))
				}
			}
			if leak := redacttest.Leak(out, testToken); leak != "" {
				t.Errorf("the output holds %s", leak)
			}
		})
	}
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

// A gRPC export request that does not decode is INVALID_ARGUMENT (not to
// be sent again), naming what is wrong, from the binary.
func TestMalformedGRPCInvalidArgument(t *testing.T) {
	dir := t.TempDir()
	health, grpcAddr := freePort(t), freePort(t)
	_, pull, _ := net.SplitHostPort(freePort(t))
	cfg := setupConfig(t, health, grpcAddr, freePort(t), pull, filepath.Join(dir, "traces.jsonl"))
	startOtelstep(t, buildBinary(t), cfg, health, "OTEL_TOKEN="+testToken)
	cc, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	err = cc.Invoke(context.Background(), "/opentelemetry.proto.collector.trace.v1.TraceService/Export", rawBytes{0x0a, 0x05, 0x12},
		&coltracepb.ExportTraceServiceResponse{}, grpc.ForceCodecV2(rawCodec{}))
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "resource_spans[0]") {
		t.Errorf("a truncated request: %v, want InvalidArgument naming where", err)
	}
}
