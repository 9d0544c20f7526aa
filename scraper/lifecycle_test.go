package scraper

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
)

// Across-scrape behaviour of one series: start times, resets, staleness.

// scrapes feeds pages to one Converter, one second apart, starting at t0.
type scrapes struct {
	t *testing.T
	c *Converter
	n int
}

func newScrapes(t *testing.T) *scrapes {
	return &scrapes{t: t, c: NewConverter(fixtureTarget("life"))}
}

func (s *scrapes) at(i int) uint64 { return uint64(t0.Add(time.Duration(i) * time.Second).UnixNano()) }

// page converts the next scrape; the time is t0 + n seconds.
func (s *scrapes) page(p string) *metricspb.ResourceMetrics {
	s.t.Helper()
	rm, err := s.c.Convert([]byte(p), ctText, time.Unix(0, int64(s.at(s.n))))
	if err != nil {
		s.t.Fatalf("scrape %d: %v", s.n, err)
	}
	s.n++
	return rm
}

func (s *scrapes) down() *metricspb.ResourceMetrics {
	rm := s.c.Down(time.Unix(0, int64(s.at(s.n))), time.Millisecond)
	s.n++
	return rm
}

// pointBy finds the point of metric name whose attribute k is v (any kind).
func pointBy(rm *metricspb.ResourceMetrics, name, k, v string) (start, ts uint64, flags uint32, ok bool) {
	m := findPoints(rm, name)
	if m == nil {
		return 0, 0, 0, false
	}
	match := func(a map[string]string) bool { return k == "" || a[k] == v }
	for _, p := range numPoints(m) {
		if match(attrs(p.Attributes)) {
			return p.StartTimeUnixNano, p.TimeUnixNano, p.Flags, true
		}
	}
	for _, p := range m.GetHistogram().GetDataPoints() {
		if match(attrs(p.Attributes)) {
			return p.StartTimeUnixNano, p.TimeUnixNano, p.Flags, true
		}
	}
	for _, p := range m.GetSummary().GetDataPoints() {
		if match(attrs(p.Attributes)) {
			return p.StartTimeUnixNano, p.TimeUnixNano, p.Flags, true
		}
	}
	return 0, 0, 0, false
}

func TestLifecycleStartKeptWhileGrowing(t *testing.T) {
	s := newScrapes(t)
	page := func(c, h, q string) string {
		return "# TYPE c counter\nc_total " + c + "\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} " + h + "\nh_count " + h + "\nh_sum 1\n" +
			"# TYPE s summary\ns_count " + q + "\ns_sum 1\n"
	}
	steps := []struct {
		c, h, q   string
		wantStart int // scrape index the start time should be
	}{
		{"5", "5", "5", 0},
		{"7", "7", "7", 0},
		{"7", "7", "7", 0}, // unchanged is not a reset
		{"1", "1", "1", 3}, // went down: reset, new start
		{"2", "2", "2", 3},
	}
	for i, st := range steps {
		rm := s.page(page(st.c, st.h, st.q))
		for _, n := range []string{"c_total", "h", "s"} {
			start, _, _, ok := pointBy(rm, n, "", "")
			if !ok || start != s.at(st.wantStart) {
				t.Errorf("scrape %d %s: start %d, want scrape %d's time %d", i, n, start, st.wantStart, s.at(st.wantStart))
			}
		}
	}
}

func TestLifecycleCreatedStartTime(t *testing.T) {
	s := newScrapes(t)
	for i, created := range []string{"1700000000", "1700000000", "1700000100"} {
		rm := s.page("# TYPE c counter\nc_total 5\nc_created " + created + "\n")
		start, _, _, _ := pointBy(rm, "c_total", "", "")
		if want := map[int]uint64{0: 1700000000e9, 1: 1700000000e9, 2: 1700000100e9}[i]; start != want {
			t.Errorf("scrape %d: start %d, want %d from _created", i, start, want)
		}
	}
}

func TestLifecycleStaleOnce(t *testing.T) {
	s := newScrapes(t)
	both := "# TYPE c counter\nc_total{k=\"a\"} 1\nc_total{k=\"b\"} 2\n"
	onlyA := "# TYPE c counter\nc_total{k=\"a\"} 2\n"
	s.page(both)
	rm := s.page(onlyA)
	start, ts, flags, ok := pointBy(rm, "c_total", "k", "b")
	if !ok || flags != flagNoValue || ts != s.at(1) || start != s.at(0) {
		t.Fatalf("gone series: ok=%v flags=%d time=%d start=%d", ok, flags, ts, start)
	}
	for _, p := range findPoints(rm, "c_total").GetSum().DataPoints {
		if attrs(p.Attributes)["k"] == "b" && p.Value != nil {
			t.Errorf("staleness marker has a value: %v", p)
		}
		if attrs(p.Attributes)["k"] == "a" && p.Flags != 0 {
			t.Errorf("live series flagged: %v", p)
		}
	}
	rm = s.page(onlyA)
	if _, _, _, ok := pointBy(rm, "c_total", "k", "b"); ok {
		t.Error("staleness marker emitted twice")
	}
	// it comes back: a new series with a new start time
	rm = s.page(both)
	if start, _, flags, ok := pointBy(rm, "c_total", "k", "b"); !ok || flags != 0 || start != s.at(3) {
		t.Errorf("back: start %d flags %d, want start %d", start, flags, s.at(3))
	}
	if v := findPoints(rm, "scrape_series_added").GetGauge().DataPoints[0].GetAsDouble(); v != 1 {
		t.Errorf("series added %v, want 1", v)
	}
}

