package otlpin

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/klauspost/compress/gzip"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/otelstep/otelstep/internal/otlptest"
	"github.com/otelstep/otelstep/pipeline"
)

// releaser is a consumer that lets go of each batch at once, as the last
// sink does once it has encoded it: the request's pooled body and its
// bytes of the budget are given back within the request.
type releaser struct{}

func (releaser) Consume(_ context.Context, b *pipeline.Batch) error {
	b.Release()
	b.ResolveAcks(nil)
	return nil
}

// discardWriter is an http.ResponseWriter that keeps the status only.
type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(status int)      { w.status = status }

// benchHTTPTraces sends one OTLP/HTTP export of 100 spans shaped like
// `otelstep bench otlp`'s through the receiver's handler per iteration:
// the byte budget, the body (pooled when its size is known), the decode,
// the consumer and the answer; the socket and the sender are left out.
func benchHTTPTraces(b *testing.B, enc string) {
	const spans = 100
	body, err := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: otlptest.BenchSpans(spans)})
	if err != nil {
		b.Fatal(err)
	}
	if enc == "gzip" {
		var zb bytes.Buffer
		zw := gzip.NewWriter(&zb)
		_, _ = zw.Write(body)
		_ = zw.Close()
		body = zb.Bytes()
	}
	r, err := New(Options{HTTPEndpoint: "127.0.0.1:0", Traces: releaser{}})
	if err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/v1/traces", nil)
	req.Header.Set("Content-Type", ctProtobuf)
	if enc != "" {
		req.Header.Set("Content-Encoding", enc)
		req.ContentLength = -1 // as net/http has a compressed body of unknown size
	} else {
		req.ContentLength = int64(len(body))
	}
	rd := bytes.NewReader(body)
	req.Body = io.NopCloser(rd)
	w := &discardWriter{h: http.Header{}}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		rd.Reset(body)
		clear(w.h)
		w.status = 0
		r.serveHTTP(w, req)
		if w.status != http.StatusOK {
			b.Fatalf("status %d", w.status)
		}
	}
	b.ReportMetric(float64(b.N*spans)/b.Elapsed().Seconds(), "spans/s")
}

func BenchmarkHTTPTraces(b *testing.B)     { benchHTTPTraces(b, "") }
func BenchmarkHTTPTracesGzip(b *testing.B) { benchHTTPTraces(b, "gzip") }
