package spanmetrics

import (
	"bufio"
	"context"
	"os"
	"regexp"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/otelstep/otelstep/otlpwire"
	"github.com/otelstep/otelstep/pipeline"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
)

// goldenFlushes is testdata/spanmetrics.peer.jsonl: the collector's flushes.
func goldenFlushes(t *testing.T) []*pipeline.Batch {
	t.Helper()
	f, err := os.Open("testdata/spanmetrics.peer.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []*pipeline.Batch
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		req, err := otlpwire.DecodeMetrics(sc.Bytes())
		if err != nil {
			t.Fatalf("line %d: %v", len(out)+1, err)
		}
		out = append(out, &pipeline.Batch{Signal: pipeline.Metrics, Metrics: req.ResourceMetrics})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// TestGolden runs the connector as collector-v2.yaml does on spans.json
// sent twice, and compares its last flush with the collector's (what the
// metrics pipeline's own processors made of it, which the test applies).
// The spans come once as records (the protobuf receivers') and once as
// messages (the OTLP/JSON receiver's), a flush apart, and the timer's
// flushes and Shutdown's are all checked: calls equals the histogram's
// count in each, the first included (the collector's first says 0).
func TestGolden(t *testing.T) {
	golden := goldenFlushes(t)
	if len(golden) != 3 {
		t.Fatalf("%d golden flushes", len(golden))
	}
	gc := newConnector(t, v2Config(), &recorder{}) // for the metric names
	want := points(t, golden[len(golden)-1], gc)
	if len(want) != 111 {
		t.Fatalf("the golden's last flush has %d series, want 111 (222 points)", len(want))
	}
	// The quirk the connector does not copy.
	for _, p := range points0(golden[0]) {
		if p.calls.GetAsInt() != 0 || p.dur.Count == 0 {
			t.Fatalf("the golden's first flush: calls %d, count %d", p.calls.GetAsInt(), p.dur.Count)
		}
	}
	goldenID := golden[0].Metrics[0].ScopeMetrics[0].Metrics[0].GetSum().DataPoints[0].Attributes[4]

	synctest.Test(t, func(t *testing.T) {
		req := goldenRequest(t)
		rec := &recorder{}
		c := newConnector(t, v2Config(), rec)
		ctx := context.Background()
		defer c.Shutdown(ctx) // after a failure: no goroutine left in the bubble
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		if err := c.Enqueue(ctx, recordBatch(t, req)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(15 * time.Second)
		synctest.Wait()
		t1 := time.Now()
		if err := c.Enqueue(ctx, messageBatch(req)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(15 * time.Second)
		synctest.Wait()
		t2 := time.Now()
		if err := c.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		flushes := rec.got()
		if len(flushes) != 3 {
			t.Fatalf("%d flushes, want 2 by the timer and 1 at Shutdown", len(flushes))
		}
		for i, at := range []time.Time{t1, t2, t2} {
			for k, p := range points(t, flushes[i], c) {
				if p.calls.StartTimeUnixNano != uint64(t0.UnixNano()) || p.dur.StartTimeUnixNano != uint64(t0.UnixNano()) ||
					p.calls.TimeUnixNano != uint64(at.UnixNano()) || p.dur.TimeUnixNano != uint64(at.UnixNano()) {
					t.Fatalf("flush %d: %s: start %d, time %d; want %d, %d", i, k, p.calls.StartTimeUnixNano,
						p.calls.TimeUnixNano, t0.UnixNano(), at.UnixNano())
				}
			}
		}
		// The metrics pipeline's processors, after the connector.
		for _, b := range flushes {
			for _, rm := range b.Metrics {
				v2Processors(rm.Resource)
			}
		}

		// The first flush counted one send: half the golden's counts.
		first := points(t, flushes[0], c)
		if len(first) != len(want) {
			t.Errorf("first flush: %d series, want %d", len(first), len(want))
		}
		for k, w := range want {
			g, ok := first[k]
			if !ok {
				continue
			}
			if 2*g.dur.Count != w.dur.Count || 2*g.dur.GetSum() != w.dur.GetSum() || 2*g.calls.GetAsInt() != w.calls.GetAsInt() {
				t.Errorf("first flush: %s: count %d sum %g, want half of %d, %g", k, g.dur.Count, g.dur.GetSum(), w.dur.Count, w.dur.GetSum())
			}
		}

		got := points(t, flushes[2], c)
		compareGolden(t, golden[2], flushes[2], want, got)
		if id := c.instanceKV.Value.GetStringValue(); !uuidRE.MatchString(id) || id == goldenID.Value.GetStringValue() {
			t.Errorf("collector.instance.id %q: want a new random UUID", id)
		}
		if goldenID.Key != instanceIDKey {
			t.Fatalf("the golden's fifth point attribute is %s", goldenID.Key)
		}
		// Every flush is the same cumulative series, counted again.
		if a, b := points(t, flushes[1], c), got; len(a) != len(b) {
			t.Errorf("flushes 2 and 3: %d and %d series", len(a), len(b))
		}
	})
}

// points0 is points without a connector's checks (for the golden's first
// flush, whose calls and counts differ).
func points0(b *pipeline.Batch) []point {
	var out []point
	for _, rm := range b.Metrics {
		ms := rm.ScopeMetrics[0].Metrics
		for _, cp := range ms[0].GetSum().DataPoints {
			for _, dp := range ms[1].GetHistogram().DataPoints {
				if kvsString(dp.Attributes) == kvsString(cp.Attributes) {
					out = append(out, point{res: rm.Resource.Attributes, calls: cp, dur: dp})
				}
			}
		}
	}
	return out
}

// compareGolden compares a flush of the connector with the collector's,
// series by series, and the metrics' shape.
func compareGolden(t *testing.T, wantB, gotB *pipeline.Batch, want, got map[string]point) {
	t.Helper()
	if len(gotB.Metrics) != len(wantB.Metrics) {
		t.Errorf("%d resources, want %d", len(gotB.Metrics), len(wantB.Metrics))
	}
	if len(got) != len(want) {
		t.Errorf("%d series (%d points), want %d (%d)", len(got), 2*len(got), len(want), 2*len(want))
	}
	wm, gm := wantB.Metrics[0].ScopeMetrics[0].Metrics, gotB.Metrics[0].ScopeMetrics[0].Metrics
	for i := range wm {
		w, g := wm[i], gm[i]
		if g.Name != w.Name || g.Unit != w.Unit || g.Description != w.Description {
			t.Errorf("metric %d: %q unit %q description %q, want %q %q %q", i, g.Name, g.Unit, g.Description, w.Name, w.Unit, w.Description)
		}
	}
	ws, gs := wm[0].GetSum(), gm[0].GetSum()
	if gs.AggregationTemporality != ws.AggregationTemporality || gs.IsMonotonic != ws.IsMonotonic || !gs.IsMonotonic {
		t.Errorf("calls: temporality %v monotonic %v, want %v %v", gs.AggregationTemporality, gs.IsMonotonic, ws.AggregationTemporality, ws.IsMonotonic)
	}
	if g, w := gm[1].GetHistogram().AggregationTemporality, wm[1].GetHistogram().AggregationTemporality; g != w ||
		w != metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE {
		t.Errorf("duration: temporality %v, want %v", g, w)
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("missing series %s", k)
			continue
		}
		if kvsString(g.res) != kvsString(w.res) {
			t.Errorf("%s: resource\n%s\nwant\n%s", k, kvsString(g.res), kvsString(w.res))
		}
		if ga, wa := g.calls.Attributes, w.calls.Attributes; len(ga) != len(wa) || ga[4].Key != instanceIDKey ||
			!uuidRE.MatchString(ga[4].Value.GetStringValue()) {
			t.Errorf("%s: point attributes %s", k, kvsString(ga))
		}
		gd, wd := g.dur, w.dur
		if g.calls.GetAsInt() != w.calls.GetAsInt() || gd.Count != wd.Count || gd.GetSum() != wd.GetSum() ||
			!slices.Equal(gd.BucketCounts, wd.BucketCounts) || !slices.Equal(gd.ExplicitBounds, wd.ExplicitBounds) {
			t.Errorf("%s:\ncalls %d count %d sum %v buckets %v bounds %v\nwant\ncalls %d count %d sum %v buckets %v bounds %v", k,
				g.calls.GetAsInt(), gd.Count, gd.GetSum(), gd.BucketCounts, gd.ExplicitBounds,
				w.calls.GetAsInt(), wd.Count, wd.GetSum(), wd.BucketCounts, wd.ExplicitBounds)
		}
		if gd.Min != nil || gd.Max != nil || wd.Min != nil || wd.Max != nil || len(gd.Exemplars) > 0 || gd.Flags != wd.Flags {
			t.Errorf("%s: min %v max %v exemplars %d flags %d", k, gd.Min, gd.Max, len(gd.Exemplars), gd.Flags)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("extra series %s", k)
		}
	}
}
