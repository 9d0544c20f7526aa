package otlpin

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/otelstep/otelstep/pipeline"
)

type rec struct {
	mu sync.Mutex
	bs []*pipeline.Batch
}

// firstSpan is the first span b received, as a message (the decoder keeps
// received spans as records).
func firstSpan(t *testing.T, b *pipeline.Batch) *tracepb.Span {
	t.Helper()
	spans, err := b.Traces[0].ScopeSpans[0].Messages()
	if err != nil || len(spans) == 0 {
		t.Fatalf("no span (%v)", err)
	}
	return spans[0]
}

func (c *rec) Consume(_ context.Context, b *pipeline.Batch) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bs = append(c.bs, b)
	b.ResolveAcks(nil) // as a JSONL file that wrote it
	return nil
}

func start(t *testing.T, o Options) *Receiver {
	t.Helper()
	o.GRPCEndpoint, o.HTTPEndpoint = "127.0.0.1:0", "127.0.0.1:0"
	r, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Shutdown(context.Background()) })
	return r
}

func post(t *testing.T, r *Receiver, path, ct, enc string, body []byte) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+r.HTTPAddr().String()+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", ct)
	if enc != "" {
		req.Header.Set("Content-Encoding", enc)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func goodTrace() []byte {
	b, _ := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{Name: "s"}}}}}}})
	return b
}

// exportGRPCTrace exports goodTrace to r over OTLP/gRPC and returns the
// call's error (its status).
func exportGRPCTrace(t *testing.T, r *Receiver) error {
	t.Helper()
	_, err := coltracepb.NewTraceServiceClient(dial(t, r)).Export(context.Background(), mustTrace(t))
	return err
}

func TestSDKTracesHTTP(t *testing.T) {
	c := &rec{}
	r := start(t, Options{Traces: c})
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithInsecure(), otlptracehttp.WithEndpoint(r.HTTPAddr().String()))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	_, sp := tp.Tracer("t").Start(context.Background(), "hello")
	sp.SetAttributes(attribute.String("k", "v"))
	sp.End()
	_ = tp.Shutdown(context.Background())
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.bs) != 1 || firstSpan(t, c.bs[0]).Name != "hello" {
		t.Fatalf("got %v", c.bs)
	}
}

func TestHTTPErrors(t *testing.T) {
	r := start(t, Options{Traces: &rec{}, MaxRequestBytes: 1 << 20})
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	_, _ = zw.Write(make([]byte, 8<<20))
	_ = zw.Close()
	cases := []struct {
		name, path, ct, enc string
		body                []byte
		want                int
	}{
		{"ok", "/v1/traces", ctProtobuf, "", goodTrace(), 200},
		{"bad proto", "/v1/traces", ctProtobuf, "", []byte{0xff, 0xff, 0xff}, 400},
		{"bomb", "/v1/traces", ctProtobuf, "gzip", gz.Bytes(), 413},
		{"oversized", "/v1/traces", ctProtobuf, "", make([]byte, 2<<20), 413},
		{"ct", "/v1/traces", "text/plain", "", goodTrace(), 415},
		{"nopipe", "/v1/logs", ctProtobuf, "", nil, 404},
		{"unknown", "/v1/x", ctProtobuf, "", nil, 404},
	}
	for _, tc := range cases {
		resp, body := post(t, r, tc.path, tc.ct, tc.enc, tc.body)
		if resp.StatusCode != tc.want {
			t.Errorf("%s: status %d want %d: %s", tc.name, resp.StatusCode, tc.want, body)
		}
		if tc.want == 400 {
			var st spb.Status
			if err := proto.Unmarshal(body, &st); err != nil || !strings.Contains(st.Message, "decode") {
				t.Errorf("%s: status body %v %v", tc.name, &st, err)
			}
		}
		if resp, _ := post(t, r, "/v1/traces", ctProtobuf, "", goodTrace()); resp.StatusCode != 200 {
			t.Errorf("after %s: not serving: %d", tc.name, resp.StatusCode)
		}
	}
}

func TestFull(t *testing.T) {
	r := start(t, Options{Traces: pipeline.ConsumerFunc(func(context.Context, *pipeline.Batch) error { return pipeline.ErrFull })})
	resp, _ := post(t, r, "/v1/traces", ctProtobuf, "", goodTrace())
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("got %d %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if err := exportGRPCTrace(t, r); status.Code(err) != codes.Unavailable {
		t.Fatalf("grpc: %v", err)
	}
}

func TestShutdownWaits(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	r := start(t, Options{DrainTimeout: time.Hour, Traces: pipeline.ConsumerFunc(func(_ context.Context, b *pipeline.Batch) error {
		close(entered)
		<-release
		b.ResolveAcks(nil)
		return nil
	})})
	got := make(chan int, 1)
	go func() {
		resp, _ := post(t, r, "/v1/traces", ctProtobuf, "", goodTrace())
		got <- resp.StatusCode
	}()
	<-entered
	done := make(chan error, 1)
	go func() { done <- r.Shutdown(context.Background()) }()
	select {
	case <-done:
		t.Fatal("Shutdown returned with a request in flight")
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if c := <-got; c != 200 {
		t.Fatalf("in-flight request got %d", c)
	}
}
