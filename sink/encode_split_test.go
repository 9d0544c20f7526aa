package sink

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/otelstep/otelstep/otlpwire"
	"github.com/otelstep/otelstep/pipeline"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// The protobuf and OTLP/JSON encoders (otlpwire) on batches the sink splits.

func TestEncodeRequestTraces(t *testing.T) {
	rss := traceFixtures(t)[0]
	var out bytes.Buffer
	if err := EncodeRequest(&pipeline.Batch{Signal: pipeline.Traces, Traces: pipeline.TracesFromProto(rss)}, false, &out); err != nil {
		t.Fatal(err)
	}
	b, err := otlpwire.UnmarshalRequest(pipeline.Traces, out.Bytes())
	var got []*tracepb.ResourceSpans
	if err == nil {
		got, err = pipeline.TracesProto(b.Traces)
	}
	if err != nil || !proto.Equal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: got}, &coltracepb.ExportTraceServiceRequest{ResourceSpans: rss}) {
		t.Fatalf("round trip through EncodeRequest: %v", err)
	}
}

// Received spans go out as the bytes they came in (pipeline.Records), and
// a batch split inside a ScopeSpans still encodes each half's own spans.
func TestTracesEncoderForwardsReceivedSpans(t *testing.T) {
	var enc otlpwire.MetricsProtoEncoder
	for i, rss := range traceFixtures(t) {
		want := &coltracepb.ExportTraceServiceRequest{ResourceSpans: rss}
		data, err := proto.MarshalOptions{Deterministic: true}.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		b, err := otlpwire.UnmarshalRequest(pipeline.Traces, data)
		if err != nil {
			t.Fatalf("fixture %d: %v", i, err)
		}
		marked := 0
		for _, rs := range b.Traces {
			for _, ss := range rs.ScopeSpans {
				if len(ss.Records) > 0 {
					marked++
				}
			}
		}
		// The JSONL line of received spans (decoded from their records
		// as they are encoded) is the line of the same spans as messages.
		if js, want := otlpwire.AppendTraces(nil, b.Traces), otlpwire.AppendTraces(nil, pipeline.TracesFromProto(rss)); !bytes.Equal(js, want) {
			t.Errorf("fixture %d: JSON of the received spans differs from the JSON of the spans sent\ngot  %.300s\nwant %.300s", i, js, want)
		}
		got := enc.AppendTracesRequest(nil, b.Traces)
		if !bytes.Equal(got, data) {
			t.Errorf("fixture %d (%d ScopeSpans forwarded raw): re-encoding differs from the %d bytes received (%d)", i, marked, len(data), len(got))
		}
		total := b.Items()
		if total < 2 {
			continue
		}
		if marked == 0 {
			t.Errorf("fixture %d: nothing marked", i)
		}
		for k := 1; k < total; k++ {
			head, rest := splitBatch(b, k)
			if head.Items() != k || rest.Items() != total-k {
				t.Fatalf("fixture %d split at %d: %d + %d spans", i, k, head.Items(), rest.Items())
			}
			var back []*tracepb.ResourceSpans
			for _, part := range []*pipeline.Batch{head, rest} {
				var req coltracepb.ExportTraceServiceRequest
				if err := proto.Unmarshal(enc.AppendTracesRequest(nil, part.Traces), &req); err != nil {
					t.Fatal(err)
				}
				if n := (&pipeline.Batch{Signal: pipeline.Traces, Traces: pipeline.TracesFromProto(req.ResourceSpans)}).Items(); n != part.Items() {
					t.Fatalf("fixture %d split at %d: a part of %d spans encodes %d", i, k, part.Items(), n)
				}
				back = append(back, req.ResourceSpans...)
				// Each half's JSON holds its own spans too.
				js, err := otlpwire.DecodeTraces(otlpwire.AppendTraces(nil, part.Traces))
				if err != nil {
					t.Fatal(err)
				}
				if n := (&pipeline.Batch{Signal: pipeline.Traces, Traces: pipeline.TracesFromProto(js.ResourceSpans)}).Items(); n != part.Items() {
					t.Fatalf("fixture %d split at %d: a part of %d spans has %d in its JSON", i, k, part.Items(), n)
				}
			}
			var wantSpans, gotSpans []*tracepb.Span
			for _, rs := range want.ResourceSpans {
				for _, ss := range rs.ScopeSpans {
					wantSpans = append(wantSpans, ss.Spans...)
				}
			}
			for _, rs := range back {
				for _, ss := range rs.ScopeSpans {
					gotSpans = append(gotSpans, ss.Spans...)
				}
			}
			if len(gotSpans) != len(wantSpans) {
				t.Fatalf("fixture %d split at %d: %d spans, want %d", i, k, len(gotSpans), len(wantSpans))
			}
			for j := range wantSpans {
				if !proto.Equal(gotSpans[j], wantSpans[j]) {
					t.Fatalf("fixture %d split at %d: span %d differs", i, k, j)
				}
			}
		}
	}
}

