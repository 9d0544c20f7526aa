// Package livetest runs what a job's otelstep runs to deliver traces: a
// JSONL file sink and an OTLP/HTTP sink fed through a Fanout that tracks,
// in a delivery record the test opens, what the HTTP sink delivered. The
// replay and backfill tests drive it, each with its own record and
// backend.
package livetest

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/otelstep/otelstep/pipeline"
	"github.com/otelstep/otelstep/sink"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// Sinks is one run's file and HTTP sinks and the Fanout feeding them.
type Sinks struct {
	File  *sink.File
	HTTP  *sink.HTTP
	Fan   *sink.Fanout
	token string
}

// Start starts a run writing path and posting to endpoint with token;
// queue is the exporter's queue size. open opens the run's delivery
// record, once both sinks exist (as the service opens it).
func Start(t testing.TB, path, endpoint, token string, queue int, log *slog.Logger, open func() sink.DeliveryRecord) *Sinks {
	t.Helper()
	f, err := sink.NewFile(sink.FileOptions{Path: path, Signal: pipeline.Traces, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	h, err := sink.NewHTTP(sink.HTTPOptions{Endpoint: endpoint, Headers: map[string]string{"Authorization": "Bearer " + token},
		QueueSize: queue, Logger: log,
		Retry: sink.RetryOptions{Enabled: true, InitialInterval: time.Millisecond, MaxInterval: 5 * time.Millisecond, MaxElapsedTime: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	rec := open()
	s := &Sinks{File: f, HTTP: h, Fan: sink.NewFanout(f, h), token: token}
	s.Fan.Track(f, h, rec)
	for _, x := range []sink.Sink{f, h} {
		if err := x.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// Send hands the run a batch per span prefix-from .. prefix-(to-1).
func (s *Sinks) Send(t testing.TB, prefix string, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := s.Fan.Consume(context.Background(), TraceBatch(fmt.Sprintf("%s-%d", prefix, i), s.token)); err != nil {
			t.Fatal(err)
		}
	}
}

// Shutdown stops the sinks as the service does: the file, then the HTTP
// exporter (the record is the caller's to close).
func (s *Sinks) Shutdown(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.File.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.HTTP.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// TraceBatch is what the live pipeline hands the sinks: one span named
// name, its resource stamped with token (the resource processor's
// Authorization attribute, which the JSONL file does not keep).
func TraceBatch(name, token string) *pipeline.Batch {
	return &pipeline.Batch{Signal: pipeline.Traces, Items: 1, Traces: pipeline.TracesFromProto([]*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "svc"), str("Authorization", token)}},
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{
			Name: name, TraceId: bytes.Repeat([]byte{1}, 16), SpanId: []byte{1, 2, 3, 4, 5, 6, 7, 8},
			StartTimeUnixNano: 1, EndTimeUnixNano: 2,
		}}}},
	}})}
}

func str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// Arrived reports whether each span prefix-0..prefix-(n-1) is at least
// times in got (span counts by name).
func Arrived(got map[string]int, prefix string, n, times int) bool {
	for i := range n {
		if got[fmt.Sprintf("%s-%d", prefix, i)] < times {
			return false
		}
	}
	return true
}

// WantTimes requires each span prefix-0..prefix-(n-1) exactly times in got
// (span counts by name).
func WantTimes(t testing.TB, got map[string]int, prefix string, n, times int) {
	t.Helper()
	for i := range n {
		if c := got[fmt.Sprintf("%s-%d", prefix, i)]; c != times {
			t.Errorf("%s-%d arrived %d times, want %d", prefix, i, c, times)
		}
	}
}
