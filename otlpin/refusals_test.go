package otlpin

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/otelstep/otelstep/config"
	"github.com/otelstep/otelstep/pipeline"
	"github.com/otelstep/otelstep/telemetry"
)

// logRec keeps the records logged through it.
type logRec struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logRec) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRec) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r.Clone())
	return nil
}
func (l *logRec) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRec) WithGroup(string) slog.Handler      { return l }

// lines returns the records with msg at level, each as its attributes.
func (l *logRec) lines(level slog.Level, msg string) []map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]string
	for _, r := range l.recs {
		if r.Level != level || r.Message != msg {
			continue
		}
		m := map[string]string{}
		r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.String(); return true })
		out = append(out, m)
	}
	return out
}

const (
	firstRefusal = msgFirstRefusal
	stillRefused = msgStillRefused
)

// A client sends refused requests of several reasons, over both
// transports, several of each: each reason is logged once at WARN with the
// peer and the error (a secret in it redacted), the rest are reported once
// at shutdown with their count; every one is counted by signal, transport
// and reason, and Status shows them.
func TestRefusalsCountedAndLoggedOncePerReason(t *testing.T) {
	const secret = "Bearer s3cr3t-t0ken"
	tm, err := telemetry.New(config.Telemetry{}, telemetry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Shutdown(context.Background())
	logs := &logRec{}
	r := start(t, Options{Traces: &rec{}, Logger: slog.New(logs), Telemetry: tm.Receiver("otlp"), MaxRequestBytes: 1 << 10,
		RefusalReportPeriod: time.Hour, Redact: func(s string) string { return strings.ReplaceAll(s, secret, "<redacted>") }})

	const each = 3
	for range each {
		post(t, r, "/v1/nope", "application/x-protobuf", "", goodTrace())                          // 404 unknown_path
		post(t, r, "/v1/metrics", "application/x-protobuf", "", goodTrace())                       // 404 no_pipeline
		post(t, r, "/v1/traces", "text/plain", "", goodTrace())                                    // 415 content_type
		post(t, r, "/v1/traces", "application/x-protobuf", "br", goodTrace())                      // 415 content_encoding
		post(t, r, "/v1/traces", "application/x-protobuf", "", bytes.Repeat([]byte{1}, 2<<10))     // 413 too_large
		post(t, r, "/v1/traces", "application/x-protobuf", "gzip", []byte("not gzip"))             // 400 decompress
		post(t, r, "/v1/traces", "application/json", "", []byte(`{"resourceSpans":"`+secret+`"}`)) // 400 decode
		req, _ := http.NewRequest(http.MethodGet, "http://"+r.HTTPAddr().String()+"/v1/traces", nil)
		if resp, err := http.DefaultClient.Do(req); err != nil { // 405 method
			t.Fatal(err)
		} else {
			resp.Body.Close()
		}
	}
	cc := dial(t, r)
	bad := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{TraceId: id(15, 1)}}}}}}}
	for range each {
		if err := exportGRPC(cc, bad); status.Code(err) != codes.InvalidArgument { // decode over gRPC
			t.Fatalf("gRPC bad id: %v", err)
		}
		if err := exportGRPC(cc, goodRequest(pipeline.Logs)); status.Code(err) != codes.Unimplemented { // no_pipeline over gRPC
			t.Fatalf("gRPC logs: %v", err)
		}
	}
	big := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{okSpan(strings.Repeat("x", 5<<20))}}}}}}
	if err := exportGRPC(cc, big); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("gRPC too large: %v", err)
	}
	// gRPC answers a message over its size itself, in RecvMsg, before the
	// handler that counts the refusal has its error: the client can see
	// the answer before the count. Wait for the count, then check all.
	waitUntil(t, "the gRPC too-large refusal counted", func() bool {
		for _, f := range r.Status().Refused {
			if f.Reason == ReasonTooLarge {
				return f.Count == each+1
			}
		}
		return false
	})
	if resp, _ := post(t, r, "/v1/traces", "application/x-protobuf", "", goodTrace()); resp.StatusCode != 200 {
		t.Fatalf("a good request after: %d", resp.StatusCode)
	}

	reasons := map[Reason]int{ReasonUnknownPath: each, ReasonNoPipeline: 2 * each, ReasonContentType: each, ReasonContentEncoding: each,
		ReasonTooLarge: each + 1, ReasonDecompress: each, ReasonDecode: 2 * each, ReasonMethod: each}
	first := logs.lines(slog.LevelWarn, firstRefusal)
	seen := map[string]int{}
	for _, l := range first {
		seen[l["reason"]]++
		if l["remote"] == "" || !strings.HasPrefix(l["remote"], "127.0.0.1:") || l["error"] == "" || l["answer"] == "" {
			t.Errorf("first refusal without peer, answer or error: %v", l)
		}
	}
	for reason := range reasons {
		if seen[string(reason)] != 1 {
			t.Errorf("reason %s logged first %d times, want once", reason, seen[string(reason)])
		}
	}
	if len(first) != len(reasons) {
		t.Errorf("%d first-refusal lines, want %d: %v", len(first), len(reasons), first)
	}
	if n := len(logs.lines(slog.LevelWarn, stillRefused)); n != 0 {
		t.Errorf("%d reports before the period ended", n)
	}

	st := r.Status()
	if st.HTTPEndpoint != r.HTTPAddr().String() || st.GRPCEndpoint != r.GRPCAddr().String() {
		t.Errorf("status endpoints %q %q", st.HTTPEndpoint, st.GRPCEndpoint)
	}
	got := map[Reason]uint64{}
	for _, f := range st.Refused {
		got[f.Reason] = f.Count
	}
	for reason, n := range reasons {
		if got[reason] != uint64(n) {
			t.Errorf("status: %s refused %d times, want %d", reason, got[reason], n)
		}
	}
	if st.LastRefusal == nil || st.LastRefusal.Reason != ReasonTooLarge || st.LastRefusal.Transport != "grpc" {
		t.Errorf("last refusal %+v, want the gRPC too_large", st.LastRefusal)
	}
	var accepted uint64
	for _, a := range st.Accepted {
		if a.Signal == "traces" && a.Transport == "http" {
			accepted = a.Requests
		}
	}
	if accepted != 1 {
		t.Errorf("status: %d traces requests accepted over HTTP, want 1: %+v", accepted, st.Accepted)
	}

	rw := httptest.NewRecorder()
	tm.Handler().ServeHTTP(rw, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	page := rw.Body.String()
	for _, w := range []string{
		`otelstep_receiver_refused_requests_total{reason="content_type",receiver="otlp",signal="traces",transport="http"} 3`,
		`otelstep_receiver_refused_requests_total{reason="unknown_path",receiver="otlp",signal="unknown",transport="http"} 3`,
		`otelstep_receiver_refused_requests_total{reason="decode",receiver="otlp",signal="traces",transport="grpc"} 3`,
		`otelstep_receiver_refused_requests_total{reason="no_pipeline",receiver="otlp",signal="logs",transport="grpc"} 3`,
		`otelstep_receiver_refused_requests_total{reason="too_large",receiver="otlp",signal="traces",transport="grpc"} 1`,
	} {
		if !strings.Contains(page, w+"\n") {
			t.Errorf("no %s in the metrics", w)
		}
	}

	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	reports := logs.lines(slog.LevelWarn, stillRefused)
	if len(reports) != len(reasons) {
		t.Errorf("%d reports at shutdown, want one per reason (%d): %v", len(reports), len(reasons), reports)
	}
	for _, l := range reports {
		if want := fmt.Sprint(reasons[Reason(l["reason"])] - 1); l["count"] != want {
			t.Errorf("report of %s: count %s, want %s", l["reason"], l["count"], want)
		}
	}
	logs.mu.Lock()
	defer logs.mu.Unlock()
	for _, rec := range logs.recs {
		rec.Attrs(func(a slog.Attr) bool {
			if strings.Contains(a.Value.String(), "s3cr3t") {
				t.Errorf("the secret in a log line: %s=%s", a.Key, a.Value)
			}
			return true
		})
	}
}

