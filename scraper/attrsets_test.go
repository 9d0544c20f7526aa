package scraper

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/otelstep/otelstep/otlpwire"
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
		sets := newAttrSets(nil)
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
		distinct := map[string]bool{}
		for name, as := range pa {
			for i, s := range as {
				if len(s) == 0 || &s[0] == &a.base[0] {
					continue // a synthetic point: the target's labels, not a page's
				}
				distinct[sortedKVs(s)] = true
				points++
				if !same(s, pb[name][i]) {
					t.Fatalf("%s: %s point %d: the two targets' equal attributes are two slices", fx.name, name, i)
				}
			}
		}
		// Fewer sets than points with attributes where points have equal
		// attributes: families share them.
		if n := sets.size(); n > points || len(distinct) < points && n >= points {
			t.Errorf("%s: %d attribute sets for %d points with attributes", fx.name, n, points)
		}
		t.Logf("%s: %d points with attributes, %d sets", fx.name, points, sets.size())
		// The two targets' families share their metadata.
		if len(a.fams) == 0 || len(a.fams) != len(b.fams) {
			t.Fatalf("%s: %d and %d families", fx.name, len(a.fams), len(b.fams))
		}
		for k, f := range a.fams {
			if g := b.fams[k]; g == nil || g.famMeta != f.famMeta {
				t.Fatalf("%s: family %q: the two targets' metadata are two copies", fx.name, k)
			}
		}
		runtime.GC() // metadata no family uses any more is gone
		if n := sets.famLive(); n != len(a.fams) {
			t.Errorf("%s: %d family metadata for %d families", fx.name, n, len(a.fams))
		}
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
	shared := pipeline.NewSharedAttrs()
	c := NewSharingConverter(fixtureTarget("kind"), shared)
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
	if sg, sh := shared.Find(g), shared.Find(h); sg == nil || sh == nil || sg == sh {
		t.Error("the gauge's and the histogram's attributes are not two sets in the SharedAttrs")
	}
	// Metadata is one set per type, found in the SharedAttrs for its
	// encodings to be stored with it.
	for _, m := range rms[0].ScopeMetrics[0].Metrics {
		want := c.sets.meta[m.Metadata[0].Value.GetStringValue()]
		if want == nil || shared.Find(m.Metadata) != want.Encodings() {
			t.Errorf("%s: metadata is not its type's set", m.Name)
		}
	}
}