// A ScopeSpans holding both kinds of spans, messages first and then
// records (as after a producer appends spans to a received scope), encodes
// and splits as the same spans all as messages would.
func TestMixedSpansAndRecords(t *testing.T) {
	spans := benchSpans(6)[0].ScopeSpans[0].Spans
	var recs pipeline.Records
	for _, s := range spans[2:] {
		b, err := proto.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		recs = pipeline.AppendRecord(recs, b)
	}
	mixed := &pipeline.ScopeSpans{Spans: spans[:2:2], Records: recs}
	mixedRS := []*pipeline.ResourceSpans{{Resource: &resourcepb.Resource{}, ScopeSpans: []*pipeline.ScopeSpans{mixed}}}
	plainRS := []*pipeline.ResourceSpans{{Resource: &resourcepb.Resource{}, ScopeSpans: []*pipeline.ScopeSpans{{Spans: spans}}}}
	if n := mixed.Len(); n != len(spans) {
		t.Fatalf("ScopeSpans.Len %d, want %d", n, len(spans))
	}
	var enc otlpwire.MetricsProtoEncoder
	if got, want := enc.AppendTracesRequest(nil, mixedRS), enc.AppendTracesRequest(nil, plainRS); !bytes.Equal(got, want) {
		t.Error("protobuf of the mixed scope differs")
	}
	if got, want := otlpwire.AppendTraces(nil, mixedRS), otlpwire.AppendTraces(nil, plainRS); !bytes.Equal(got, want) {
		t.Errorf("JSON of the mixed scope differs\ngot  %.200s\nwant %.200s", got, want)
	}
	b := &pipeline.Batch{Signal: pipeline.Traces, Traces: mixedRS}
	plain := &pipeline.Batch{Signal: pipeline.Traces, Traces: plainRS}
	for k := 1; k < len(spans); k++ {
		h, r := splitBatch(b, k)
		ph, pr := splitBatch(plain, k)
		for _, pair := range [][2]*pipeline.Batch{{h, ph}, {r, pr}} {
			if got, want := otlpwire.AppendTraces(nil, pair[0].Traces), otlpwire.AppendTraces(nil, pair[1].Traces); !bytes.Equal(got, want) {
				t.Fatalf("split at %d: JSON differs\ngot  %.200s\nwant %.200s", k, got, want)
			}
		}
	}
}

