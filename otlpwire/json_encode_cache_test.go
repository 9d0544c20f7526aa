package otlpwire

import (
	"bytes"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/otelstep/otelstep/internal/otlptest"
	"github.com/otelstep/otelstep/pipeline"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"
)

func sv(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// gaugeOf is a request of one gauge point with attributes a.
func gaugeOf(a []*commonpb.KeyValue) []*metricspb.ResourceMetrics {
	return []*metricspb.ResourceMetrics{{ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{{Name: "g",
		Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: []*metricspb.NumberDataPoint{{Attributes: a}}}}}}}}}}
}

// Scrape after scrape of every point kind, the encoder given the sets
// writes what AppendMetrics writes, and stores the JSON of the point
// attributes' and metadata's sets only.
func TestMetricsEncoderMatchesAppendMetrics(t *testing.T) {
	sim := otlptest.NewScrapeSim(60, nil)
	e := MetricsEncoder{Shared: sim.Shared}
	var got []byte
	var rms []*metricspb.ResourceMetrics
	for n := range 6 {
		rms = sim.Batch(n)
		want := AppendMetrics(nil, rms, "Authorization")
		got = e.AppendMetrics(got[:0], rms, "Authorization")
		if !bytes.Equal(got, want) {
			t.Fatalf("scrape %d: with stored encodings differs\n got %s\nwant %s", n, got, want)
		}
		if strings.Contains(string(got), "t0k") {
			t.Fatal("Authorization written")
		}
	}
	stored := func(kvs []*commonpb.KeyValue) bool {
		a := sim.Shared.Find(kvs)
		return a != nil && a.JSON() != nil
	}
	if !stored(sim.Meta) {
		t.Error("the metadata's set has no stored JSON")
	}
	n := 0
	for _, group := range [][][]*commonpb.KeyValue{sim.Gauge, sim.Hist, sim.Summ[:len(sim.Summ)-1], sim.Exp} {
		for i, a := range group {
			if !stored(a) {
				t.Errorf("point set %d has no stored JSON", i)
			}
			n++
		}
	}
	if n < 4*60 {
		t.Fatalf("%d sets checked", n)
	}
	res, scope := rms[0].Resource.Attributes, rms[0].ScopeMetrics[0].Scope.Attributes
	if sim.Shared.Find(res) == nil || sim.Shared.Find(sim.ExemplarAttrs) == nil {
		t.Fatal("the resource's and the exemplar's attributes are no sets: the next check checks nothing")
	}
	if stored(sim.ExemplarAttrs) || stored(res) || stored(scope) {
		t.Error("exemplar, resource or scope attributes stored")
	}
}

// The stored bytes are what is written: corrupting them shows up in the
// output, which proves the second request is served from them (and that
// the test above compares something).
func TestMetricsEncoderServesStoredJSON(t *testing.T) {
	shared := pipeline.NewSharedAttrs()
	set := shared.Share([]*commonpb.KeyValue{sv("k", "v")})
	rms := gaugeOf(set.KeyValues())
	e := MetricsEncoder{Shared: shared}
	first := string(e.AppendMetrics(nil, rms))
	stored := set.Encodings().JSON()
	if string(stored) != `[{"key":"k","value":{"stringValue":"v"}}]` {
		t.Fatalf("stored encoding %q", stored)
	}
	stored[bytes.LastIndexByte(stored, 'v')] = 'X' // the value "v"
	if second := string(e.AppendMetrics(nil, rms)); second == first || !strings.Contains(second, `"stringValue":"X"`) {
		t.Fatalf("second encoding not from the stored JSON: %s", second)
	}
	// An encoder without the table does not look.
	if plain := string((&MetricsEncoder{}).AppendMetrics(nil, rms)); plain != first {
		t.Fatalf("an encoder without Shared wrote %s", plain)
	}
	runtime.KeepAlive(set)
}

// otherSlices are slices made from set's that are not its slice: a
// processor's replacement, appends, parts and an equal copy.
func otherSlices(set *pipeline.AttrSet) map[string][]*commonpb.KeyValue {
	s := set.KeyValues()
	return map[string][]*commonpb.KeyValue{
		"replaced": {sv("a", "other")},
		"appended": append(s, sv("c", "3")),
		"prefix":   s[:1],
		"suffix":   s[1:],
		"copy":     append([]*commonpb.KeyValue(nil), s...),
	}
}

