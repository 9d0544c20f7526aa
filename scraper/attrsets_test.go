package scraper

import (
	"runtime"
	"sync"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/otelstep/otelstep/otlpjson"
	"github.com/otelstep/otelstep/pipeline"
)

// pointAttrs lists every point's attribute slice of rms, by metric.
func pointAttrs(rms []*metricspb.ResourceMetrics) map[string][][]*commonpb.KeyValue {
	out := map[string][][]*commonpb.KeyValue{}
	for _, rm := range rms {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				for _, p := range m.GetGauge().GetDataPoints() {
					out[m.Name] = append(out[m.Name], p.Attributes)
				}
				for _, p := range m.GetSum().GetDataPoints() {
					out[m.Name] = append(out[m.Name], p.Attributes)
				}
				for _, p := range m.GetHistogram().GetDataPoints() {
					out[m.Name] = append(out[m.Name], p.Attributes)
				}
				for _, p := range m.GetSummary().GetDataPoints() {
					out[m.Name] = append(out[m.Name], p.Attributes)
				}
			}
		}
	}
	return out
}

func same(a, b []*commonpb.KeyValue) bool { return len(a) > 0 && len(a) == len(b) && &a[0] == &b[0] }

// Converters sharing an attrSets keep equal attribute sets once, across
// targets and across families, and convert exactly as converters of their
// own would.
func TestAttrSetsShared(t *testing.T) {
	ts := time.Unix(1_800_000_000, 0)
	for _, fx := range fixtures {
		page := read(t, fx.file)
		sets := newAttrSets()
		a, b := newConverter(fixtureTarget(fx.name), sets, newSlabPools(), newMetaLines()), newConverter(fixtureTarget(fx.name), sets, newSlabPools(), newMetaLines())
		alone := NewConverter(fixtureTarget(fx.name))
		var ra, rb, ralone []*metricspb.ResourceMetrics
		for i := 0; i < 2; i++ {
			at := ts.Add(time.Duration(i) * time.Second)
			var err error
			if ra, err = a.ConvertAll(page, fx.ct, at, time.Millisecond); err != nil {
				t.Fatal(err)
			}
			if rb, err = b.ConvertAll(page, fx.ct, at, time.Millisecond); err != nil {
				t.Fatal(err)
			}
			if ralone, err = alone.ConvertAll(page, fx.ct, at, time.Millisecond); err != nil {
				t.Fatal(err)
			}
		}
		for i := range ra {
			if !proto.Equal(ra[i], ralone[i]) || !proto.Equal(rb[i], ralone[i]) {
				t.Fatalf("%s: a converter sharing attribute sets converts differently", fx.name)
			}
		}
		pa, pb := pointAttrs(ra), pointAttrs(rb)
		points := 0
		synth := map[string]bool{}
		for _, d := range synthDefs {
			synth[d.name] = true // the target's labels, not a page's
		}
		for name, as := range pa {
			if synth[name] {
				continue
			}
			for i, s := range as {
				if len(s) == 0 {
					continue
				}
				points++
				if !same(s, pb[name][i]) {
					t.Fatalf("%s: %s point %d: the two targets' equal attributes are two slices", fx.name, name, i)
				}
			}
		}
		// Fewer sets than points with attributes: families share them.
		if n := sets.size(); points > 0 && n >= points {
			t.Errorf("%s: %d attribute sets for %d points with attributes", fx.name, n, points)
		}
		t.Logf("%s: %d points with attributes, %d sets", fx.name, points, sets.size())
		runtime.KeepAlive(a) // its series hold the sets
		runtime.KeepAlive(b)
	}
}

// A histogram's and a gauge's equal attributes are two sets (their
// protobuf encodings are under different field numbers); a gauge's and a
// counter's one.
func TestAttrSetsByPointKind(t *testing.T) {
	page := []byte("# TYPE g gauge\ng{a=\"1\"} 1\n# TYPE c counter\nc_total{a=\"1\"} 1\n" +
		"# TYPE h histogram\nh_bucket{a=\"1\",le=\"+Inf\"} 1\nh_sum{a=\"1\"} 1\nh_count{a=\"1\"} 1\n")
	c := NewConverter(fixtureTarget("kind"))
	rms, err := c.ConvertAll(page, ctText, time.Unix(1_800_000_000, 0), time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	p := pointAttrs(rms)
	g, ctr, h := p["g"][0], p["c_total"][0], p["h"][0]
	if !same(g, ctr) {
		t.Error("a gauge's and a counter's equal attributes are two slices")
	}
	if same(g, h) {
		t.Error("a gauge and a histogram share one attribute slice")
	}
	if c.sets.size() != 2 {
		t.Errorf("%d sets, want 2", c.sets.size())
	}
	// Metadata is one shared slice per type, its encodings stored with it.
	for _, m := range rms[0].ScopeMetrics[0].Metrics {
		if !pipeline.IsShared(m.Metadata) {
			t.Errorf("%s: metadata not shared", m.Name)
		}
		if want := c.sets.meta[m.Metadata[0].Value.GetStringValue()]; !same(m.Metadata, want) {
			t.Errorf("%s: metadata is not its type's slice", m.Name)
		}
	}
}

// Sets go with the last series that uses them: nothing is released by
// hand, and the table does not grow with series that come and go.
func TestAttrSetsForgotten(t *testing.T) {
	sets := newAttrSets()
	func() {
		c := newConverter(fixtureTarget("gone"), sets, newSlabPools(), newMetaLines())
		if _, err := c.ConvertAll(read(t, "node.txt"), ctText, time.Unix(1_800_000_000, 0), time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if sets.size() == 0 {
			t.Fatal("no sets after a node page")
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for sets.size() > 0 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := sets.size(); n != 0 {
		t.Fatalf("%d sets left after their converter is gone", n)
	}
}

// Targets scraped at once share sets, and each one's encoders store the
// sets' encodings while the others read them (run with -race).
func TestAttrSetsConcurrentTargets(t *testing.T) {
	page := read(t, "vllm.txt")
	sets := newAttrSets()
	want := ""
	var wg sync.WaitGroup
	out := make([]string, 4)
	for g := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newConverter(fixtureTarget("vllm"), sets, newSlabPools(), newMetaLines())
			var enc otlpjson.MetricsEncoder
			var b []byte
			for i := 0; i < 20; i++ {
				rms, err := c.ConvertAll(page, ctText, time.Unix(1_800_000_000, 0), time.Millisecond)
				if err != nil {
					t.Error(err)
					return
				}
				b = enc.AppendMetrics(b[:0], rms)
			}
			out[g] = string(b)
		}()
	}
	wg.Wait()
	alone := NewConverter(fixtureTarget("vllm"))
	for i := 0; i < 20; i++ {
		rms, err := alone.ConvertAll(page, ctText, time.Unix(1_800_000_000, 0), time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		want = string(otlpjson.AppendMetrics(nil, rms))
	}
	for g, o := range out {
		if o != want {
			t.Fatalf("target %d's JSON differs from a converter's of its own", g)
		}
	}
}
