package otlpin

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/otelstep/otelstep/otlpwire"
	"github.com/otelstep/otelstep/pipeline"
)

func id(n int, b byte) []byte { return bytes.Repeat([]byte{b}, n) }

// okSpan is a span with good ids.
func okSpan(name string) *tracepb.Span {
	return &tracepb.Span{TraceId: id(16, 1), SpanId: id(8, 2), ParentSpanId: id(8, 3), Name: name,
		Links: []*tracepb.Span_Link{{TraceId: id(16, 4), SpanId: id(8, 5)}}}
}

// badRequest is one export request with an id the collector refuses, beside
// good items: the bad item is the second of its scope.
type badRequest struct {
	name    string
	sig     pipeline.Signal
	msg     proto.Message
	protoAt string // the error path in protobuf
	jsonAt  string // and in OTLP/JSON
	what    string // "trace id" or "span id"
	n       int    // the bad id's length in bytes
}

// lengthIs is what the error says of the bad id: its length in bytes, or in
// hex digits for OTLP/JSON.
func (b badRequest) lengthIs(json bool) string {
	if json {
		return b.what + " of " + strconv.Itoa(2*b.n) + " hex digits, must be "
	}
	return b.what + " of " + strconv.Itoa(b.n) + " bytes, must be "
}

func badRequests() []badRequest {
	traces := func(bad func(*tracepb.Span)) proto.Message {
		s := okSpan("bad")
		bad(s)
		return &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{
			{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{okSpan("good"), s}}}}}}
	}
	logs := func(bad func(*logspb.LogRecord)) proto.Message {
		r := &logspb.LogRecord{TraceId: id(16, 1), SpanId: id(8, 2)}
		bad(r)
		return &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{
			{ScopeLogs: []*logspb.ScopeLogs{{LogRecords: []*logspb.LogRecord{{TraceId: id(16, 1)}, r}}}}}}
	}
	metrics := func(bad func(*metricspb.Exemplar)) proto.Message {
		e := &metricspb.Exemplar{TraceId: id(16, 1), SpanId: id(8, 2)}
		bad(e)
		return &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{
			{ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{{Name: "g", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{
				DataPoints: []*metricspb.NumberDataPoint{{Value: &metricspb.NumberDataPoint_AsInt{AsInt: 1}, Exemplars: []*metricspb.Exemplar{{}, e}}}}}}}}}}}}
	}
	const sp, spJ = "resource_spans[0].scope_spans[0].spans[1].", "resourceSpans[0].scopeSpans[0].spans[1]."
	return []badRequest{
		{"span trace id of 15 bytes", pipeline.Traces, traces(func(s *tracepb.Span) { s.TraceId = id(15, 9) }), sp + "trace_id", spJ + "traceId", "trace id", 15},
		{"span trace id of 17 bytes", pipeline.Traces, traces(func(s *tracepb.Span) { s.TraceId = id(17, 9) }), sp + "trace_id", spJ + "traceId", "trace id", 17},
		{"span id of 7 bytes", pipeline.Traces, traces(func(s *tracepb.Span) { s.SpanId = id(7, 9) }), sp + "span_id", spJ + "spanId", "span id", 7},
		{"span id of 9 bytes", pipeline.Traces, traces(func(s *tracepb.Span) { s.SpanId = id(9, 9) }), sp + "span_id", spJ + "spanId", "span id", 9},
		{"parent span id of 16 bytes", pipeline.Traces, traces(func(s *tracepb.Span) { s.ParentSpanId = id(16, 9) }), sp + "parent_span_id", spJ + "parentSpanId", "span id", 16},
		{"link trace id of 8 bytes", pipeline.Traces, traces(func(s *tracepb.Span) { s.Links[0].TraceId = id(8, 9) }), sp + "links[0].trace_id", spJ + "links[0].traceId", "trace id", 8},
		{"link span id of 1 byte", pipeline.Traces, traces(func(s *tracepb.Span) { s.Links[0].SpanId = id(1, 9) }), sp + "links[0].span_id", spJ + "links[0].spanId", "span id", 1},
		{"log record trace id of 15 bytes", pipeline.Logs, logs(func(r *logspb.LogRecord) { r.TraceId = id(15, 9) }),
			"resource_logs[0].scope_logs[0].log_records[1].trace_id", "resourceLogs[0].scopeLogs[0].logRecords[1].traceId", "trace id", 15},
		{"log record span id of 9 bytes", pipeline.Logs, logs(func(r *logspb.LogRecord) { r.SpanId = id(9, 9) }),
			"resource_logs[0].scope_logs[0].log_records[1].span_id", "resourceLogs[0].scopeLogs[0].logRecords[1].spanId", "span id", 9},
		{"exemplar trace id of 17 bytes", pipeline.Metrics, metrics(func(e *metricspb.Exemplar) { e.TraceId = id(17, 9) }),
			"resource_metrics[0].scope_metrics[0].metrics[0].gauge.data_points[0].exemplars[1].trace_id",
			"resourceMetrics[0].scopeMetrics[0].metrics[0].gauge.dataPoints[0].exemplars[1].traceId", "trace id", 17},
		{"exemplar span id of 4 bytes", pipeline.Metrics, metrics(func(e *metricspb.Exemplar) { e.SpanId = id(4, 9) }),
			"resource_metrics[0].scope_metrics[0].metrics[0].gauge.data_points[0].exemplars[1].span_id",
			"resourceMetrics[0].scopeMetrics[0].metrics[0].gauge.dataPoints[0].exemplars[1].spanId", "span id", 4},
	}
}

