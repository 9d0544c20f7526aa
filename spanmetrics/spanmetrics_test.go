package spanmetrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/otelstep/otelstep/otlpwire"
	"github.com/otelstep/otelstep/pipeline"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

const (
	server   = tracepb.Span_SPAN_KIND_SERVER
	client   = tracepb.Span_SPAN_KIND_CLIENT
	unset    = tracepb.Status_STATUS_CODE_UNSET
	statusOK = tracepb.Status_STATUS_CODE_OK
	errCode  = tracepb.Status_STATUS_CODE_ERROR
)

func svc(name string, more ...*commonpb.KeyValue) []*commonpb.KeyValue {
	return append([]*commonpb.KeyValue{strKV("service.name", name)}, more...)
}

func intKV(k string, v int64) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}}
}

// flushNow shuts c down, which flushes, and returns the points of that
// flush.
func flushNow(t *testing.T, c *Connector, rec *recorder) map[string]point {
	t.Helper()
	n := len(rec.got())
	if err := c.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(rec.got()) != n+1 {
		t.Fatalf("Shutdown sent %d batches, want 1", len(rec.got())-n)
	}
	return points(t, rec.last(t), c)
}

// only returns the one point of ps.
func only(t *testing.T, ps map[string]point) (string, point) {
	t.Helper()
	if len(ps) != 1 {
		t.Fatalf("%d series, want 1: %v", len(ps), slices.Collect(mapKeys(ps)))
	}
	for k, p := range ps {
		return k, p
	}
	panic("unreachable")
}

func mapKeys(ps map[string]point) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range ps {
			if !yield(k) {
				return
			}
		}
	}
}

// TestRecordsAndMessages: spans as records, as messages, and both in one
// ScopeSpans (messages first, then records), count the same.
func TestRecordsAndMessages(t *testing.T) {
	req := goldenRequest(t)
	run := func(b *pipeline.Batch) map[string]point {
		rec := &recorder{}
		c := newConnector(t, v2Config(), rec)
		if err := c.Enqueue(context.Background(), b); err != nil {
			t.Fatal(err)
		}
		return flushNow(t, c, rec)
	}
	recs := run(recordBatch(t, req))
	msgs := run(messageBatch(req))
	// Mixed: the first half of each scope's spans as messages.
	mixed := recordBatch(t, req)
	for i, rs := range mixed.Traces {
		for j, ss := range rs.ScopeSpans {
			all := req.ResourceSpans[i].ScopeSpans[j].Spans
			half := len(all) / 2
			_, ss.Records = ss.Records.Split(half)
			ss.Spans = all[:half]
		}
	}
	both := run(mixed)
	if len(recs) != 111 {
		t.Fatalf("%d series", len(recs))
	}
	for name, got := range map[string]map[string]point{"messages": msgs, "mixed": both} {
		if len(got) != len(recs) {
			t.Errorf("%s: %d series, records %d", name, len(got), len(recs))
		}
		for k, w := range recs {
			g, ok := got[k]
			if !ok || g.dur.Count != w.dur.Count || g.dur.GetSum() != w.dur.GetSum() || !slices.Equal(g.dur.BucketCounts, w.dur.BucketCounts) {
				t.Errorf("%s: %s differs from the records' count", name, k)
			}
		}
	}
}