// A slice that is not the set's is encoded afresh, however it was made
// from the set's, even while the set's stored bytes are wrong.
func TestMetricsEncoderOtherSlicesNotServed(t *testing.T) {
	shared := pipeline.NewSharedAttrs()
	set := shared.Share([]*commonpb.KeyValue{sv("a", "1"), sv("b", "2")})
	e := MetricsEncoder{Shared: shared}
	e.AppendMetrics(nil, gaugeOf(set.KeyValues()))
	if set.Encodings().JSON() == nil {
		t.Fatal("nothing stored")
	}
	copy(set.Encodings().JSON(), "[XXXX") // served, this would show
	for name, a := range otherSlices(set) {
		if got, want := e.AppendMetrics(nil, gaugeOf(a)), AppendMetrics(nil, gaugeOf(a)); !bytes.Equal(got, want) {
			t.Errorf("%s: got %s\nwant %s", name, got, want)
		}
	}
	runtime.KeepAlive(set)
}

// Slices that are no set's may be mutated in place between batches
// (processors may do that): they are encoded afresh every time.
func TestMetricsEncoderUnsharedMutatedInPlace(t *testing.T) {
	attrs := make([]*commonpb.KeyValue, 1, 4)
	rms := gaugeOf(attrs)
	e := MetricsEncoder{Shared: pipeline.NewSharedAttrs()}
	for _, v := range []string{"before", "after"} {
		attrs[0] = sv("k", v)
		if got, want := e.AppendMetrics(nil, rms), AppendMetrics(nil, rms); !bytes.Equal(got, want) {
			t.Fatalf("got %s\nwant %s", got, want)
		}
	}
}

// A point still in flight when its set is collected (the series ended) is
// encoded afresh, and the set's entry is gone.
func TestEncodersSetCollected(t *testing.T) {
	shared := pipeline.NewSharedAttrs()
	set := shared.Share([]*commonpb.KeyValue{sv("k", "v")})
	rms := gaugeOf(set.KeyValues()) // the point holds the slice only
	je, pe := MetricsEncoder{Shared: shared}, ProtoEncoder{Shared: shared}
	je.AppendMetrics(nil, rms)
	pe.AppendMetricsRequest(nil, rms)
	if set.Encodings().JSON() == nil || set.Encodings().Proto(7) == nil {
		t.Fatal("nothing stored")
	}
	set = nil
	deadline := time.Now().Add(time.Minute)
	for runtime.GC(); shared.Len() > 0; runtime.GC() {
		if time.Now().After(deadline) {
			t.Fatalf("%d entries a minute after their set was dropped", shared.Len())
		}
		runtime.Gosched()
	}
	if got, want := je.AppendMetrics(nil, rms), AppendMetrics(nil, rms); !bytes.Equal(got, want) {
		t.Fatalf("OTLP/JSON: got %s\nwant %s", got, want)
	}
	var plain ProtoEncoder
	if got, want := pe.AppendMetricsRequest(nil, rms), plain.AppendMetricsRequest(nil, rms); !bytes.Equal(got, want) {
		t.Fatal("protobuf: differs from the encoding without sets")
	}
}