// Received log records go out as the bytes they came in (pipeline.Records),
// their JSONL is the JSONL of the same log records as messages, and a batch
// split inside a ScopeLogs still encodes each half's own log records.
func TestLogsEncoderForwardsReceivedRecords(t *testing.T) {
	var enc otlpwire.MetricsProtoEncoder
	rls := logsFixture(t)
	for len(rls) < 3 {
		rls = append(rls, logsFixture(t)...)
	}
	want := &collogspb.ExportLogsServiceRequest{ResourceLogs: rls}
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	b, err := otlpwire.UnmarshalRequest(pipeline.Logs, data)
	if err != nil {
		t.Fatal(err)
	}
	kept := 0
	for _, rl := range b.Logs {
		for _, sl := range rl.ScopeLogs {
			if len(sl.LogRecords) != 0 {
				t.Fatal("log records decoded as messages, want them kept as records")
			}
			if len(sl.Records) > 0 {
				kept++
			}
		}
	}
	if kept == 0 {
		t.Fatal("no log records kept as records")
	}
	if js, wantJS := otlpwire.AppendLogs(nil, b.Logs), otlpwire.AppendLogs(nil, pipeline.LogsFromProto(rls)); !bytes.Equal(js, wantJS) {
		t.Errorf("JSON of the received log records differs\ngot  %.300s\nwant %.300s", js, wantJS)
	}
	if got := enc.AppendLogsRequest(nil, b.Logs); !bytes.Equal(got, data) {
		t.Errorf("re-encoding differs from the %d bytes received (%d)", len(data), len(got))
	}
	total := b.Items()
	if total < 2 {
		t.Fatalf("fixture has %d log records", total)
	}
	var wantRecs []*logspb.LogRecord
	for _, rl := range rls {
		for _, sl := range rl.ScopeLogs {
			wantRecs = append(wantRecs, sl.LogRecords...)
		}
	}
	for k := 1; k < total; k++ {
		head, rest := splitBatch(b, k)
		if head.Items() != k || rest.Items() != total-k {
			t.Fatalf("split at %d: %d + %d log records", k, head.Items(), rest.Items())
		}
		var gotRecs []*logspb.LogRecord
		for _, part := range []*pipeline.Batch{head, rest} {
			var req collogspb.ExportLogsServiceRequest
			if err := proto.Unmarshal(enc.AppendLogsRequest(nil, part.Logs), &req); err != nil {
				t.Fatal(err)
			}
			js, err := otlpwire.DecodeLogs(otlpwire.AppendLogs(nil, part.Logs))
			if err != nil {
				t.Fatal(err)
			}
			if n := (&pipeline.Batch{Signal: pipeline.Logs, Logs: pipeline.LogsFromProto(js.ResourceLogs)}).Items(); n != part.Items() {
				t.Fatalf("split at %d: a part of %d log records has %d in its JSON", k, part.Items(), n)
			}
			for _, rl := range req.ResourceLogs {
				for _, sl := range rl.ScopeLogs {
					gotRecs = append(gotRecs, sl.LogRecords...)
				}
			}
		}
		if len(gotRecs) != len(wantRecs) {
			t.Fatalf("split at %d: %d log records, want %d", k, len(gotRecs), len(wantRecs))
		}
		for j := range wantRecs {
			if !proto.Equal(gotRecs[j], wantRecs[j]) {
				t.Fatalf("split at %d: log record %d differs", k, j)
			}
		}
	}
}

// Through the HTTP sink (two workers, each with its own cache) and the file
// sink, shared batches arrive intact. Run with -race.
func TestSinksSharedBatches(t *testing.T) {
	var mu sync.Mutex
	var got []*colmetricspb.ExportMetricsServiceRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			t.Error(err)
			return
		}
		raw, _ := io.ReadAll(zr)
		var req colmetricspb.ExportMetricsServiceRequest
		if err := proto.Unmarshal(raw, &req); err != nil {
			t.Error(err)
		}
		mu.Lock()
		got = append(got, &req)
		mu.Unlock()
	}))
	defer srv.Close()
	lg, _ := testLogger()
	web, err := NewHTTP(HTTPOptions{Endpoint: srv.URL, Logger: lg})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.jsonl")
	file, err := NewFile(FileOptions{Path: path, Signal: pipeline.Metrics, Logger: lg})
	if err != nil {
		t.Fatal(err)
	}
	_ = web.Start(context.Background())
	_ = file.Start(context.Background())
	fan := NewFanout(file, web)
	sim := newScrapeSim(30)
	var sent [][]*metricspb.ResourceMetrics
	for n := range 12 {
		rms := sim.batch(n)
		rms[0].Resource.Attributes = append(rms[0].Resource.Attributes, strKV("batch.id", fmt.Sprint(n)))
		sent = append(sent, rms)
		if err := fan.Consume(context.Background(), &pipeline.Batch{Signal: pipeline.Metrics, Metrics: rms}); err != nil {
			t.Fatal(err)
		}
	}
	if err := file.Shutdown(ctxT(patience)); err != nil {
		t.Fatal(err)
	}
	if err := web.Shutdown(ctxT(patience)); err != nil {
		t.Fatal(err)
	}
	byID := map[string]*colmetricspb.ExportMetricsServiceRequest{}
	for _, r := range got {
		byID[batchID(&pipeline.Batch{Signal: pipeline.Metrics, Metrics: r.ResourceMetrics})] = r
	}
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 16<<20)
	for n, rms := range sent {
		want := &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: rms}
		if !proto.Equal(byID[fmt.Sprint(n)], want) {
			t.Errorf("batch %d: HTTP body differs from what was sent", n)
		}
		if !sc.Scan() {
			t.Fatalf("file has %d lines, want %d", n, len(sent))
		}
		if line := otlpwire.AppendMetrics(nil, rms, "Authorization"); !bytes.Equal(sc.Bytes(), line) {
			t.Errorf("batch %d: file line differs from otlpwire.AppendMetrics", n)
		}
	}
}