// jsonOf is the OTLP/JSON of an export request (hex ids, of any length).
func jsonOf(m proto.Message) []byte {
	switch m := m.(type) {
	case *coltracepb.ExportTraceServiceRequest:
		return otlpwire.AppendTraces(nil, pipeline.TracesFromProto(m.ResourceSpans))
	case *collogspb.ExportLogsServiceRequest:
		return otlpwire.AppendLogs(nil, pipeline.LogsFromProto(m.ResourceLogs))
	case *colmetricspb.ExportMetricsServiceRequest:
		return otlpwire.AppendMetrics(nil, m.ResourceMetrics)
	}
	panic("not an export request")
}

func exportGRPC(cc *grpc.ClientConn, m proto.Message) error {
	ctx := context.Background()
	var err error
	switch m := m.(type) {
	case *coltracepb.ExportTraceServiceRequest:
		_, err = coltracepb.NewTraceServiceClient(cc).Export(ctx, m)
	case *collogspb.ExportLogsServiceRequest:
		_, err = collogspb.NewLogsServiceClient(cc).Export(ctx, m)
	case *colmetricspb.ExportMetricsServiceRequest:
		_, err = colmetricspb.NewMetricsServiceClient(cc).Export(ctx, m)
	}
	return err
}

func pathOf(s pipeline.Signal) string { return "/v1/" + s.String() }

// goodRequest is a request of signal s with good ids.
func goodRequest(s pipeline.Signal) proto.Message {
	switch s {
	case pipeline.Traces:
		return &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{okSpan("after")}}}}}}
	case pipeline.Logs:
		return &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{ScopeLogs: []*logspb.ScopeLogs{{LogRecords: []*logspb.LogRecord{{TraceId: id(16, 1), SpanId: id(8, 1)}}}}}}}
	}
	return &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{{ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{
		{Name: "g", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: []*metricspb.NumberDataPoint{{Value: &metricspb.NumberDataPoint_AsInt{AsInt: 1},
			Exemplars: []*metricspb.Exemplar{{TraceId: id(16, 1), SpanId: id(8, 1)}}}}}}}}}}}}}
}

