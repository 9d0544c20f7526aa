package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// A client in the job sends refused requests of several reasons, three of
// each, over OTLP/HTTP and OTLP/gRPC, the token in their headers and in a
// body that does not decode. At the default level the log holds one WARN
// per reason, naming the peer and the error, and at the stop one count per
// reason of the rest; the status document and the metrics count every
// one; a good export still succeeds; the token appears nowhere.
func TestRefusedRequestsCountedAndLogged(t *testing.T) {
	dir := t.TempDir()
	health, grpcAddr, httpAddr := freePort(t), freePort(t), freePort(t)
	cfgPath := writeConfig(t, dir, jsonlConfig(health, `      grpc:
        endpoint: `+grpcAddr+`
      http:
        endpoint: `+httpAddr+`
        max_request_body_size: 4096
`, filepath.Join(dir, "traces.jsonl"), ""))
	p := startOtelstep(t, buildBinary(t), cfgPath, health, "OTEL_TOKEN="+testToken)

	good, _ := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{
		Spans: []*tracepb.Span{{TraceId: bytes.Repeat([]byte{1}, 16), SpanId: bytes.Repeat([]byte{2}, 8), Name: "s"}}}}}}})
	send := func(method, path, ct, enc string, body []byte, want int) {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+httpAddr+path, bytes.NewReader(body))
		req.Header.Set("Content-Type", ct)
		req.Header.Set("Authorization", testToken)
		if enc != "" {
			req.Header.Set("Content-Encoding", enc)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("%s %s %s: %d, want %d", method, path, ct, resp.StatusCode, want)
		}
	}
	cc, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	badID := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{
		Spans: []*tracepb.Span{{TraceId: bytes.Repeat([]byte{1}, 15), SpanId: bytes.Repeat([]byte{2}, 8)}}}}}}}
	const each = 3
	for range each {
		send(http.MethodPost, "/v1/nope", "application/x-protobuf", "", good, 404)
		send(http.MethodPost, "/v1/metrics", "application/x-protobuf", "", good, 404)
		send(http.MethodGet, "/v1/traces", "application/x-protobuf", "", nil, 405)
		send(http.MethodPost, "/v1/traces", "text/plain", "", good, 415)
		send(http.MethodPost, "/v1/traces", "application/x-protobuf", "br", good, 415)
		send(http.MethodPost, "/v1/traces", "application/x-protobuf", "", bytes.Repeat([]byte{0}, 8192), 413)
		send(http.MethodPost, "/v1/traces", "application/x-protobuf", "gzip", []byte("not gzip"), 400)
		send(http.MethodPost, "/v1/traces", "application/json", "", []byte(`{"resourceSpans":[{"x":"`+testToken+`"`), 400)
		ctx := context.Background()
		if _, err := coltracepb.NewTraceServiceClient(cc).Export(ctx, badID); status.Code(err) != codes.InvalidArgument {
			t.Fatalf("gRPC bad trace id: %v", err)
		}
		if _, err := collogspb.NewLogsServiceClient(cc).Export(ctx, &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{}}}); status.Code(err) != codes.Unimplemented {
			t.Fatalf("gRPC logs: %v", err)
		}
	}
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithInsecure(), otlptracehttp.WithEndpoint(httpAddr))
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.ExportSpans(context.Background(), tracetest.SpanStubs{{Name: "good"}}.Snapshots()); err != nil {
		t.Fatalf("a good export among the refused: %v", err)
	}
	_ = exp.Shutdown(context.Background())

	// reason -> how many were refused
	reasons := map[string]int{"unknown_path": each, "no_pipeline": 2 * each, "method": each, "content_type": each,
		"content_encoding": each, "too_large": each, "decompress": each, "decode": 2 * each}

	resp, err := http.Get("http://" + health + "/status")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var doc struct {
		Healthy    bool
		Components map[string]struct {
			Components map[string]struct {
				Details struct {
					Refused []struct {
						Reason string
						Count  int
					}
					Accepted []struct {
						Signal, Transport string
						Items             int
					}
				}
			}
		}
	}
	if err := json.Unmarshal(raw, &doc); err != nil || resp.StatusCode != 200 || !doc.Healthy {
		t.Fatalf("status: %d %v\n%s", resp.StatusCode, err, raw)
	}
	rcv := doc.Components["pipeline:traces"].Components["receiver:otlp"].Details
	shown := map[string]int{}
	for _, r := range rcv.Refused {
		shown[r.Reason] = r.Count
	}
	if fmt.Sprint(shown) != fmt.Sprint(reasons) {
		t.Errorf("status document's refusals %v, want %v", shown, reasons)
	}
	resp, err = http.Get("http://" + health + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, w := range []string{
		`otelstep_receiver_refused_requests_total{reason="too_large",receiver="otlp",signal="traces",transport="http"} 3`,
		`otelstep_receiver_refused_requests_total{reason="decode",receiver="otlp",signal="traces",transport="grpc"} 3`,
		`otelstep_receiver_refused_requests_total{reason="no_pipeline",receiver="otlp",signal="logs",transport="grpc"} 3`,
		`otelstep_receiver_refused_requests_total{reason="unknown_path",receiver="otlp",signal="unknown",transport="http"} 3`,
	} {
		if !strings.Contains(string(page), w) {
			t.Errorf("no %s in /metrics", w)
		}
	}

	p.Stop(t)
	log := p.Out.String()
	first := regexp.MustCompile(`level=WARN msg="OTLP request refused; [^"]*" receiver=otlp reason=(\w+) .*remote=127\.0\.0\.1:\d+ answer="[^"]+" error=.+`)
	still := regexp.MustCompile(`level=WARN msg="OTLP requests still refused" receiver=otlp reason=(\w+) count=(\d+) `)
	firsts, counts := map[string]int{}, map[string]int{}
	for _, line := range strings.Split(log, "\n") {
		if m := first.FindStringSubmatch(line); m != nil {
			firsts[m[1]]++
		}
		if m := still.FindStringSubmatch(line); m != nil {
			var n int
			fmt.Sscan(m[2], &n)
			counts[m[1]] += n
		}
	}
	for reason, n := range reasons {
		if firsts[reason] != 1 || counts[reason] != n-1 {
			t.Errorf("%s: %d first lines (want 1), %d counted after (want %d)", reason, firsts[reason], counts[reason], n-1)
		}
	}
	if n := strings.Count(log, "level=WARN"); n != 2*len(reasons) {
		t.Errorf("%d WARN lines, want %d (a first line and a count per reason):\n%s", n, 2*len(reasons), log)
	}
	assertNoToken(t, dir, cfgPath, log)
	if t.Failed() {
		t.Logf("log:\n%s", log)
	}
}