// BenchmarkEncodeRequestGzipShared is BenchmarkEncodeRequestGzip (protobuf
// then gzip level 1) on shared attributes, with a worker's encoder.
func BenchmarkEncodeRequestGzipShared(b *testing.B) {
	batch := sharedBench1000()
	for _, c := range []struct {
		name string
		re   *requestEncoder
	}{{"cached", new(requestEncoder)}} {
		b.Run(c.name, func(b *testing.B) {
			var out bytes.Buffer
			b.ReportAllocs()
			for b.Loop() {
				if err := c.re.encode(batch, true, &out); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(1000*float64(b.N)/b.Elapsed().Seconds(), "points/s")
		})
	}
}

// traceFixtures are the collector's span fixtures plus messages that use
// every field of the trace protos, and edge values.
func traceFixtures(t testing.TB) [][]*tracepb.ResourceSpans {
	t.Helper()
	var out [][]*tracepb.ResourceSpans
	forLines(t, "testdata/traces.peer.jsonl", func(l []byte) {
		req, err := otlpwire.DecodeTraces(l)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, req.ResourceSpans)
	})
	str := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	full := &tracepb.Span{
		TraceId: bytes.Repeat([]byte{0xab}, 16), SpanId: bytes.Repeat([]byte{0xcd}, 8), ParentSpanId: []byte{1, 2, 3, 4, 5, 6, 7, 8},
		TraceState: "k=v", Name: "op", Kind: tracepb.Span_SPAN_KIND_CONSUMER, Flags: 0x101,
		StartTimeUnixNano: 1, EndTimeUnixNano: 1<<63 + 5,
		Attributes: []*commonpb.KeyValue{str("a", "b"), {Key: "i", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: -7}}},
			{Key: "arr", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{{Value: &commonpb.AnyValue_BoolValue{BoolValue: true}}}}}}},
			{Key: "nil-value"}},
		DroppedAttributesCount: 3,
		Events:                 []*tracepb.Span_Event{{TimeUnixNano: 9, Name: "ev", Attributes: []*commonpb.KeyValue{str("e", "1")}, DroppedAttributesCount: 1}, {}},
		DroppedEventsCount:     2,
		Links:                  []*tracepb.Span_Link{{TraceId: bytes.Repeat([]byte{9}, 16), SpanId: bytes.Repeat([]byte{8}, 8), TraceState: "x", Attributes: []*commonpb.KeyValue{str("l", "2")}, DroppedAttributesCount: 4, Flags: 1}, {}},
		DroppedLinksCount:      5,
		Status:                 &tracepb.Status{Message: "bad", Code: tracepb.Status_STATUS_CODE_ERROR},
	}
	out = append(out,
		[]*tracepb.ResourceSpans{{
			Resource:  &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "s")}, DroppedAttributesCount: 1},
			SchemaUrl: "https://schema/1",
			ScopeSpans: []*tracepb.ScopeSpans{
				{Scope: &commonpb.InstrumentationScope{Name: "lib", Version: "1", Attributes: []*commonpb.KeyValue{str("x", "y")}, DroppedAttributesCount: 2},
					SchemaUrl: "https://schema/2", Spans: []*tracepb.Span{full, {}, {Status: &tracepb.Status{}}, {Kind: tracepb.Span_SpanKind(-1)}}},
				{}, // empty scope spans
			},
		}, {}}, // a resource-less ResourceSpans
		nil,
	)
	return out
}

