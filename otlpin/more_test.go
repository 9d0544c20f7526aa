package otlpin

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/otelstep/otelstep/pipeline"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// OTLP/JSON carries ids in hex; they must arrive as the same bytes.
func TestHTTPJSONHexIDs(t *testing.T) {
	c := &rec{}
	r := start(t, Options{Traces: c})
	body := `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","parentSpanId":"","name":"j","kind":2,"startTimeUnixNano":"1700000000000000001"}]}]}]}`
	resp, out := post(t, r, "/v1/traces", "application/json", "", []byte(body))
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || string(bytes.TrimSpace(out)) != "{}" {
		t.Fatalf("got %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), out)
	}
	if len(c.bs) != 1 {
		t.Fatalf("%d batches", len(c.bs))
	}
	sp := firstSpan(t, c.bs[0])
	if hex.EncodeToString(sp.TraceId) != "5b8efff798038103d269b633813fc60c" || hex.EncodeToString(sp.SpanId) != "eee19b7ec3c1b174" || sp.StartTimeUnixNano != 1700000000000000001 || sp.Kind != 2 {
		t.Fatalf("span: %x %x %d %v", sp.TraceId, sp.SpanId, sp.StartTimeUnixNano, sp.Kind)
	}
}

func TestHTTPGzipProtobufAndMethod(t *testing.T) {
	c := &rec{}
	r := start(t, Options{Traces: c})
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	_, _ = zw.Write(goodTrace())
	_ = zw.Close()
	if resp, out := post(t, r, "/v1/traces", ctProtobuf, "gzip", zb.Bytes()); resp.StatusCode != 200 {
		t.Fatalf("gzip protobuf: %d %q", resp.StatusCode, out)
	}
	if len(c.bs) != 1 || firstSpan(t, c.bs[0]).Name != "s" {
		t.Fatal("gzip'd span not delivered")
	}
	resp, err := http.Get("http://" + r.HTTPAddr().String() + "/v1/traces")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 {
		t.Fatalf("GET: %d", resp.StatusCode)
	}
	if resp, _ := post(t, r, "/v1/traces", ctProtobuf, "br", goodTrace()); resp.StatusCode != 415 {
		t.Fatalf("unknown encoding: %d", resp.StatusCode)
	}
}

// A signal without a pipeline is refused, not swallowed.
func TestGRPCNoPipeline(t *testing.T) {
	r := start(t, Options{Traces: &rec{}})
	cc, err := grpc.NewClient(r.GRPCAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	_, err = collogspb.NewLogsServiceClient(cc).Export(context.Background(), &collogspb.ExportLogsServiceRequest{})
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("logs without a pipeline: %v", err)
	}
}

// Stopped pipelines answer retry-later too.
func TestStoppedIsRetryable(t *testing.T) {
	r := start(t, Options{Traces: pipeline.ConsumerFunc(func(context.Context, *pipeline.Batch) error { return pipeline.ErrStopped })})
	if resp, _ := post(t, r, "/v1/traces", ctProtobuf, "", goodTrace()); resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("stopped: %d", resp.StatusCode)
	}
}

// A body with a known length is read into exactly that; one that ends
// before its Content-Length is a 400 naming the read, and nothing reaches
// the pipeline. A chunked body (no length) still decodes.
func TestHTTPBodyLength(t *testing.T) {
	c := &rec{}
	r := start(t, Options{Traces: c, MaxRequestBytes: 1 << 20})
	body := goodTrace()

	conn, err := net.Dial("tcp", r.HTTPAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", ctProtobuf, len(body)+10)
	conn.Write(body)
	conn.(*net.TCPConn).CloseWrite()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	var st spb.Status
	if resp.StatusCode != http.StatusBadRequest || proto.Unmarshal(msg, &st) != nil || !strings.Contains(st.Message, "cannot read request body") {
		t.Fatalf("short body: %d %q", resp.StatusCode, st.Message)
	}
	c.mu.Lock()
	n := len(c.bs)
	c.mu.Unlock()
	if n != 0 {
		t.Fatalf("short body reached the pipeline: %d batches", n)
	}

	// Chunked: the reader hides the length from the client.
	req, _ := http.NewRequest(http.MethodPost, "http://"+r.HTTPAddr().String()+"/v1/traces", io.MultiReader(bytes.NewReader(body)))
	req.Header.Set("Content-Type", ctProtobuf)
	cresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	cresp.Body.Close()
	if cresp.StatusCode != 200 || req.ContentLength != 0 {
		t.Fatalf("chunked body: %d (ContentLength %d)", cresp.StatusCode, req.ContentLength)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.bs) != 1 || c.bs[0].Items != 1 {
		t.Fatalf("chunked body: %d batches", len(c.bs))
	}
}