// After the first line of a reason, at most one line a period, with the
// count since the last, and none while nothing new is refused.
func TestRefusalReportsPeriodic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &logRec{}
		rf := newRefusals(slog.New(logs), msgFirstRefusal, msgStillRefused)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); runReports(ctx, time.Minute, rf) }()
		refuse := func(n int, reason Reason) {
			for range n {
				rf.add(refusal{signal: "traces", tr: telemetry.HTTP, reason: reason, remote: "127.0.0.1:1", answer: "HTTP 400", err: "bad"}, time.Now())
			}
		}
		counts := func() []string {
			var out []string
			for _, l := range logs.lines(slog.LevelWarn, stillRefused) {
				out = append(out, l["reason"]+"="+l["count"])
			}
			return out
		}
		refuse(5, ReasonDecode)
		refuse(1, ReasonMethod)
		if n := len(logs.lines(slog.LevelWarn, firstRefusal)); n != 2 {
			t.Fatalf("%d first lines, want 2", n)
		}
		time.Sleep(time.Minute + time.Second)
		synctest.Wait()
		if got := fmt.Sprint(counts()); got != "[decode=4]" {
			t.Fatalf("after a period: %s, want [decode=4]", got)
		}
		time.Sleep(10 * time.Minute) // nothing new: nothing logged
		synctest.Wait()
		if got := fmt.Sprint(counts()); got != "[decode=4]" {
			t.Fatalf("quiet periods logged: %s", got)
		}
		refuse(2, ReasonMethod)
		refuse(1, ReasonDecode)
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := fmt.Sprint(counts()); got != "[decode=4 decode=1 method=2]" {
			t.Fatalf("after new refusals: %s", got)
		}
		refuse(3, ReasonMethod)
		cancel()
		<-done
		if got := fmt.Sprint(counts()); got != "[decode=4 decode=1 method=2 method=3]" {
			t.Fatalf("at the end: %s", got)
		}
		if n := len(logs.lines(slog.LevelWarn, firstRefusal)); n != 2 {
			t.Fatalf("%d first lines, want 2", n)
		}
	})
}