func benchSpans(n int) []*tracepb.ResourceSpans {
	spans := make([]*tracepb.Span, n)
	for i := range spans {
		attrs := make([]*commonpb.KeyValue, 8)
		for j := range attrs {
			attrs[j] = &commonpb.KeyValue{Key: "attr." + string(rune('a'+j)), Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "abcdefghijklmnop"}}}
		}
		spans[i] = &tracepb.Span{TraceId: bytes.Repeat([]byte{byte(i)}, 16), SpanId: bytes.Repeat([]byte{byte(i)}, 8), Name: "op",
			Kind: tracepb.Span_SPAN_KIND_SERVER, StartTimeUnixNano: uint64(i), EndTimeUnixNano: uint64(i) + 1e6, Attributes: attrs, Status: &tracepb.Status{}}
	}
	return []*tracepb.ResourceSpans{{Resource: &resourcepb.Resource{}, ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}}}}
}

// scrapeSim builds batches the way the scraper does: each series keeps one
// marked attribute slice for its whole life and gets a new value every
// scrape; a series dies, one appears, and some points carry fresh, unmarked
// attributes.
type scrapeSim struct {
	gauge, hist, summ, exp [][]*commonpb.KeyValue
	exemplarAttrs          []*commonpb.KeyValue
}

func newScrapeSim(series int) *scrapeSim {
	s := &scrapeSim{exemplarAttrs: pipeline.MarkShared([]*commonpb.KeyValue{strKV("trace", "x")})}
	odd := []*commonpb.KeyValue{
		{Key: "i", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: -3}}},
		{Key: "b", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{}}},
		{Key: "d", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: math.NaN()}}},
		{Key: "y", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte{0, 255}}}},
		{Key: "a", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{{Value: &commonpb.AnyValue_IntValue{IntValue: 1}}}}}}},
		{Key: "nil-value"},
	}
	for i := range series {
		attrs := []*commonpb.KeyValue{strKV("cpu", fmt.Sprint(i)), strKV("mode", "us\"er\u00e9"), strKV("host", "h")}
		if i%7 == 0 {
			attrs = append(attrs, odd...)
		}
		s.gauge = append(s.gauge, pipeline.MarkShared(attrs))
		s.hist = append(s.hist, pipeline.MarkShared([]*commonpb.KeyValue{strKV("h", fmt.Sprint(i)), strKV("job", "j")}))
		s.summ = append(s.summ, pipeline.MarkShared([]*commonpb.KeyValue{strKV("q", fmt.Sprint(i))}))
		s.exp = append(s.exp, pipeline.MarkShared([]*commonpb.KeyValue{strKV("e", fmt.Sprint(i))}))
	}
	s.summ = append(s.summ, s.gauge[1][1:]) // a suffix: not shared
	s.hist = append(s.hist, s.gauge[2])     // field 9 here, 7 in the gauge
	return s
}

var simValues = []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0, 1e-7, 123.456}