// A request with a trace or span id of a length the collector refuses is
// refused whole, over OTLP/HTTP (protobuf and JSON: 400, a google.rpc.Status
// of INVALID_ARGUMENT) and OTLP/gRPC (INVALID_ARGUMENT), naming the field
// and where it is; nothing of it reaches the pipeline, and a good request
// after it is taken.
func TestBadIDsRefused(t *testing.T) {
	recs := map[pipeline.Signal]*rec{pipeline.Traces: {}, pipeline.Logs: {}, pipeline.Metrics: {}}
	r := start(t, Options{Traces: recs[pipeline.Traces], Logs: recs[pipeline.Logs], Metrics: recs[pipeline.Metrics]})
	cc := dial(t, r)
	delivered := func(s pipeline.Signal) int {
		c := recs[s]
		c.mu.Lock()
		defer c.mu.Unlock()
		n := len(c.bs)
		for _, b := range c.bs {
			b.Release()
		}
		c.bs = nil
		return n
	}
	for _, bad := range badRequests() {
		for _, via := range []string{"http protobuf", "http json", "grpc"} {
			var msg string
			switch via {
			case "grpc":
				err := exportGRPC(cc, bad.msg)
				if status.Code(err) != codes.InvalidArgument {
					t.Errorf("%s over %s: %v, want InvalidArgument", bad.name, via, err)
					continue
				}
				msg = status.Convert(err).Message()
			default:
				ct, body, want := ctProtobuf, marshalT(t, bad.msg), bad.protoAt+": "+bad.lengthIs(false)
				if via == "http json" {
					ct, body, want = ctJSON, jsonOf(bad.msg), bad.jsonAt+": at byte "
				}
				resp, out := post(t, r, pathOf(bad.sig), ct, "", body)
				var st spb.Status
				var err error
				if ct == ctJSON {
					err = protojson.Unmarshal(out, &st)
				} else {
					err = proto.Unmarshal(out, &st)
				}
				if resp.StatusCode != http.StatusBadRequest || err != nil || st.Code != int32(codes.InvalidArgument) {
					t.Errorf("%s over %s: %d %v (%v), want 400 INVALID_ARGUMENT", bad.name, via, resp.StatusCode, &st, err)
					continue
				}
				msg = st.Message
				if !strings.Contains(msg, want) || via == "http json" && !strings.Contains(msg, bad.lengthIs(true)) {
					t.Errorf("%s over %s: message %q does not name %q", bad.name, via, msg, want)
				}
			}
			if via == "grpc" && !strings.Contains(msg, bad.protoAt+": "+bad.lengthIs(false)) {
				t.Errorf("%s over %s: message %q does not name %q", bad.name, via, msg, bad.protoAt+": "+bad.lengthIs(false))
			}
			if n := delivered(bad.sig); n != 0 {
				t.Errorf("%s over %s: %d batches delivered", bad.name, via, n)
			}
			// A good request is still taken, on the same transport.
			good := goodRequest(bad.sig)
			if via == "grpc" {
				if err := exportGRPC(cc, good); err != nil {
					t.Errorf("after %s over %s: %v", bad.name, via, err)
				}
			} else {
				ct, body := ctProtobuf, marshalT(t, good)
				if via == "http json" {
					ct, body = ctJSON, jsonOf(good)
				}
				if resp, out := post(t, r, pathOf(bad.sig), ct, "", body); resp.StatusCode != http.StatusOK {
					t.Errorf("after %s over %s: %d %s", bad.name, via, resp.StatusCode, out)
				}
			}
			if n := delivered(bad.sig); n != 1 {
				t.Errorf("after %s over %s: %d batches delivered, want 1", bad.name, via, n)
			}
		}
	}
}