// TestScanSpan: scanSpan reads what decoding the record into a Span
// (otlpwire.SpanDecoder, as the JSONL encoder does, and proto.Unmarshal)
// gives fromSpan, for spans that try its corners.
func TestScanSpan(t *testing.T) {
	c := newConnector(t, Config{Dimensions: []Dimension{{Name: "d1"}, {Name: "d2"}, {Name: "d3"}}}, &recorder{})
	arr := &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{
		strValue("x"), {Value: &commonpb.AnyValue_IntValue{IntValue: -3}}}}}}
	kvl := &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: []*commonpb.KeyValue{
		strKV("a", "b"), intKV("c", 1)}}}}
	spans := []*tracepb.Span{
		span("plain", server, statusOK, time.Second),
		span("", tracepb.Span_SpanKind(9), tracepb.Status_StatusCode(7), -time.Second),
		span("neg-kind", tracepb.Span_SpanKind(-1), errCode, 0, strKV("d2", "v2"), strKV("d1", "v1")),
		span("first-wins", client, unset, time.Millisecond, strKV("d1", "first"), strKV("d1", "second"), intKV("d2", -7)),
		span("types", server, statusOK, time.Hour,
			&commonpb.KeyValue{Key: "d1", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: -0.5}}},
			&commonpb.KeyValue{Key: "d2", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: true}}},
			&commonpb.KeyValue{Key: "d3", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte{0, 1}}}}),
		span("nested", server, statusOK, time.Hour, &commonpb.KeyValue{Key: "d1", Value: arr}, &commonpb.KeyValue{Key: "d2", Value: kvl},
			&commonpb.KeyValue{Key: "d3"}),
		span("empty-string", server, statusOK, time.Hour, strKV("d1", ""), &commonpb.KeyValue{Key: "d2", Value: &commonpb.AnyValue{}}),
	}
	// Attributes of events and links are not the span's.
	ev := span("events", server, statusOK, time.Second, strKV("other", "x"))
	ev.TraceId, ev.SpanId = bytes.Repeat([]byte{1}, 16), bytes.Repeat([]byte{2}, 8)
	ev.Events = []*tracepb.Span_Event{{Name: "e", Attributes: []*commonpb.KeyValue{strKV("d1", "event")}}}
	ev.Links = []*tracepb.Span_Link{{TraceId: bytes.Repeat([]byte{3}, 16), SpanId: bytes.Repeat([]byte{4}, 8),
		Attributes: []*commonpb.KeyValue{strKV("d2", "link")}}}
	ev.Status.Message = "message"
	spans = append(spans, ev)

	var records [][]byte
	for _, sp := range spans {
		b, err := proto.Marshal(sp)
		if err != nil {
			t.Fatal(err)
		}
		records = append(records, b)
	}
	// Repeated fields, as protobuf reads them: the last name, kind and
	// times; status messages merge (a later one without a code keeps the
	// code); attributes are all there.
	dup, _ := proto.Marshal(span("first", client, errCode, time.Second, strKV("d1", "a")))
	dup = protowire2(dup, span("second", server, unset, 2*time.Second, strKV("d1", "b")))
	dup = append(dup, 15<<3|2, 2, 2<<3|2, 0) // status {message: ""}
	records = append(records, dup)

	var dec otlpwire.SpanDecoder
	for i, rec := range records {
		var sfScan spanFields
		if !c.scanSpan(rec, &sfScan) {
			t.Fatalf("span %d: scanSpan failed", i)
		}
		scanKeys, scanVals := hitsOf(c)

		for _, decode := range []func() (*tracepb.Span, error){
			func() (*tracepb.Span, error) { return dec.Decode(rec) },
			func() (*tracepb.Span, error) { sp := new(tracepb.Span); return sp, proto.Unmarshal(rec, sp) },
		} {
			sp, err := decode()
			if err != nil {
				t.Fatalf("span %d: %v", i, err)
			}
			var sfMsg spanFields
			c.fromSpan(sp, &sfMsg)
			msgKeys, msgVals := hitsOf(c)
			if !sameFields(sfScan, sfMsg) {
				t.Errorf("span %d: scanned %+v, decoded %+v", i, sfScan, sfMsg)
			}
			if !slices.Equal(scanKeys, msgKeys) {
				t.Errorf("span %d: scanned keys %q, decoded %q", i, scanKeys, msgKeys)
			}
			for j := range scanVals {
				if !proto.Equal(scanVals[j], msgVals[j]) {
					t.Errorf("span %d dimension %d: scanned %v, decoded %v", i, j, scanVals[j], msgVals[j])
				}
			}
		}
	}
	// And a malformed record is refused, not read.
	var sf spanFields
	if c.scanSpan([]byte{5<<3 | 2, 10, 'a'}, &sf) {
		t.Error("a truncated record was read")
	}
}

// protowire2 appends the fields of sp to the record b: one record with
// every field twice.
func protowire2(b []byte, sp *tracepb.Span) []byte {
	more, _ := proto.Marshal(sp)
	return append(b, more...)
}

// hitsOf returns the value key and value of each dimension hit of c.
func hitsOf(c *Connector) ([]string, []*commonpb.AnyValue) {
	var keys []string
	var vals []*commonpb.AnyValue
	for i := range c.hits {
		h := &c.hits[i]
		if !h.found {
			keys, vals = append(keys, "-"), append(vals, nil)
			continue
		}
		keys = append(keys, string(h.appendKey(nil)))
		vals = append(vals, h.value())
	}
	return keys, vals
}