// Sets go with the last series that uses them: nothing is released by
// hand, and neither the table nor the SharedAttrs grows with series that
// come and go.
func TestAttrSetsForgotten(t *testing.T) {
	shared := pipeline.NewSharedAttrs()
	sets := newAttrSets(shared)
	var points [][]*commonpb.KeyValue // slices of sets, as points in flight hold them
	func() {
		c := newConverter(fixtureTarget("gone"), sets, newSlabPools(), newMetaLines())
		rms, err := c.ConvertAll(read(t, "node.txt"), ctText, time.Unix(1_800_000_000, 0), time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if sets.size() == 0 || shared.Len() <= len(sets.meta) {
			t.Fatalf("%d sets, %d shared, after a node page", sets.size(), shared.Len())
		}
		for _, as := range pointAttrs(rms) {
			for _, a := range as {
				if shared.Find(a) != nil {
					points = append(points, a)
				}
			}
		}
	}()
	if len(points) == 0 {
		t.Fatal("no point's attributes found in the SharedAttrs")
	}
	deadline := time.Now().Add(patience)
	for (sets.size() > 0 || sets.famSize() > 0 || shared.Len() > len(sets.meta)) && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := sets.size(); n != 0 {
		t.Fatalf("%d sets left after their converter is gone", n)
	}
	if n := sets.famSize(); n != 0 {
		t.Fatalf("%d family metadata left after their converter is gone", n)
	}
	// The metadata's sets are the table's for its life; the series' are
	// gone, and a point still holding one's slice is no set's.
	if n := shared.Len(); n != len(sets.meta) {
		t.Fatalf("%d sets in the SharedAttrs, want the %d metadata sets", n, len(sets.meta))
	}
	for _, a := range points {
		if shared.Find(a) != nil {
			t.Fatal("a collected set found from a point's slice")
		}
	}
}

// Families share metadata only when all of it is equal: the same name with
// another help, unit, type or honor_labels resource is a metadata of its
// own, and each target's output keeps its own.
func TestFamilyMetadataSharedOnlyWhenEqual(t *testing.T) {
	sets := newAttrSets(nil)
	pages := []struct{ page, ct string }{
		{"# HELP x One.\n# TYPE x gauge\nx 1\n", ctText},
		{"# HELP x One.\n# TYPE x gauge\nx 2\n", ctText},   // equal: shared
		{"# HELP x Two.\n# TYPE x gauge\nx 1\n", ctText},   // other help
		{"# HELP x One.\n# TYPE x counter\nx 1\n", ctText}, // other type
		{"# HELP x_seconds One.\n# TYPE x_seconds gauge\n# UNIT x_seconds seconds\nx_seconds 1\n# EOF\n", ctOM},
	}
	var metas []*famMeta
	var descs []string
	for i, p := range pages {
		c := newConverter(fixtureTarget(fmt.Sprint("t", i)), sets, newSlabPools(), newMetaLines())
		rms, err := c.ConvertAll([]byte(p.page), p.ct, time.Unix(1_800_000_000, 0), time.Millisecond)
		if err != nil {
			t.Fatalf("page %d: %v", i, err)
		}
		var f *famState
		for _, g := range c.fams {
			if strings.HasPrefix(g.name, "x") {
				f = g
			}
		}
		if f == nil {
			t.Fatalf("page %d: no family x", i)
		}
		metas = append(metas, f.famMeta)
		for _, m := range rms[0].ScopeMetrics[0].Metrics {
			if strings.HasPrefix(m.Name, "x") {
				descs = append(descs, m.Name+"|"+m.Description+"|"+m.Unit+"|"+m.Metadata[0].Value.GetStringValue())
			}
		}
	}
	if metas[0] != metas[1] {
		t.Error("two targets' equal families have two metadata")
	}
	for i := 2; i < len(metas); i++ {
		for j := range i {
			if metas[i] == metas[j] {
				t.Errorf("pages %d and %d: different families share metadata", j, i)
			}
		}
	}
	want := []string{"x|One.||gauge", "x|One.||gauge", "x|Two.||gauge", "x|One.||counter", "x_seconds|One.|s|gauge"}
	if fmt.Sprint(descs) != fmt.Sprint(want) {
		t.Errorf("metrics %q, want %q", descs, want)
	}
}

// Targets scraped at once share sets, and each one's encoders store the
// sets' encodings while the others read them (run with -race).
func TestAttrSetsConcurrentTargets(t *testing.T) {
	page := read(t, "vllm.txt")
	shared := pipeline.NewSharedAttrs()
	sets := newAttrSets(shared)
	want := ""
	var wg sync.WaitGroup
	out := make([]string, 4)
	for g := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newConverter(fixtureTarget("vllm"), sets, newSlabPools(), newMetaLines())
			enc := otlpwire.MetricsEncoder{Shared: shared}
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
		want = string(otlpwire.AppendMetrics(nil, rms))
	}
	for g, o := range out {
		if o != want {
			t.Fatalf("target %d's JSON differs from a converter's of its own", g)
		}
	}
}