// OTLP/JSON ids are counted in hex digits: 31 (odd) and 30 are refused for a
// trace id, as 15 and 17 for a span id.
func TestBadHexIDsRefused(t *testing.T) {
	c := &rec{}
	r := start(t, Options{Traces: c})
	for _, tc := range []struct{ span, want string }{
		{`{"traceId":"` + strings.Repeat("a", 31) + `","spanId":"0102030405060708"}`, "traceId: at byte 70: trace id of 31 hex digits, an odd number of hex digits, must be 32 hex digits (16 bytes) or empty"},
		{`{"traceId":"` + strings.Repeat("a", 30) + `"}`, "traceId: at byte 70: trace id of 30 hex digits, must be 32 hex digits (16 bytes) or empty"},
		{`{"spanId":"` + strings.Repeat("b", 15) + `"}`, "spanId: at byte 69: span id of 15 hex digits, an odd number of hex digits, must be 16 hex digits (8 bytes) or empty"},
		{`{"parentSpanId":"` + strings.Repeat("b", 17) + `"}`, "parentSpanId: at byte 75: span id of 17 hex digits, an odd number of hex digits, must be 16 hex digits (8 bytes) or empty"},
	} {
		body := `{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"good"},` + tc.span + `]}]}]}`
		resp, out := post(t, r, "/v1/traces", ctJSON, "", []byte(body))
		var st spb.Status
		if err := protojson.Unmarshal(out, &st); err != nil || resp.StatusCode != http.StatusBadRequest || st.Code != int32(codes.InvalidArgument) {
			t.Errorf("%s: %d %s", tc.span, resp.StatusCode, out)
			continue
		}
		want := "otlpin: cannot decode application/json traces request: otlpwire: decode OTLP/JSON traces: resourceSpans[0].scopeSpans[0].spans[1]." + tc.want
		if st.Message != want {
			t.Errorf("message\n got %s\nwant %s", st.Message, want)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.bs) != 0 {
		t.Errorf("%d batches delivered", len(c.bs))
	}
}

func marshalT(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// bigTrace is a traces request of about n bytes.
func bigTrace(n int) *coltracepb.ExportTraceServiceRequest {
	return &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{Name: strings.Repeat("x", n)}}}}}}}
}

// A gRPC message over the limit is RESOURCE_EXHAUSTED: 4 MiB unless set
// (gRPC's default, the collector's), whatever the OTLP/HTTP limit; and the
// OTLP/HTTP limit is its own, whatever the gRPC one.
func TestGRPCMaxRecvSize(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     Options
		size     int
		grpcOK   bool
		httpCode int
	}{
		{"default, under 4 MiB", Options{}, 4<<20 - 100, true, http.StatusOK},
		{"default, over 4 MiB", Options{}, 4<<20 + 1, false, http.StatusOK},
		{"a small HTTP limit leaves gRPC's", Options{MaxRequestBytes: 1 << 20}, 3 << 20, true, http.StatusRequestEntityTooLarge},
		{"a big HTTP limit leaves gRPC's", Options{MaxRequestBytes: 64 << 20}, 5 << 20, false, http.StatusOK},
		{"gRPC's own, bigger", Options{GRPCMaxRecvBytes: 8 << 20}, 5 << 20, true, http.StatusOK},
		{"gRPC's own, smaller", Options{GRPCMaxRecvBytes: 1 << 20}, 2 << 20, false, http.StatusOK},
	} {
		c := &rec{}
		o := tc.opts
		o.Traces = c
		r := start(t, o)
		cc, err := grpc.NewClient(r.GRPCAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(64<<20)))
		if err != nil {
			t.Fatal(err)
		}
		req := bigTrace(tc.size)
		_, err = coltracepb.NewTraceServiceClient(cc).Export(context.Background(), req)
		switch {
		case tc.grpcOK && err != nil:
			t.Errorf("%s: gRPC: %v", tc.name, err)
		case !tc.grpcOK && status.Code(err) != codes.ResourceExhausted:
			t.Errorf("%s: gRPC: %v, want ResourceExhausted", tc.name, err)
		}
		// The process goes on: a small request is taken.
		if _, err := coltracepb.NewTraceServiceClient(cc).Export(context.Background(), bigTrace(10)); err != nil {
			t.Errorf("%s: gRPC after: %v", tc.name, err)
		}
		cc.Close()
		if resp, out := post(t, r, "/v1/traces", ctProtobuf, "", marshalT(t, req)); resp.StatusCode != tc.httpCode {
			t.Errorf("%s: HTTP: %d %.200s, want %d", tc.name, resp.StatusCode, out, tc.httpCode)
		}
		want := 1 // the small one
		if tc.grpcOK {
			want++
		}
		if tc.httpCode == http.StatusOK {
			want++
		}
		c.mu.Lock()
		if len(c.bs) != want {
			t.Errorf("%s: %d batches delivered, want %d", tc.name, len(c.bs), want)
		}
		c.mu.Unlock()
		_ = r.Shutdown(context.Background())
	}
}