// TestLeases: Enqueue releases the batch's lease once it has read it; a
// refused batch keeps it.
func TestLeases(t *testing.T) {
	rec := &recorder{}
	c := newConnector(t, v2Config(), rec)
	freed := 0
	l := new(pipeline.Lease)
	l.Reset(func() { freed++ })
	b := recordBatch(t, goldenRequest(t))
	b.Leases = []*pipeline.Lease{l}
	if err := c.Enqueue(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if freed != 1 {
		t.Fatalf("freed %d times, want 1", freed)
	}
	if err := c.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	l.Reset(func() { freed++ })
	if err := c.Enqueue(context.Background(), b); !errors.Is(err, pipeline.ErrStopped) {
		t.Fatalf("Enqueue after Shutdown: %v, want ErrStopped", err)
	}
	mb := &pipeline.Batch{Signal: pipeline.Metrics, Leases: []*pipeline.Lease{l}}
	if err := newConnector(t, v2Config(), rec).Enqueue(context.Background(), mb); err == nil || !strings.Contains(err.Error(), "span_metrics") {
		t.Fatalf("a metrics batch: %v, want an error naming the connector", err)
	}
	if freed != 1 {
		t.Fatal("a refused batch was released: its caller releases it")
	}
}

// TestCopiesWhatItKeeps: the batch's memory goes back to its pool after
// Enqueue; what the connector sends later does not change with it.
func TestCopiesWhatItKeeps(t *testing.T) {
	req := goldenRequest(t)
	want := func() map[string]point {
		rec := &recorder{}
		c := newConnector(t, v2Config(), rec)
		_ = c.Enqueue(context.Background(), recordBatch(t, req))
		return flushNow(t, c, rec)
	}()

	rec := &recorder{}
	c := newConnector(t, v2Config(), rec)
	body, _ := proto.Marshal(req)
	b, err := otlpwire.UnmarshalOwnedRequest(pipeline.Traces, body) // the batch aliases body
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Enqueue(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	for i := range body {
		body[i] = 'X'
	}
	got := flushNow(t, c, rec)
	if len(got) != len(want) {
		t.Fatalf("%d series, want %d", len(got), len(want))
	}
	for k := range want {
		if _, ok := got[k]; !ok {
			t.Errorf("series %s changed with the batch's memory", k)
		}
	}
}

// TestShutdownFlushes: a job shorter than the flush interval still gets
// its span metrics; nothing is sent after Shutdown, and Enqueue refuses.
func TestShutdownFlushes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		c := newConnector(t, Config{FlushInterval: time.Minute}, rec)
		ctx := context.Background()
		_ = c.Start(ctx)
		_ = c.Enqueue(ctx, tracesBatch(svc("a"), span("op", server, unset, time.Second)))
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if n := len(rec.got()); n != 0 {
			t.Fatalf("%d flushes before the interval", n)
		}
		ps := flushNow(t, c, rec)
		if _, p := only(t, ps); p.calls.GetAsInt() != 1 {
			t.Fatalf("calls %d", p.calls.GetAsInt())
		}
		if rec.hints != 1 {
			t.Errorf("%d flush hints, want 1 a flush", rec.hints)
		}
		if err := c.Enqueue(ctx, tracesBatch(svc("a"), span("op", server, unset, time.Second))); !errors.Is(err, pipeline.ErrStopped) {
			t.Fatalf("Enqueue after Shutdown: %v", err)
		}
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		if err := c.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		if n := len(rec.got()); n != 1 {
			t.Fatalf("%d flushes, want only Shutdown's", n)
		}
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		if n := len(rec.got()); n != 1 {
			t.Fatalf("Start after Shutdown flushed")
		}
	})
}

// TestShutdownNeverStarted: Shutdown flushes without Start too.
func TestShutdownNeverStarted(t *testing.T) {
	rec := &recorder{}
	c := newConnector(t, Config{}, rec)
	_ = c.Enqueue(context.Background(), tracesBatch(svc("a"), span("op", server, unset, time.Second)))
	flushNow(t, c, rec)
}

// TestCumulative: a series keeps counting from its first span, each flush
// sends every series, and a sent batch does not change afterwards.
func TestCumulative(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		c := newConnector(t, Config{FlushInterval: 10 * time.Second}, rec)
		ctx := context.Background()
		defer c.Shutdown(ctx)
		_ = c.Start(ctx)
		time.Sleep(time.Second)
		t0 := time.Now()
		_ = c.Enqueue(ctx, tracesBatch(svc("a"), span("x", server, unset, 3*time.Millisecond), span("y", server, unset, time.Second)))
		time.Sleep(9 * time.Second)
		synctest.Wait()
		_ = c.Enqueue(ctx, tracesBatch(svc("a"), span("x", server, unset, 5*time.Millisecond)))
		time.Sleep(10 * time.Second)
		synctest.Wait()
		bs := rec.got()
		if len(bs) != 2 {
			t.Fatalf("%d flushes", len(bs))
		}
		first, second := points(t, bs[0], c), points(t, bs[1], c)
		if len(first) != 2 || len(second) != 2 {
			t.Fatalf("%d and %d series", len(first), len(second))
		}
		for k, p := range second {
			want := map[string]uint64{"x": 2, "y": 1}[p.calls.Attributes[1].Value.GetStringValue()]
			if p.dur.Count != want || p.dur.StartTimeUnixNano != uint64(t0.UnixNano()) ||
				p.dur.TimeUnixNano != uint64(t0.Add(19*time.Second).UnixNano()) {
				t.Errorf("%s: count %d start %d time %d", k, p.dur.Count, p.dur.StartTimeUnixNano, p.dur.TimeUnixNano)
			}
			if f := first[k]; f.dur.Count != 1 || f.calls.GetAsInt() != 1 {
				t.Errorf("%s: the first flush's point changed: count %d calls %d", k, f.dur.Count, f.calls.GetAsInt())
			}
			if p.calls.Attributes[1].Value.GetStringValue() == "x" && (p.dur.GetSum() != 8 || p.dur.BucketCounts[1] != 1 || p.dur.BucketCounts[2] != 1) {
				t.Errorf("x: sum %g buckets %v", p.dur.GetSum(), p.dur.BucketCounts)
			}
		}
		// The metrics pipeline's processors change a sent batch's
		// resources: the next flush's are the connector's own again.
		bs[1].Metrics[0].Resource.Attributes[0].Value = strValue("changed")
		bs[1].Metrics[0].Resource.Attributes = append(bs[1].Metrics[0].Resource.Attributes, strKV("more", "x"))
		time.Sleep(10 * time.Second)
		synctest.Wait()
		third := rec.last(t).Metrics[0].Resource.Attributes
		if kvsString(third) != `service.name="a";` {
			t.Errorf("resource %s", kvsString(third))
		}
	})
}