// batch returns scrape n (values change with n; from scrape 2 the last
// gauge series is replaced by a new one).
func (s *scrapeSim) batch(n int) []*metricspb.ResourceMetrics {
	if n == 2 {
		s.gauge[len(s.gauge)-1] = pipeline.MarkShared([]*commonpb.KeyValue{strKV("cpu", "new")})
	}
	ts := uint64(1700000000000000000 + n*15e9)
	var gauge, sum []*metricspb.NumberDataPoint
	for i, a := range s.gauge {
		v := simValues[(i+n)%len(simValues)]
		gauge = append(gauge, &metricspb.NumberDataPoint{Attributes: a, TimeUnixNano: ts, Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: v}})
		p := &metricspb.NumberDataPoint{Attributes: a, StartTimeUnixNano: 1, TimeUnixNano: ts, Value: &metricspb.NumberDataPoint_AsInt{AsInt: int64(i * n)}}
		if i%5 == 0 {
			p.Exemplars = []*metricspb.Exemplar{{FilteredAttributes: s.exemplarAttrs, TimeUnixNano: ts, Value: &metricspb.Exemplar_AsDouble{AsDouble: v},
				TraceId: bytes.Repeat([]byte{byte(n + 1)}, 16), SpanId: bytes.Repeat([]byte{byte(i + 1)}, 8)}}
		}
		if i%11 == 0 {
			p.Flags = 1
		}
		sum = append(sum, p)
	}
	gauge = append(gauge,
		&metricspb.NumberDataPoint{Attributes: []*commonpb.KeyValue{strKV("fresh", fmt.Sprint(n))}, TimeUnixNano: ts, Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: float64(n)}},
		&metricspb.NumberDataPoint{TimeUnixNano: ts})
	var hist []*metricspb.HistogramDataPoint
	for i, a := range s.hist {
		sm := float64(n * i)
		hist = append(hist, &metricspb.HistogramDataPoint{Attributes: a, TimeUnixNano: ts, Count: uint64(n), Sum: &sm,
			BucketCounts: []uint64{uint64(n), 0}, ExplicitBounds: []float64{0.5},
			Exemplars: []*metricspb.Exemplar{{FilteredAttributes: s.exemplarAttrs, Value: &metricspb.Exemplar_AsInt{AsInt: int64(n)}}}})
	}
	var summ []*metricspb.SummaryDataPoint
	for i, a := range s.summ {
		summ = append(summ, &metricspb.SummaryDataPoint{Attributes: a, TimeUnixNano: ts, Count: uint64(n), Sum: simValues[(i+n)%len(simValues)],
			QuantileValues: []*metricspb.SummaryDataPoint_ValueAtQuantile{{Quantile: 0.5, Value: float64(n)}, {Quantile: 1, Value: math.Inf(1)}}})
	}
	var exp []*metricspb.ExponentialHistogramDataPoint
	for _, a := range s.exp {
		exp = append(exp, &metricspb.ExponentialHistogramDataPoint{Attributes: a, TimeUnixNano: ts, Count: uint64(n), Scale: 2,
			Positive: &metricspb.ExponentialHistogramDataPoint_Buckets{Offset: -1, BucketCounts: []uint64{uint64(n)}}})
	}
	return []*metricspb.ResourceMetrics{{
		Resource: &resourcepb.Resource{Attributes: pipeline.MarkShared([]*commonpb.KeyValue{strKV("service.name", "s"), strKV("Authorization", "Bearer t0k")})},
		ScopeMetrics: []*metricspb.ScopeMetrics{{
			Scope: &commonpb.InstrumentationScope{Name: "otelstep", Attributes: pipeline.MarkShared([]*commonpb.KeyValue{strKV("scope", "attr")})},
			Metrics: []*metricspb.Metric{
				{Name: "g", Unit: "1", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: gauge}}},
				{Name: "c_total", Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{DataPoints: sum, AggregationTemporality: 2, IsMonotonic: true}}},
				{Name: "h", Data: &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{DataPoints: hist, AggregationTemporality: 2}}},
				{Name: "s", Data: &metricspb.Metric_Summary{Summary: &metricspb.Summary{DataPoints: summ}}},
				{Name: "e", Data: &metricspb.Metric_ExponentialHistogram{ExponentialHistogram: &metricspb.ExponentialHistogram{DataPoints: exp}}},
				{Name: "meta", Metadata: pipeline.MarkShared([]*commonpb.KeyValue{strKV("prometheus.type", "gauge")})},
			},
		}},
	}}
}