// Scopes with no items and resources with no such scope are not passed on;
// a request of nothing else is answered with success, passing on nothing,
// over every transport.
func TestEmptyResourcesNotPassedOn(t *testing.T) {
	recs := map[pipeline.Signal]*rec{pipeline.Traces: {}, pipeline.Logs: {}, pipeline.Metrics: {}}
	r := start(t, Options{Traces: recs[pipeline.Traces], Logs: recs[pipeline.Logs], Metrics: recs[pipeline.Metrics]})
	cc := dial(t, r)
	empty := map[pipeline.Signal]proto.Message{
		pipeline.Traces: &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{}, {ScopeSpans: []*tracepb.ScopeSpans{{}, {}}}}},
		pipeline.Logs:   &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{ScopeLogs: []*logspb.ScopeLogs{{}}}, {}}},
		pipeline.Metrics: &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{{}, {ScopeMetrics: []*metricspb.ScopeMetrics{
			{Metrics: []*metricspb.Metric{{Name: "no points", Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{}}}}}}}}},
	}
	// mixed is the good request with an empty resource before it and an
	// empty scope in it.
	mixed := func(s pipeline.Signal) proto.Message {
		m := goodRequest(s)
		switch m := m.(type) {
		case *coltracepb.ExportTraceServiceRequest:
			m.ResourceSpans[0].ScopeSpans = append(m.ResourceSpans[0].ScopeSpans, &tracepb.ScopeSpans{})
			m.ResourceSpans = append([]*tracepb.ResourceSpans{{}}, m.ResourceSpans...)
		case *collogspb.ExportLogsServiceRequest:
			m.ResourceLogs[0].ScopeLogs = append([]*logspb.ScopeLogs{{}}, m.ResourceLogs[0].ScopeLogs...)
			m.ResourceLogs = append(m.ResourceLogs, &logspb.ResourceLogs{})
		case *colmetricspb.ExportMetricsServiceRequest:
			m.ResourceMetrics[0].ScopeMetrics = append(m.ResourceMetrics[0].ScopeMetrics, &metricspb.ScopeMetrics{})
			m.ResourceMetrics = append([]*metricspb.ResourceMetrics{{}}, m.ResourceMetrics...)
		}
		return m
	}
	for s, c := range recs {
		for _, via := range []string{"http protobuf", "http json", "grpc"} {
			for _, m := range []proto.Message{empty[s], mixed(s)} {
				if via == "grpc" {
					if err := exportGRPC(cc, m); err != nil {
						t.Errorf("%v over %s: %v", s, via, err)
					}
					continue
				}
				ct, body := ctProtobuf, marshalT(t, m)
				if via == "http json" {
					ct, body = ctJSON, jsonOf(m)
				}
				if resp, out := post(t, r, pathOf(s), ct, "", body); resp.StatusCode != http.StatusOK {
					t.Errorf("%v over %s: %d %s", s, via, resp.StatusCode, out)
				}
			}
			c.mu.Lock()
			// Only the mixed request's good resource and scope.
			if len(c.bs) != 1 || c.bs[0].Len() != 1 || c.bs[0].Items != 1 {
				t.Errorf("%v over %s: %d batches delivered, want the one good resource", s, via, len(c.bs))
			} else {
				b := c.bs[0]
				var scopes int
				switch s {
				case pipeline.Traces:
					scopes = len(b.Traces[0].ScopeSpans)
				case pipeline.Logs:
					scopes = len(b.Logs[0].ScopeLogs)
				case pipeline.Metrics:
					scopes = len(b.Metrics[0].ScopeMetrics)
				}
				if scopes != 1 {
					t.Errorf("%v over %s: %d scopes passed on, want 1", s, via, scopes)
				}
			}
			for _, b := range c.bs {
				b.Release()
			}
			c.bs = nil
			c.mu.Unlock()
		}
	}
}