// TestDelta: each flush sends what was counted since the last one, from
// its time; an idle series is neither sent nor kept; a refused flush's
// counts go with the next one.
func TestDelta(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var full bool
		rec := &recorder{fail: func() error {
			if full {
				return pipeline.ErrFull
			}
			return nil
		}}
		c := newConnector(t, Config{FlushInterval: 10 * time.Second, Delta: true}, rec)
		ctx := context.Background()
		defer c.Shutdown(ctx)
		_ = c.Start(ctx)
		t0 := time.Now()
		x := span("x", server, unset, time.Millisecond)
		y := span("y", server, unset, time.Millisecond)
		_ = c.Enqueue(ctx, tracesBatch(svc("a"), x, x, y))
		time.Sleep(10 * time.Second) // flush 1 at t0+10s: x 2, y 1
		synctest.Wait()
		_ = c.Enqueue(ctx, tracesBatch(svc("a"), x))
		time.Sleep(10 * time.Second) // flush 2 at t0+20s: x 1 since t0+10s; y idle, dropped
		synctest.Wait()
		full = true
		_ = c.Enqueue(ctx, tracesBatch(svc("a"), x, y))
		time.Sleep(10 * time.Second) // flush 3 at t0+30s refused
		synctest.Wait()
		full = false
		_ = c.Enqueue(ctx, tracesBatch(svc("a"), x))
		time.Sleep(10 * time.Second) // flush 4 at t0+40s: x 2 since t0+20s, y 1 since t0+20s
		synctest.Wait()
		time.Sleep(30 * time.Second) // nothing counted: nothing sent
		synctest.Wait()

		at := func(s int) uint64 { return uint64(t0.Add(time.Duration(s) * time.Second).UnixNano()) }
		type want struct {
			count       uint64
			start, time uint64
		}
		wants := []map[string]want{
			{"x": {2, at(0), at(10)}, "y": {1, at(0), at(10)}},
			{"x": {1, at(10), at(20)}},
			{"x": {2, at(20), at(40)}, "y": {1, at(20), at(40)}},
		}
		bs := rec.got()
		if len(bs) != len(wants) || rec.refused != 1 {
			t.Fatalf("%d flushes sent, %d refused; want %d, 1", len(bs), rec.refused, len(wants))
		}
		for i, b := range bs {
			if tp := b.Metrics[0].ScopeMetrics[0].Metrics[0].GetSum().AggregationTemporality; tp != metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA {
				t.Fatalf("temporality %v", tp)
			}
			if tp := b.Metrics[0].ScopeMetrics[0].Metrics[1].GetHistogram().AggregationTemporality; tp != metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA {
				t.Fatalf("temporality %v", tp)
			}
			ps := points(t, b, c)
			if len(ps) != len(wants[i]) {
				t.Errorf("flush %d: %d series, want %d", i, len(ps), len(wants[i]))
			}
			for _, p := range ps {
				name := p.calls.Attributes[1].Value.GetStringValue()
				w := wants[i][name]
				if got := (want{p.dur.Count, p.dur.StartTimeUnixNano, p.dur.TimeUnixNano}); got != w || p.calls.StartTimeUnixNano != w.start {
					t.Errorf("flush %d %s: %+v, want %+v", i, name, got, w)
				}
			}
		}
		if c.nSeries != 0 || len(c.resources) != 0 || len(c.resOrder) != 0 {
			t.Errorf("idle: %d series, %d resources kept", c.nSeries, len(c.resources))
		}
	})
}

