package fakebackend

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"net/http"
	"syscall"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

func traces(ids ...byte) *coltracepb.ExportTraceServiceRequest {
	var spans []*tracepb.Span
	for _, id := range ids {
		spans = append(spans, &tracepb.Span{TraceId: bytes.Repeat([]byte{id}, 16), SpanId: bytes.Repeat([]byte{id}, 8), Name: "s"})
	}
	return &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}}}}}
}

func post(t *testing.T, url, encoding, ct string, body []byte) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ct)
	if encoding != "" {
		req.Header.Set("Content-Encoding", encoding)
	}
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
	}
	return resp, err
}

// Bodies in each encoding, protobuf and JSON, are decoded and their spans
// recorded by id; one the backend cannot decode is answered 400 and
// recorded with why.
func TestDecodesEveryEncoding(t *testing.T) {
	b := New(t)
	raw, _ := proto.Marshal(traces(1, 2))
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(raw)
	_ = zw.Close()
	enc, _ := zstd.NewWriter(nil)
	zs := enc.EncodeAll(raw, nil)
	js, _ := protojson.Marshal(traces(3))
	for _, c := range []struct {
		enc, ct string
		body    []byte
	}{{"", "application/x-protobuf", raw}, {"gzip", "application/x-protobuf", gz.Bytes()}, {"zstd", "application/x-protobuf", zs},
		{"snappy", "application/x-protobuf", snappy.Encode(nil, raw)}, {"", "application/json", js}} {
		resp, err := post(t, b.URL()+"/v1/traces", c.enc, c.ct, c.body)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%q %s: %v %v", c.enc, c.ct, resp, err)
		}
	}
	if resp, err := post(t, b.URL()+"/v1/traces", "gzip", "application/x-protobuf", raw); err != nil || resp.StatusCode != 400 {
		t.Fatalf("a body not gzip: %v %v", resp, err)
	}
	b.WaitRequests(t, 6)
	if n := len(b.Accepted()); n != 5 {
		t.Fatalf("%d accepted", n)
	}
	if last := b.Requests()[5]; last.DecodeErr == nil || last.Status != 400 || last.WireBytes != len(raw) {
		t.Fatalf("the bad request: %+v", last)
	}
	if s := b.Spans(); len(s) != 3 || s["0101010101010101"] == nil || s["0303030303030303"] == nil || b.Items() != 9 {
		t.Fatalf("spans %v, items %d", s, b.Items())
	}
}

// Scripted answers: a status with Retry-After, then a hung request that
// the client's ctx ends, then down (refused) and up again on the same port.
func TestScriptedAnswers(t *testing.T) {
	b := New(t)
	raw, _ := proto.Marshal(traces(1))
	b.AnswerAll(Reply{Status: 503, RetryAfter: "7"})
	resp, err := post(t, b.URL()+"/v1/traces", "", "application/x-protobuf", raw)
	if err != nil || resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "7" {
		t.Fatalf("503: %v %v", resp, err)
	}
	b.Answer(func(r *Request) Reply { return Reply{Hang: true} })
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		b.WaitRequests(t, 2)
		cancel()
	}()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, b.URL()+"/v1/traces", bytes.NewReader(raw))
	if _, err := http.DefaultClient.Do(req); !errors.Is(err, context.Canceled) {
		t.Fatalf("hung request: %v", err)
	}
	b.Answer(nil)
	b.Down()
	if _, err := post(t, b.URL()+"/v1/traces", "", "application/x-protobuf", raw); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("down: %v", err)
	}
	if err := b.Up(); err != nil {
		t.Fatal(err)
	}
	if resp, err := post(t, b.URL()+"/v1/traces", "", "application/x-protobuf", raw); err != nil || resp.StatusCode != 200 {
		t.Fatalf("up again: %v %v", resp, err)
	}
	got := []int{}
	for _, r := range b.Requests() {
		got = append(got, r.Status)
	}
	if len(got) != 3 || got[0] != 503 || got[1] != 0 || got[2] != 200 {
		t.Fatalf("statuses %v", got)
	}
}

func TestStampedOnce(t *testing.T) {
	kv := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	svc := kv("service.name", "svc")
	for name, c := range map[string]struct {
		attrs []*commonpb.KeyValue
		want  bool
	}{
		"once":            {[]*commonpb.KeyValue{svc, kv("Authorization", "tok")}, true},
		"missing":         {[]*commonpb.KeyValue{svc}, false},
		"twice":           {[]*commonpb.KeyValue{kv("Authorization", "tok"), kv("Authorization", "tok")}, false},
		"other spelling":  {[]*commonpb.KeyValue{kv("Authorization", "tok"), kv("authorization", "tok")}, false},
		"only lower case": {[]*commonpb.KeyValue{kv("authorization", "tok")}, false},
		"another value":   {[]*commonpb.KeyValue{kv("Authorization", "other")}, false},
		"no resource":     {nil, false},
	} {
		res := &resourcepb.Resource{Attributes: c.attrs}
		if c.attrs == nil {
			res = nil
		}
		if got := StampedOnce(res, "tok"); got != c.want {
			t.Errorf("%s: StampedOnce = %v, want %v", name, got, c.want)
		}
	}
}