// The sinks encode at once (the file writer and the HTTP workers), each
// HTTP worker with an encoder of its own, all storing into and reading the
// same sets (run with -race).
func TestEncodersConcurrent(t *testing.T) {
	sim := otlptest.NewScrapeSim(40, nil)
	batches := make([][]*metricspb.ResourceMetrics, 4)
	wantJSON, wantPB := make([][]byte, len(batches)), make([][]byte, len(batches))
	for n := range batches {
		batches[n] = sim.Batch(n)
		wantJSON[n] = AppendMetrics(nil, batches[n])
		wantPB[n] = (&ProtoEncoder{}).AppendMetricsRequest(nil, batches[n])
	}
	je := MetricsEncoder{Shared: sim.Shared}
	errs := make(chan error, 8)
	done := make(chan struct{})
	for g := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			pe := ProtoEncoder{Shared: sim.Shared}
			for i := range 40 {
				n := (g + i) % len(batches)
				if got := je.AppendMetrics(nil, batches[n]); !bytes.Equal(got, wantJSON[n]) {
					errs <- fmt.Errorf("goroutine %d, batch %d: OTLP/JSON differs", g, n)
					return
				}
				if got := pe.AppendMetricsRequest(nil, batches[n]); !bytes.Equal(got, wantPB[n]) {
					errs <- fmt.Errorf("goroutine %d, batch %d: protobuf differs", g, n)
					return
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	runtime.KeepAlive(sim)
}

// BenchmarkMetricsEncoderShared is the file sink's steady state: the same
// 1000 series every call with new values. "uncached" is the package-level
// AppendMetrics (no stored encodings).
func BenchmarkMetricsEncoderShared(b *testing.B) {
	shared := pipeline.NewSharedAttrs()
	rms, sets := sharedBatch1000(shared)
	e := MetricsEncoder{Shared: shared}
	run := func(b *testing.B, enc func([]byte) []byte) {
		buf := enc(nil)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			buf = enc(buf[:0])
		}
		b.ReportMetric(1000*float64(b.N)/b.Elapsed().Seconds(), "points/s")
	}
	b.Run("uncached", func(b *testing.B) { run(b, func(d []byte) []byte { return AppendMetrics(d, rms, "Authorization") }) })
	b.Run("cached", func(b *testing.B) { run(b, func(d []byte) []byte { return e.AppendMetrics(d, rms, "Authorization") }) })
	runtime.KeepAlive(sets)
}

// sharedBatch1000 is 10 resources × 10 gauges × 10 points with scraper-like
// attributes (4 labels), each point's a set shared in shared (if not nil),
// and the sets, which the caller holds while it wants them found.
func sharedBatch1000(shared *pipeline.SharedAttrs) ([]*metricspb.ResourceMetrics, []*pipeline.AttrSet) {
	var rms []*metricspb.ResourceMetrics
	var sets []*pipeline.AttrSet
	for r := range 10 {
		var ms []*metricspb.Metric
		for m := range 10 {
			var pts []*metricspb.NumberDataPoint
			for p := range 10 {
				a := []*commonpb.KeyValue{sv("cpu", fmt.Sprint(p)), sv("mode", "user"), sv("instance", "node-exporter:9100"), sv("job", "node")}
				if shared != nil {
					set := shared.Share(a)
					sets = append(sets, set)
					a = set.KeyValues()
				}
				pts = append(pts, &metricspb.NumberDataPoint{Attributes: a, TimeUnixNano: 1700000000000000000, StartTimeUnixNano: 1690000000000000000,
					Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: float64(p) * 1.25}})
			}
			ms = append(ms, &metricspb.Metric{Name: fmt.Sprintf("node_metric_%d", m), Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: pts}}})
		}
		rms = append(rms, &metricspb.ResourceMetrics{
			Resource:     &resourcepb.Resource{Attributes: []*commonpb.KeyValue{sv("service.name", "node"), sv("host", fmt.Sprint(r))}},
			ScopeMetrics: []*metricspb.ScopeMetrics{{Scope: &commonpb.InstrumentationScope{Name: "otelstep"}, Metrics: ms}},
		})
	}
	return rms, sets
}