// TestCumulativeRefused: a refused cumulative flush's counts are sent by
// the next one, and the failure is logged naming the connector.
func TestCumulativeRefused(t *testing.T) {
	full := true
	rec := &recorder{fail: func() error {
		if full {
			return pipeline.ErrFull
		}
		return nil
	}}
	log, lb := newLog()
	c, err := New("span_metrics/x", Config{}, rec, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_ = c.Enqueue(ctx, tracesBatch(svc("a"), span("x", server, unset, time.Millisecond)))
	if err := c.flush(ctx); !errors.Is(err, pipeline.ErrFull) {
		t.Fatalf("flush: %v", err)
	}
	if !strings.Contains(lb.String(), "connector=span_metrics/x") || !strings.Contains(lb.String(), "buffer full") {
		t.Errorf("log: %s", lb)
	}
	full = false
	_ = c.Enqueue(ctx, tracesBatch(svc("a"), span("x", server, unset, time.Millisecond)))
	if _, p := only(t, flushNow(t, c, rec)); p.dur.Count != 2 {
		t.Fatalf("count %d, want 2", p.dur.Count)
	}
}

// TestCacheSize: past CacheSize series, spans of new series are counted
// and logged once a flush; the series kept go on counting.
func TestCacheSize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		log, lb := newLog()
		c, err := New("span_metrics", Config{CacheSize: 3, FlushInterval: 10 * time.Second}, rec, log)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		defer c.Shutdown(ctx)
		_ = c.Start(ctx)
		var spans []*tracepb.Span
		for i := range 5 {
			spans = append(spans, span(fmt.Sprint("op", i), server, unset, time.Millisecond))
		}
		_ = c.Enqueue(ctx, tracesBatch(svc("a"), spans...))
		_ = c.Enqueue(ctx, tracesBatch(svc("b"), spans[0]))
		_ = c.Enqueue(ctx, tracesBatch(svc("a"), spans...))
		time.Sleep(10 * time.Second)
		synctest.Wait()
		ps := points(t, rec.last(t), c)
		if len(ps) != 3 {
			t.Fatalf("%d series, want 3", len(ps))
		}
		for k, p := range ps {
			if p.dur.Count != 2 {
				t.Errorf("%s: count %d, want 2", k, p.dur.Count)
			}
		}
		logs := lb.String()
		if strings.Count(logs, "series limit reached") != 1 || !strings.Contains(logs, "spans=5 spans_total=5 series_limit=3") {
			t.Fatalf("log: %s", logs)
		}
		// No new series refused: no line.
		_ = c.Enqueue(ctx, tracesBatch(svc("a"), spans[0]))
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if strings.Count(lb.String(), "series limit reached") != 1 {
			t.Fatalf("log: %s", lb)
		}
		_ = c.Enqueue(ctx, tracesBatch(svc("c"), spans[0]))
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if !strings.Contains(lb.String(), "spans=1 spans_total=6") {
			t.Fatalf("log: %s", lb)
		}
		if c.nSeries != 3 || len(c.resources) > 3 {
			t.Fatalf("%d series, %d resources held", c.nSeries, len(c.resources))
		}
	})
}

// TestResourceBound: past maxResources, spans of new resources are
// counted as not counted, and resources left without series go.
func TestResourceBound(t *testing.T) {
	rec := &recorder{}
	c := newConnector(t, Config{CacheSize: 10 * maxResources}, rec)
	ctx := context.Background()
	for i := range maxResources + 5 {
		_ = c.Enqueue(ctx, tracesBatch(svc(fmt.Sprint("svc", i)), span("op", server, unset, 0)))
	}
	if len(c.resources) != maxResources || c.overflow != 5 {
		t.Fatalf("%d resources, %d spans not counted", len(c.resources), c.overflow)
	}
	if got := points(t, func() *pipeline.Batch { _ = c.flush(ctx); return rec.last(t) }(), c); len(got) != maxResources {
		t.Fatalf("%d series", len(got))
	}

	// A resource whose every span was refused for the series bound holds
	// nothing past the next flush.
	c = newConnector(t, Config{CacheSize: 1}, rec)
	_ = c.Enqueue(ctx, tracesBatch(svc("a"), span("op", server, unset, 0)))
	_ = c.Enqueue(ctx, tracesBatch(svc("b"), span("op", server, unset, 0)))
	if len(c.resources) != 2 {
		t.Fatalf("%d resources", len(c.resources))
	}
	_ = c.flush(ctx)
	if len(c.resources) != 1 || len(c.resOrder) != 1 {
		t.Fatalf("%d resources after a flush", len(c.resources))
	}
}