// A Manager's scrapes reach the sinks with their point attributes and
// metadata as sets the encoders find: from the second scrape on, every
// point of a page is written from the encodings stored with its set (the
// synthetic points, with the target's labels, are the only others), and
// the bytes are those of encoders without the sets.
func TestScrapedPointsServedFromStoredEncodings(t *testing.T) {
	shared := pipeline.NewSharedAttrs()
	var targets []Target
	for _, fx := range fixtures[:3] { // vllm, node, dcgm: the job's mix
		srv := httptest.NewServer(serve(read(t, fx.file), fx.ct))
		defer srv.Close()
		tg := loopbackTarget()
		tg.JobName = fx.name
		tg.Address = strings.TrimPrefix(srv.URL, "http://")
		targets = append(targets, tg)
	}
	enc := &encodingSink{shared: shared, json: otlpwire.MetricsEncoder{Shared: shared}, pb: otlpwire.ProtoEncoder{Shared: shared}}
	m, err := New(Options{Targets: targets, Next: enc, Logger: quiet(), SharedAttrs: shared})
	if err != nil {
		t.Fatal(err)
	}
	for scrape := range 3 {
		enc.reset()
		m.ScrapeAll(context.Background())
		if enc.err != nil {
			t.Fatalf("scrape %d: %v", scrape, enc.err)
		}
		t.Logf("scrape %d: %d batches, %d points with attributes: %d served from stored encodings, %d synthetic; %d of %d metrics' metadata served",
			scrape, enc.batches, enc.points, enc.hits, enc.synthetic, enc.metaHits, enc.metas)
		if enc.batches != len(targets) || enc.points < 500 || enc.metas < 100 {
			t.Fatalf("scrape %d: %d batches, %d points", scrape, enc.batches, enc.points)
		}
		if scrape == 0 {
			continue // the first scrape stores them
		}
		if enc.synthetic != len(synthDefs)*len(targets) {
			t.Errorf("scrape %d: %d points not served that are not the %d synthetic ones", scrape, enc.synthetic, len(synthDefs)*len(targets))
		}
		if enc.hits != enc.points-enc.synthetic {
			t.Errorf("scrape %d: %d of %d points served from stored encodings", scrape, enc.hits, enc.points-enc.synthetic)
		}
		if enc.metaHits != enc.metas {
			t.Errorf("scrape %d: %d of %d metrics' metadata served from stored encodings", scrape, enc.metaHits, enc.metas)
		}
	}
	runtime.KeepAlive(m)
}

// encodingSink encodes every batch it takes as the sinks do, with and
// without the sets, and counts the points whose attributes (and metrics
// whose metadata) had both encodings stored with their set before.
type encodingSink struct {
	shared *pipeline.SharedAttrs
	mu     sync.Mutex
	json   otlpwire.MetricsEncoder
	pb     otlpwire.ProtoEncoder

	batches, points, hits, synthetic int
	metas, metaHits                  int // metrics with metadata, and those served
	err                              error
}

func (s *encodingSink) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches, s.points, s.hits, s.synthetic, s.metas, s.metaHits, s.err = 0, 0, 0, 0, 0, 0, nil
}

func (s *encodingSink) Consume(_ context.Context, b *pipeline.Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer b.Release()
	s.batches++
	stored := func(kvs []*commonpb.KeyValue, field int32) bool {
		a := s.shared.Find(kvs)
		return a != nil && a.JSON() != nil && a.Proto(field) != nil
	}
	for _, rm := range b.Metrics {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if len(m.Metadata) > 0 {
					s.metas++
					if stored(m.Metadata, 12) {
						s.metaHits++
					} else if s.shared.Find(m.Metadata) == nil {
						s.err = fmt.Errorf("metric %s: metadata is no set's", m.Name)
					}
				}
				count := func(kvs []*commonpb.KeyValue, field int32) {
					if len(kvs) == 0 {
						return
					}
					s.points++
					switch {
					case stored(kvs, field):
						s.hits++
					case s.shared.Find(kvs) == nil:
						s.synthetic++
					}
				}
				for _, p := range m.GetGauge().GetDataPoints() {
					count(p.Attributes, 7)
				}
				for _, p := range m.GetSum().GetDataPoints() {
					count(p.Attributes, 7)
				}
				for _, p := range m.GetHistogram().GetDataPoints() {
					count(p.Attributes, 9)
				}
				for _, p := range m.GetSummary().GetDataPoints() {
					count(p.Attributes, 7)
				}
			}
		}
	}
	var plain otlpwire.ProtoEncoder
	if !bytes.Equal(s.json.AppendMetrics(nil, b.Metrics), otlpwire.AppendMetrics(nil, b.Metrics)) {
		s.err = errors.New("OTLP/JSON with the sets differs from without")
	}
	if !bytes.Equal(s.pb.AppendMetricsRequest(nil, b.Metrics), plain.AppendMetricsRequest(nil, b.Metrics)) {
		s.err = errors.New("protobuf with the sets differs from without")
	}
	return nil
}