// Points that repeat the last start or time (as a scrape's do) and points
// that do not, zeros among them, in every point type: the timestamps the
// writer keeps the digits of come out as protojson writes them, through
// both encoders.
func TestPointTimesRepeat(t *testing.T) {
	const t0, t1 = 1_780_000_000_000_000_000, 1_780_000_015_000_000_000
	times := [][2]uint64{{t0, t1}, {t0, t1}, {0, t1}, {t0, t1}, {t0 + 1, t1}, {t0 + 1, 0}, {5, 7}, {t0, t1}, {t0, t1 + 9}}
	var num []*metricspb.NumberDataPoint
	var hist []*metricspb.HistogramDataPoint
	var sum []*metricspb.SummaryDataPoint
	for i, tt := range times {
		num = append(num, &metricspb.NumberDataPoint{StartTimeUnixNano: tt[0], TimeUnixNano: tt[1], Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: float64(i)}})
		hist = append(hist, &metricspb.HistogramDataPoint{StartTimeUnixNano: tt[1], TimeUnixNano: tt[0], Count: uint64(i)})
		sum = append(sum, &metricspb.SummaryDataPoint{StartTimeUnixNano: tt[0], TimeUnixNano: tt[1], Count: uint64(i)})
	}
	rms := []*metricspb.ResourceMetrics{{ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{
		{Name: "g", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: num}}},
		{Name: "h", Data: &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{DataPoints: hist}}},
		{Name: "s", Data: &metricspb.Metric_Summary{Summary: &metricspb.Summary{DataPoints: sum}}},
		{Name: "g2", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: num[3:]}}},
	}}}}}
	req := &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: rms}
	var e MetricsEncoder
	for i, enc := range [][]byte{AppendMetrics(nil, rms), e.AppendMetrics(nil, rms)} {
		crossCheck(t, i, req, enc, func(b []byte) (proto.Message, error) { return DecodeMetrics(b) })
	}
}

// histogramOf is a request of one histogram with a point for each list of
// explicit bounds.
func histogramOf(bounds [][]float64) []*metricspb.ResourceMetrics {
	var pts []*metricspb.HistogramDataPoint
	for _, b := range bounds {
		pts = append(pts, &metricspb.HistogramDataPoint{Count: 1, BucketCounts: make([]uint64, len(b)+1), ExplicitBounds: b})
	}
	return []*metricspb.ResourceMetrics{{ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{{Name: "h",
		Data: &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{DataPoints: pts}}}}}}}}
}

// A point's explicit bounds are written from the last point's text only
// when they hold the same values: not when the slice was changed in place
// since (here by Flush, which runs between two points), nor for a part of
// it, other values, -0 for 0, or a list too long to keep.
func TestExplicitBoundsNotServedStale(t *testing.T) {
	shared := []float64{0.1, 0.2, 0.4}
	long := make([]float64, maxLastDoubles+3)
	for i := range long {
		long[i] = float64(i) + 0.5
	}
	longText := string(appendDoubles(nil, long))
	negZero := math.Copysign(0, -1)
	rms := histogramOf([][]float64{shared, shared, shared, shared[:2], {0, 1}, {negZero, 1}, {0.1, 0.2, 0.4},
		long, long, {math.NaN(), math.Inf(1)}, {math.NaN(), math.Inf(1)}})
	want := []string{"[0.1,0.2,0.4]", "[0.1,0.2,0.4]", "[0.1,0.3,0.4]", "[0.1,0.3]", "[0,1]", "[-0,1]", "[0.1,0.2,0.4]",
		longText, longText, `["NaN","Infinity"]`, `["NaN","Infinity"]`}
	changed := false
	e := MetricsEncoder{Flush: func(b []byte) []byte {
		if !changed && bytes.Count(b, []byte(`"explicitBounds"`)) == 2 {
			shared[1], changed = 0.3, true // between the second point and the third
		}
		return b
	}}
	out := string(e.AppendMetrics(nil, rms))
	var got []string
	for rest := out; ; {
		_, after, ok := strings.Cut(rest, `"explicitBounds":`)
		if !ok {
			break
		}
		got = append(got, after[:strings.IndexByte(after, ']')+1])
		rest = after
	}
	if !changed || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("changed in place: %v; explicit bounds written\n got %q\nwant %q", changed, got, want)
	}
}

// Equal values are served from the text kept: changing the text shows in
// what is written next (so the test above compares something).
func TestExplicitBoundsServedFromLast(t *testing.T) {
	var d lastDoubles
	first := true
	if got := string(d.field(nil, &first, "b", []float64{1.5, 3})); got != `"b":[1.5,3]` {
		t.Fatalf("first list: %s", got)
	}
	d.text[1] = '9'
	if got := string(d.field(nil, &first, "b", []float64{1.5, 3})); got != `,"b":[9.5,3]` {
		t.Fatalf("the same values again, not from the text kept: %s", got)
	}
	if got := string(d.field(nil, &first, "b", []float64{1.5})); got != `,"b":[1.5]` {
		t.Fatalf("other values: %s", got)
	}
}