// TestResourceIdentity: resources are the same with their attributes in
// another order, different with any attribute different; spans of a
// resource without service.name are not counted, and say so.
func TestResourceIdentity(t *testing.T) {
	rec := &recorder{}
	log, lb := newLog()
	c, _ := New("span_metrics", Config{}, rec, log)
	ctx := context.Background()
	sp := span("op", server, unset, 0)
	_ = c.Enqueue(ctx, tracesBatch(svc("a", strKV("k", "v"), intKV("n", 1)), sp))
	_ = c.Enqueue(ctx, tracesBatch([]*commonpb.KeyValue{intKV("n", 1), strKV("k", "v"), strKV("service.name", "a")}, sp))
	_ = c.Enqueue(ctx, tracesBatch(svc("a", strKV("k", "v"), strKV("n", "1")), sp))
	_ = c.Enqueue(ctx, tracesBatch([]*commonpb.KeyValue{strKV("k", "v")}, sp, sp))
	_ = c.Enqueue(ctx, tracesBatch([]*commonpb.KeyValue{intKV("service.name", 7)}, sp))
	ps := flushNow(t, c, rec)
	if len(rec.last(t).Metrics) != 3 || len(ps) != 3 {
		t.Fatalf("%d resources, %d series; want 3, 3", len(rec.last(t).Metrics), len(ps))
	}
	for k, p := range ps {
		want := uint64(1)
		if strings.Contains(k, "n=int:1") {
			want = 2
		}
		if p.dur.Count != want {
			t.Errorf("%s: count %d, want %d", k, p.dur.Count, want)
		}
		if strings.Contains(k, "int:7") && !strings.Contains(k, `| service.name="7";`) {
			t.Errorf("an int service.name: %s", k)
		}
	}
	// Resource attributes are the first resource's, in its order.
	if s := kvsString(rec.last(t).Metrics[0].Resource.Attributes); s != `service.name="a";k="v";n=int:1;` {
		t.Errorf("resource %s", s)
	}
	if !strings.Contains(lb.String(), "without service.name") || !strings.Contains(lb.String(), "spans=2") {
		t.Errorf("log: %s", lb)
	}
}

