package sink

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"github.com/otelstep/otelstep/internal/fakebackend"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/otelstep/otelstep/batch"
	"github.com/otelstep/otelstep/internal/otlptest"
	"github.com/otelstep/otelstep/otlpwire"
	"github.com/otelstep/otelstep/pipeline"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
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
	if err := EncodeRequest(&pipeline.Batch{Signal: pipeline.Traces, Traces: pipeline.TracesFromProto(rss)}, Compression{}, &out); err != nil {
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
	var enc otlpwire.ProtoEncoder
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
		total := b.Items
		if n := pipeline.CountItems(b); total != n {
			t.Fatalf("fixture %d: decoded batch counts %d items, holds %d", i, total, n)
		}
		if total < 2 {
			continue
		}
		if marked == 0 {
			t.Errorf("fixture %d: nothing marked", i)
		}
		for k := 1; k < total; k++ {
			head, rest := batch.Split(b, k)
			if head.Items != k || rest.Items != total-k || pipeline.CountItems(head) != k || pipeline.CountItems(rest) != total-k {
				t.Fatalf("fixture %d split at %d: %d + %d spans (counted %d + %d)", i, k, pipeline.CountItems(head), pipeline.CountItems(rest), head.Items, rest.Items)
			}
			var back []*tracepb.ResourceSpans
			for _, part := range []*pipeline.Batch{head, rest} {
				var req coltracepb.ExportTraceServiceRequest
				if err := proto.Unmarshal(enc.AppendTracesRequest(nil, part.Traces), &req); err != nil {
					t.Fatal(err)
				}
				if n := pipeline.CountItems(&pipeline.Batch{Signal: pipeline.Traces, Traces: pipeline.TracesFromProto(req.ResourceSpans)}); n != part.Items {
					t.Fatalf("fixture %d split at %d: a part of %d spans encodes %d", i, k, part.Items, n)
				}
				back = append(back, req.ResourceSpans...)
				// Each half's JSON holds its own spans too.
				js, err := otlpwire.DecodeTraces(otlpwire.AppendTraces(nil, part.Traces))
				if err != nil {
					t.Fatal(err)
				}
				if n := pipeline.CountItems(&pipeline.Batch{Signal: pipeline.Traces, Traces: pipeline.TracesFromProto(js.ResourceSpans)}); n != part.Items {
					t.Fatalf("fixture %d split at %d: a part of %d spans has %d in its JSON", i, k, part.Items, n)
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
	spans := otlptest.BenchSpans(6)[0].ScopeSpans[0].Spans
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
	var enc otlpwire.ProtoEncoder
	if got, want := enc.AppendTracesRequest(nil, mixedRS), enc.AppendTracesRequest(nil, plainRS); !bytes.Equal(got, want) {
		t.Error("protobuf of the mixed scope differs")
	}
	if got, want := otlpwire.AppendTraces(nil, mixedRS), otlpwire.AppendTraces(nil, plainRS); !bytes.Equal(got, want) {
		t.Errorf("JSON of the mixed scope differs\ngot  %.200s\nwant %.200s", got, want)
	}
	b := &pipeline.Batch{Signal: pipeline.Traces, Traces: mixedRS}
	plain := &pipeline.Batch{Signal: pipeline.Traces, Traces: plainRS}
	for k := 1; k < len(spans); k++ {
		h, r := batch.Split(b, k)
		ph, pr := batch.Split(plain, k)
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
	var enc otlpwire.ProtoEncoder
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
	total := b.Items
	if n := pipeline.CountItems(b); total != n || total < 2 {
		t.Fatalf("fixture has %d log records, counted %d", n, total)
	}
	var wantRecs []*logspb.LogRecord
	for _, rl := range rls {
		for _, sl := range rl.ScopeLogs {
			wantRecs = append(wantRecs, sl.LogRecords...)
		}
	}
	for k := 1; k < total; k++ {
		head, rest := batch.Split(b, k)
		if head.Items != k || rest.Items != total-k || pipeline.CountItems(head) != k || pipeline.CountItems(rest) != total-k {
			t.Fatalf("split at %d: %d + %d log records (counted %d + %d)", k, pipeline.CountItems(head), pipeline.CountItems(rest), head.Items, rest.Items)
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
			if n := pipeline.CountItems(&pipeline.Batch{Signal: pipeline.Logs, Logs: pipeline.LogsFromProto(js.ResourceLogs)}); n != part.Items {
				t.Fatalf("split at %d: a part of %d log records has %d in its JSON", k, part.Items, n)
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

// Through the HTTP sink (two workers, each with its own encoder) and the
// file sink, batches of shared sets arrive intact, and both sinks stored
// their encodings with the sets. Run with -race.
func TestSinksSharedBatches(t *testing.T) {
	srv := fakebackend.New(t)
	lg, _ := testLogger()
	sim := otlptest.NewScrapeSim(30, nil)
	web, err := NewHTTP(HTTPOptions{Endpoint: srv.URL(), Logger: lg, SharedAttrs: sim.Shared})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.jsonl")
	file, err := NewFile(FileOptions{Path: path, Signal: pipeline.Metrics, Logger: lg, SharedAttrs: sim.Shared})
	if err != nil {
		t.Fatal(err)
	}
	_ = web.Start(context.Background())
	_ = file.Start(context.Background())
	fan := NewFanout(file, web)
	var sent [][]*metricspb.ResourceMetrics
	for n := range 12 {
		rms := sim.Batch(n)
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
	for _, r := range srv.Requests() {
		if r.Status != http.StatusOK || r.Header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("%s %q answered %d (%v)", r.Path, r.Header.Get("Content-Encoding"), r.Status, r.DecodeErr)
		}
		byID[batchID(&pipeline.Batch{Signal: pipeline.Metrics, Metrics: r.Metrics.ResourceMetrics})] = r.Metrics
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
	for i, a := range sim.Gauge {
		if set := sim.Shared.Find(a); set == nil || set.JSON() == nil || set.Proto(7) == nil {
			t.Fatalf("gauge series %d: the sinks stored no encodings with its set", i)
		}
	}
}

// BenchmarkEncodeRequestGzipShared is BenchmarkEncodeRequestGzip (protobuf
// then gzip level 1) on shared attributes, with a worker's encoder.
func BenchmarkEncodeRequestGzipShared(b *testing.B) {
	shared := pipeline.NewSharedAttrs()
	batch, sets := sharedBench1000(shared)
	defer runtime.KeepAlive(sets)
	cached := new(requestEncoder)
	cached.enc.Shared = shared
	for _, c := range []struct {
		name string
		re   *requestEncoder
	}{{"cached", cached}} {
		b.Run(c.name, func(b *testing.B) {
			var out bytes.Buffer
			b.ReportAllocs()
			for b.Loop() {
				if err := c.re.encode(batch, DefaultCompression, &out); err != nil {
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
	out = append(out, otlptest.EdgeSpans()...)
	return out
}