func TestLifecycleStaleShapes(t *testing.T) {
	s := newScrapes(t)
	s.page(`# TYPE h histogram
h_bucket{le="1"} 1
h_bucket{le="2"} 2
h_bucket{le="+Inf"} 3
h_count 3
h_sum 4
# TYPE s summary
s{quantile="0.5"} 1
s{quantile="0.9"} 2
s_count 3
s_sum 4
# TYPE g gauge
g 1
g_ts 1 1700000000000
`)
	rm := s.page("# TYPE other gauge\nother 1\n")
	h := findPoints(rm, "h").GetHistogram().DataPoints[0]
	if h.Flags != flagNoValue || h.Count != 0 || h.Sum != nil || len(h.ExplicitBounds) != 2 || len(h.BucketCounts) != 3 || h.BucketCounts[2] != 0 {
		t.Errorf("stale histogram %v", h)
	}
	q := findPoints(rm, "s").GetSummary().DataPoints[0]
	if q.Flags != flagNoValue || q.Count != 0 || q.Sum != 0 || len(q.QuantileValues) != 2 || q.QuantileValues[1].Quantile != 0.9 || q.QuantileValues[1].Value != 0 {
		t.Errorf("stale summary %v", q)
	}
	if g := findPoints(rm, "g").GetGauge().DataPoints[0]; g.Flags != flagNoValue || g.Value != nil || g.StartTimeUnixNano != 0 {
		t.Errorf("stale gauge %v", g)
	}
	// Prometheus keeps no staleness for samples with an explicit timestamp
	if findPoints(rm, "g_ts") != nil {
		t.Error("explicit-timestamp series got a staleness marker")
	}
}

func TestLifecycleTargetDown(t *testing.T) {
	s := newScrapes(t)
	page := "# TYPE c counter\nc_total{k=\"a\"} 1\n# TYPE g gauge\ng 2\n"
	s.page(page)
	rm := s.down()
	for _, n := range []string{"c_total", "g"} {
		if _, ts, flags, ok := pointBy(rm, n, "", ""); !ok || flags != flagNoValue || ts != s.at(1) {
			t.Errorf("down: %s marker ok=%v flags=%d", n, ok, flags)
		}
	}
	if v := findPoints(rm, "up").GetGauge().DataPoints[0].GetAsDouble(); v != 0 {
		t.Errorf("up %v", v)
	}
	rm = s.down()
	if got := pageNames(rm); len(got) != 0 {
		t.Errorf("second failure repeats markers: %v", got)
	}
	rm = s.page(page)
	if start, _, _, _ := pointBy(rm, "c_total", "k", "a"); start != s.at(3) {
		t.Errorf("after coming back: start %d, want %d", start, s.at(3))
	}
	if v := findPoints(rm, "scrape_series_added").GetGauge().DataPoints[0].GetAsDouble(); v != 2 {
		t.Errorf("series added %v, want 2", v)
	}
}

// A page that breaks half-way leaves no trace: the failed scrape's new
// series get no staleness markers, the last good scrape's do.
func TestLifecycleBrokenPageThenDown(t *testing.T) {
	s := newScrapes(t)
	s.page("# TYPE g gauge\ng{k=\"a\"} 1\n")
	if _, err := s.c.Convert([]byte("# TYPE g gauge\ng{k=\"new\"} 1\ng{k=\"a\"} 1\n}}broken\n"), ctText, t0.Add(time.Second)); err == nil {
		t.Fatal("broken page converted")
	}
	s.n++
	rm := s.down()
	g := findPoints(rm, "g")
	if g == nil || len(g.GetGauge().DataPoints) != 1 || attrs(g.GetGauge().DataPoints[0].Attributes)["k"] != "a" {
		t.Errorf("markers after broken page: %v", g)
	}
}

// The scrape loop end to end: a target that fails gets markers for all
// its series and up=0, once.
func TestLifecycleScrapeLoopDown(t *testing.T) {
	var fail atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", ctText)
		_, _ = w.Write([]byte("# TYPE g gauge\ng 1\n"))
	}))
	defer srv.Close()
	m, col := oneTarget(t, srv, nil)
	m.ScrapeAll(context.Background())
	fail.Store(true)
	m.ScrapeAll(context.Background())
	m.ScrapeAll(context.Background())
	if len(col.b) != 3 {
		t.Fatalf("%d batches", len(col.b))
	}
	if upOf(t, col.b[1]) != 0 || upOf(t, col.b[2]) != 0 {
		t.Error("up != 0 while down")
	}
	g := findPoints(col.b[1].Metrics[0], "g")
	if g == nil || g.GetGauge().DataPoints[0].Flags != flagNoValue {
		t.Errorf("no staleness marker on failure: %v", g)
	}
	if findPoints(col.b[2].Metrics[0], "g") != nil {
		t.Error("marker repeated on second failure")
	}
}