// TestDimensions: a dimension is the span's attribute, else the resource's,
// else the default, else left out; values keep their type, and values of
// different types are different series.
func TestDimensions(t *testing.T) {
	def := "none"
	cfg := Config{Dimensions: []Dimension{{Name: "d.span"}, {Name: "d.res"}, {Name: "d.def", Default: &def}, {Name: "d.missing"}}}
	rec := &recorder{}
	c := newConnector(t, cfg, rec)
	res := svc("svc", strKV("d.res", "from-resource"), strKV("d.span", "resource-loses"))
	_ = c.Enqueue(context.Background(), tracesBatch(res,
		span("a", server, unset, 0, strKV("d.span", "s")),
		span("a", server, unset, 0, strKV("d.span", "s"), strKV("d.res", "from-span"), intKV("d.def", 3)),
		span("a", server, unset, 0, intKV("d.span", 1)),
		span("a", server, unset, 0, strKV("d.span", "1")),
		span("a", server, unset, 0),
	))
	ps := flushNow(t, c, rec)
	want := []string{
		`service.name="svc";span.name="a";span.kind="SPAN_KIND_SERVER";status.code="STATUS_CODE_UNSET";d.span="s";d.res="from-resource";d.def="none";`,
		`service.name="svc";span.name="a";span.kind="SPAN_KIND_SERVER";status.code="STATUS_CODE_UNSET";d.span="s";d.res="from-span";d.def=int:3;`,
		`service.name="svc";span.name="a";span.kind="SPAN_KIND_SERVER";status.code="STATUS_CODE_UNSET";d.span=int:1;d.res="from-resource";d.def="none";`,
		`service.name="svc";span.name="a";span.kind="SPAN_KIND_SERVER";status.code="STATUS_CODE_UNSET";d.span="1";d.res="from-resource";d.def="none";`,
		`service.name="svc";span.name="a";span.kind="SPAN_KIND_SERVER";status.code="STATUS_CODE_UNSET";d.span="resource-loses";d.res="from-resource";d.def="none";`,
	}
	var got []string
	for _, p := range ps {
		got = append(got, kvsString(p.calls.Attributes))
		if p.calls.Attributes[4].Key != instanceIDKey {
			t.Errorf("attribute 5 is %s", p.calls.Attributes[4].Key)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("series\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestSeconds: unit "s": bounds, sums and the unit in seconds, the default
// buckets too; a span that ends before it starts lasts 0.
func TestSeconds(t *testing.T) {
	for _, tc := range []struct {
		buckets []time.Duration
		bounds  []float64
	}{
		{nil, []float64{0.002, 0.004, 0.006, 0.008, 0.01, 0.05, 0.1, 0.2, 0.4, 0.8, 1, 1.4, 2, 5, 10, 15}},
		{[]time.Duration{250 * time.Millisecond, 2 * time.Second}, []float64{0.25, 2}},
	} {
		rec := &recorder{}
		c := newConnector(t, Config{Unit: "s", Buckets: tc.buckets}, rec)
		_ = c.Enqueue(context.Background(), tracesBatch(svc("a"),
			span("a", server, unset, 1500*time.Millisecond), span("a", server, unset, 2*time.Second), span("a", server, unset, -time.Second)))
		_, p := only(t, flushNow(t, c, rec))
		if !slices.Equal(p.dur.ExplicitBounds, tc.bounds) {
			t.Errorf("bounds %v, want %v", p.dur.ExplicitBounds, tc.bounds)
		}
		if p.dur.GetSum() != 3.5 || p.dur.BucketCounts[0] != 1 || p.dur.BucketCounts[slices.Index(tc.bounds, 2)] != 2 {
			t.Errorf("sum %g buckets %v", p.dur.GetSum(), p.dur.BucketCounts)
		}
		if u := rec.last(t).Metrics[0].ScopeMetrics[0].Metrics[1].Unit; u != "s" {
			t.Errorf("unit %q", u)
		}
	}
	// Milliseconds by default, on the collector's default buckets.
	rec := &recorder{}
	c := newConnector(t, Config{}, rec)
	_ = c.Enqueue(context.Background(), tracesBatch(svc("a"), span("a", server, unset, 1500*time.Microsecond)))
	_, p := only(t, flushNow(t, c, rec))
	if p.dur.GetSum() != 1.5 || p.dur.BucketCounts[0] != 1 || len(p.dur.BucketCounts) != 17 || p.dur.ExplicitBounds[15] != 15000 {
		t.Errorf("ms: sum %g buckets %v bounds %v", p.dur.GetSum(), p.dur.BucketCounts, p.dur.ExplicitBounds)
	}
	if m := rec.last(t).Metrics[0].ScopeMetrics[0].Metrics; m[1].Unit != "ms" || m[0].Unit != "" ||
		m[0].Name != "traces.span.metrics.calls" || m[1].Name != "traces.span.metrics.duration" {
		t.Errorf("metrics %s %q, %s %q", m[0].Name, m[0].Unit, m[1].Name, m[1].Unit)
	}
}

// TestNoEmptyOutput: flushes with nothing counted send nothing.
func TestNoEmptyOutput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		c := newConnector(t, Config{FlushInterval: time.Second}, rec)
		ctx := context.Background()
		_ = c.Start(ctx)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		_ = c.Enqueue(ctx, &pipeline.Batch{Signal: pipeline.Traces})
		_ = c.Enqueue(ctx, tracesBatch([]*commonpb.KeyValue{strKV("no", "service")}, span("a", server, unset, 0)))
		_ = c.Enqueue(ctx, tracesBatch(svc("empty")))
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if err := c.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		if n := len(rec.got()); n != 0 {
			t.Fatalf("%d batches sent", n)
		}
		if len(c.resources) != 0 {
			t.Fatalf("%d resources kept", len(c.resources))
		}
	})
}

// TestConfig: New refuses what it cannot run, naming it.
func TestConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Unit: "us"}, `unit "us"`},
		{Config{FlushInterval: -time.Second}, "metrics_flush_interval"},
		{Config{CacheSize: -1}, "dimensions_cache_size"},
		{Config{Buckets: []time.Duration{time.Second, time.Second}}, "bucket 1"},
		{Config{Buckets: []time.Duration{0}}, "bucket 0"},
		{Config{Dimensions: []Dimension{{Name: "a"}, {Name: "a"}}}, `dimension "a"`},
		{Config{Dimensions: []Dimension{{Name: "span.kind"}}}, `dimension "span.kind"`},
		{Config{Dimensions: []Dimension{{Name: "collector.instance.id"}}}, `dimension "collector.instance.id"`},
		{Config{Dimensions: []Dimension{{}}}, "dimension 0"},
	} {
		_, err := New("span_metrics/t", tc.cfg, &recorder{}, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "span_metrics/t") {
			t.Errorf("%+v: %v, want an error naming %s", tc.cfg, err, tc.want)
		}
	}
	if _, err := New("x", Config{}, nil, nil); err == nil {
		t.Error("no next consumer accepted")
	}
	c, err := New("x", Config{Namespace: "ns", Buckets: []time.Duration{}}, &recorder{}, nil)
	if err != nil || c.callsName != "ns.calls" || c.durName != "ns.duration" || len(c.bounds) != 0 || c.interval != time.Minute || c.maxSeries != 1000 {
		t.Errorf("defaults: %v %+v", err, c)
	}
}

