package faults

import (
	"bytes"
	"net"
	"net/http"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// The backend going down while it handles a request answers it: what it
// records is what it answered 200. Had it cut the connection after
// recording the items, the exporter, answered nothing, would rightly send
// them again, and a case would count them twice against otelstep.
func TestBackendDownAnswersWhatItTook(t *testing.T) {
	be := NewBackend(t)
	taken, answer := make(chan struct{}), make(chan struct{})
	be.mu.Lock()
	be.answering = func() { close(taken); <-answer }
	be.mu.Unlock()
	body, err := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{
			Name: "taken", TraceId: bytes.Repeat([]byte{1}, 16), SpanId: bytes.Repeat([]byte{2}, 8),
		}}}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	type answered struct {
		status int
		err    error
	}
	res := make(chan answered, 1)
	go func() {
		resp, err := http.Post(be.URL()+"/v1/traces", "application/x-protobuf", bytes.NewReader(body))
		if err != nil {
			res <- answered{err: err}
			return
		}
		resp.Body.Close()
		res <- answered{status: resp.StatusCode}
	}()
	<-taken // recorded, not answered yet
	down := make(chan struct{})
	go func() { be.Set(Down); close(down) }()
	waitFor(t, "the backend refusing connections", func() bool {
		c, err := net.Dial("tcp", be.Addr)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	close(answer)
	a := <-res
	<-down
	if got := be.Got().Spans["taken"]; got != 1 {
		t.Fatalf("the backend recorded the span %d times, want 1", got)
	}
	if a.err != nil || a.status != http.StatusOK {
		t.Errorf("the backend recorded the span but its sender got %d, %v: it would send it again", a.status, a.err)
	}
}
