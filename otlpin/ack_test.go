package otlpin

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/otelstep/otelstep/pipeline"
)

// holder takes every batch and hands it to the test, which resolves its
// acks as a JSONL file sink would once it wrote (or failed to write) it.
type holder struct {
	got chan *pipeline.Batch
}

func (h *holder) Consume(_ context.Context, b *pipeline.Batch) error {
	b.Release()
	h.got <- b
	return nil
}

// A request is answered OK only once its batch's acks are resolved: the
// answer waits for the write, not for the hand-off.
func TestAnswerWaitsForAck(t *testing.T) {
	h := &holder{got: make(chan *pipeline.Batch, 1)}
	r := start(t, Options{Traces: h})
	answered := make(chan int, 1)
	go func() {
		resp, _ := post(t, r, "/v1/traces", ctProtobuf, "", goodTrace())
		answered <- resp.StatusCode
	}()
	b := <-h.got
	if len(b.Acks) != 1 {
		t.Fatalf("batch has %d acks, want the request's one", len(b.Acks))
	}
	select {
	case code := <-answered:
		t.Fatalf("answered %d before the batch was written", code)
	default:
	}
	b.ResolveAcks(nil)
	if code := <-answered; code != 200 {
		t.Fatalf("answered %d once written, want 200", code)
	}
}

// A batch the JSONL cannot take (its ack failed) is "retry later" on both
// transports: HTTP 503 with Retry-After, gRPC UNAVAILABLE.
func TestAckFailedIsRetryLater(t *testing.T) {
	h := &holder{got: make(chan *pipeline.Batch, 1)}
	r := start(t, Options{Traces: h})
	writeErr := errors.New("writing traces.jsonl: file too large")
	go func() {
		for b := range h.got {
			b.ResolveAcks(writeErr)
		}
	}()
	defer close(h.got)
	resp, body := post(t, r, "/v1/traces", ctProtobuf, "", goodTrace())
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("HTTP: got %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if err := exportGRPCTrace(t, r); status.Code(err) != codes.Unavailable {
		t.Fatalf("gRPC: %v, want UNAVAILABLE", err)
	}
}

// A batch never written within ConsumeTimeout is "retry later" too.
func TestAckTimeoutIsRetryLater(t *testing.T) {
	h := &holder{got: make(chan *pipeline.Batch, 1)}
	r := start(t, Options{Traces: h, ConsumeTimeout: 1})
	resp, body := post(t, r, "/v1/traces", ctProtobuf, "", goodTrace())
	if resp.StatusCode != 503 {
		t.Fatalf("got %d %s, want 503", resp.StatusCode, body)
	}
	<-h.got
}