// TestConcurrent: receivers enqueue from many goroutines while the timer
// flushes; every span is counted once (run with -race).
func TestConcurrent(t *testing.T) {
	req := goldenRequest(t)
	rec := &recorder{}
	c := newConnector(t, Config{FlushInterval: time.Millisecond, Dimensions: v2Config().Dimensions}, rec)
	ctx := context.Background()
	_ = c.Start(ctx)
	const workers, each = 8, 20
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				b := recordBatch(t, req)
				if (w+i)%2 == 0 {
					b = messageBatch(req)
				}
				if err := c.Enqueue(ctx, b); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if err := c.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	ps := points(t, rec.last(t), c) // Shutdown's, after the timer's
	var total uint64
	for _, p := range ps {
		total += p.dur.Count
	}
	if total != workers*each*120 {
		t.Fatalf("%d spans counted, want %d", total, workers*each*120)
	}
	for _, b := range rec.got() {
		points(t, b, c) // calls == count in every flush
	}
}

// TestInstanceID: one random UUID per connector.
func TestInstanceID(t *testing.T) {
	a, b := newConnector(t, Config{}, &recorder{}), newConnector(t, Config{}, &recorder{})
	ida, idb := a.instanceKV.Value.GetStringValue(), b.instanceKV.Value.GetStringValue()
	if !uuidRE.MatchString(ida) || !uuidRE.MatchString(idb) || ida == idb {
		t.Fatalf("ids %q %q", ida, idb)
	}
}

// TestHistogramBounds: a duration on a bound counts in that bound's bucket
// (the bound is inclusive), as the collector's.
func TestHistogramBounds(t *testing.T) {
	rec := &recorder{}
	c := newConnector(t, Config{Buckets: []time.Duration{time.Millisecond, time.Second}}, rec)
	_ = c.Enqueue(context.Background(), tracesBatch(svc("a"),
		span("a", server, unset, 0), span("a", server, unset, time.Millisecond), span("a", server, unset, time.Millisecond+1),
		span("a", server, unset, time.Second), span("a", server, unset, time.Hour)))
	_, p := only(t, flushNow(t, c, rec))
	sum := 0.0
	for _, ms := range []float64{0, 1, 1.000001, 1000, 3.6e6} {
		sum += ms
	}
	if !slices.Equal(p.dur.BucketCounts, []uint64{2, 2, 1}) || p.dur.GetSum() != sum {
		t.Fatalf("buckets %v sum %v, want [2 2 1] %v", p.dur.BucketCounts, p.dur.GetSum(), sum)
	}
}

// A series' point attributes are one set for its life, made in the
// SharedAttrs the connector is given: the calls (field 7) and duration
// (field 9) points of every flush carry its slice, the sinks' encoders
// store both encodings with it at the first flush and write them at the
// next, with the bytes of encoders without the sets.
func TestSeriesAttributesShared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		shared := pipeline.NewSharedAttrs()
		rec := &recorder{}
		c := newConnector(t, Config{FlushInterval: 10 * time.Second, SharedAttrs: shared}, rec)
		ctx := context.Background()
		defer c.Shutdown(ctx)
		_ = c.Start(ctx)
		_ = c.Enqueue(ctx, tracesBatch(svc("a"), span("x", server, unset, 3*time.Millisecond), span("y", client, errCode, time.Second)))
		time.Sleep(10 * time.Second)
		synctest.Wait()
		_ = c.Enqueue(ctx, tracesBatch(svc("a"), span("x", server, unset, 5*time.Millisecond)))
		time.Sleep(10 * time.Second)
		synctest.Wait()
		bs := rec.got()
		if len(bs) != 2 {
			t.Fatalf("%d flushes", len(bs))
		}
		je, pe := otlpwire.MetricsEncoder{Shared: shared}, otlpwire.ProtoEncoder{Shared: shared}
		var plain otlpwire.ProtoEncoder
		sets := map[*pipeline.AttrEncodings]bool{}
		for i, b := range bs {
			for k, p := range points(t, b, c) {
				set := shared.Find(p.calls.Attributes)
				if set == nil || shared.Find(p.dur.Attributes) != set {
					t.Fatalf("flush %d, %s: the calls' and duration's attributes are not one set", i, k)
				}
				sets[set] = true
				if stored := set.JSON() != nil && set.Proto(7) != nil && set.Proto(9) != nil; stored != (i > 0) {
					t.Errorf("flush %d, %s: encodings stored %v before the flush is encoded", i, k, stored)
				}
			}
			if !bytes.Equal(je.AppendMetrics(nil, b.Metrics), otlpwire.AppendMetrics(nil, b.Metrics)) {
				t.Errorf("flush %d: OTLP/JSON with the sets differs from without", i)
			}
			if !bytes.Equal(pe.AppendMetricsRequest(nil, b.Metrics), plain.AppendMetricsRequest(nil, b.Metrics)) {
				t.Errorf("flush %d: protobuf with the sets differs from without", i)
			}
		}
		if len(sets) != 2 {
			t.Errorf("%d sets for two series over two flushes", len(sets))
		}
	})
}