// A reason's first report comes a period after its first WARN, however
// long after the receiver's start that was (a ticker from the start would
// report it up to a period early, seconds after the WARN), and the next a
// period after that report.
func TestRefusalReportAPeriodAfterTheWarn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &logRec{}
		rf := newRefusals(slog.New(logs), msgFirstRefusal, msgStillRefused)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); runReports(ctx, time.Minute, rf) }()
		defer func() { cancel(); <-done }()
		refuse := func(n int) {
			for range n {
				rf.add(refusal{signal: "logs", tr: telemetry.GRPC, reason: ReasonDecode, remote: "127.0.0.1:1", answer: "gRPC InvalidArgument", err: "bad"}, time.Now())
			}
		}
		reports := func() int { return len(logs.lines(slog.LevelWarn, stillRefused)) }
		time.Sleep(50 * time.Second)
		refuse(3) // the WARN, then two to report
		synctest.Wait()
		time.Sleep(time.Minute - time.Second)
		synctest.Wait()
		if n := reports(); n != 0 {
			t.Fatalf("%d reports less than a period after the WARN, want 0", n)
		}
		refuse(1)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		lines := logs.lines(slog.LevelWarn, stillRefused)
		if len(lines) != 1 || lines[0]["count"] != "3" || lines[0]["within"] != "1m0s" {
			t.Fatalf("a period after the WARN: %v, want one report of 3 within 1m0s", lines)
		}
		refuse(2)
		time.Sleep(time.Minute - 2*time.Second)
		synctest.Wait()
		if n := reports(); n != 1 {
			t.Fatalf("%d reports less than a period after the last, want 1", n)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if lines := logs.lines(slog.LevelWarn, stillRefused); len(lines) != 2 || lines[1]["count"] != "2" {
			t.Fatalf("a period after the report: %v, want a second report of 2", lines)
		}
	})
}
