package scraper

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// A page whose new series take past the scrape's timeout: each scrape is
// cut short, here at the first look at its deadline (one long past), so
// that it resolves deadlineEvery-1 new series and no more, deterministically,
// as a scrape on a machine too busy to convert the page in time would.

// genText is a text page of n counters and n histograms (labels i =
// from..from+n-1), values fixed by i.
func genText(from, n int) []byte {
	var b bytes.Buffer
	b.WriteString("# HELP gen_requests_total Requests.\n# TYPE gen_requests_total counter\n")
	for i := from; i < from+n; i++ {
		fmt.Fprintf(&b, "gen_requests_total{i=\"%d\"} %d\n", i, 10+i)
	}
	b.WriteString("# TYPE gen_latency_seconds histogram\n")
	for i := from; i < from+n; i++ {
		fmt.Fprintf(&b, "gen_latency_seconds_bucket{i=\"%d\",le=\"0.1\"} %d\n", i, i)
		fmt.Fprintf(&b, "gen_latency_seconds_bucket{i=\"%d\",le=\"+Inf\"} %d\n", i, 2*i)
		fmt.Fprintf(&b, "gen_latency_seconds_sum{i=\"%d\"} %d.5\n", i, i)
		fmt.Fprintf(&b, "gen_latency_seconds_count{i=\"%d\"} %d\n", i, 2*i)
	}
	return b.Bytes()
}

// genOM is genText in OpenMetrics, with _created samples, ended by # EOF
// unless open.
func genOM(from, n int, open bool) []byte {
	var b bytes.Buffer
	b.WriteString("# TYPE gen_requests counter\n")
	for i := from; i < from+n; i++ {
		fmt.Fprintf(&b, "gen_requests_total{i=\"%d\"} %d\ngen_requests_created{i=\"%d\"} 1700000000\n", i, 10+i, i)
	}
	b.WriteString("# TYPE gen_latency_seconds histogram\n")
	for i := from; i < from+n; i++ {
		fmt.Fprintf(&b, "gen_latency_seconds_bucket{i=\"%d\",le=\"0.1\"} %d\n", i, i)
		fmt.Fprintf(&b, "gen_latency_seconds_bucket{i=\"%d\",le=\"+Inf\"} %d\n", i, 2*i)
		fmt.Fprintf(&b, "gen_latency_seconds_sum{i=\"%d\"} %d.5\n", i, i)
		fmt.Fprintf(&b, "gen_latency_seconds_count{i=\"%d\"} %d\n", i, 2*i)
	}
	if !open {
		b.WriteString("# EOF\n")
	}
	return b.Bytes()
}

// firstLines is page's first n lines.
func firstLines(page []byte, n int) []byte {
	lines := bytes.SplitAfter(page, []byte("\n"))
	return bytes.Join(lines[:min(n, len(lines))], nil)
}

// pointCounts counts rms's points other than the synthetic series': those
// with a value, and staleness markers.
func pointCounts(rms []*metricspb.ResourceMetrics) (values, markers int) {
	count := func(flags uint32) {
		if flags&flagNoValue != 0 {
			markers++
		} else {
			values++
		}
	}
	for _, rm := range rms {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if _, ok := synthIndex[m.Name]; ok {
					continue
				}
				for _, p := range numPoints(m) {
					count(p.Flags)
				}
				for _, p := range m.GetHistogram().GetDataPoints() {
					count(p.Flags)
				}
				for _, p := range m.GetSummary().GetDataPoints() {
					count(p.Flags)
				}
			}
		}
	}
	return values, markers
}

// sameResources fails unless a and b hold the same resources, metrics and
// points, in any order; what names the comparison in the failure.
func sameResources(t *testing.T, what string, a, b []*metricspb.ResourceMetrics) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d resources, want %d", what, len(a), len(b))
	}
	for i := range a {
		x, y := canonical(a[i]), canonical(b[i])
		if proto.Equal(x, y) {
			continue
		}
		// Name the first metric that differs, not the whole page.
		byName := func(rm *metricspb.ResourceMetrics) map[string]*metricspb.Metric {
			ms := map[string]*metricspb.Metric{}
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					ms[m.Name] = m
				}
			}
			return ms
		}
		xm, ym := byName(x), byName(y)
		var names []string
		for n := range xm {
			names = append(names, n)
		}
		for n := range ym {
			if xm[n] == nil {
				names = append(names, n)
			}
		}
		slices.Sort(names)
		for _, n := range names {
			if !proto.Equal(xm[n], ym[n]) {
				t.Fatalf("%s: resource %d, metric %s differs:\n%v\nwant:\n%v", what, i, n, xm[n], ym[n])
			}
		}
		t.Fatalf("%s: resource %d differs outside its metrics:\n%v\nwant:\n%v", what, i, x.Resource, y.Resource)
	}
}

// A page of more new series than a scrape has time for comes up after
// ceil(N/K) scrapes, K the new series each had time for: every cut one
// fails as any failed scrape (up = 0, none of the page's samples, the last
// complete page's series marked stale, exactly a converter's that forgets
// everything on failure), keeping what it resolved, and the first
// complete scrape, and the one after it, are a fresh converter's for the
// same pages: no start time, marker, vanished series or count kept from
// before the failures.
func TestCutScrapesComeUp(t *testing.T) {
	vanished := "# TYPE vanished_total counter\nvanished_total{k=\"v\"} 3\n"
	for _, tc := range []struct {
		name, ct     string
		before, page []byte
	}{
		{"node", ctText, append(firstLines(read(t, "node.txt"), 500), vanished...), read(t, "node.txt")},
		{"vllm", ctText, append(firstLines(read(t, "vllm.txt"), 400), vanished...), read(t, "vllm.txt")},
		{"gen", ctText, append(genText(0, 50), vanished...), genText(0, 300)},
		{"openmetrics", ctOM, append(genOM(0, 40, true), "# TYPE vanished counter\nvanished_total 3\n# EOF\n"...), genOM(0, 200, false)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := fixtureTarget("cut")
			at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }
			// ref converts the same pages in full: the new series the
			// page brings, its scrape_series_added.
			ref := NewConverter(tg)
			if _, err := ref.ConvertAll(tc.before, tc.ct, at(0), 0); err != nil {
				t.Fatal(err)
			}
			out, err := ref.ConvertAll(tc.page, tc.ct, at(1), 0)
			if err != nil {
				t.Fatal(err)
			}
			newSeries := int(countsOf(out[0]).added)
			const k = deadlineEvery - 1
			wantScrapes := (newSeries + k - 1) / k
			if wantScrapes < 2 {
				t.Fatalf("the page brings %d new series: too few to be cut", newSeries)
			}

			c := NewConverter(tg)
			forgets := NewConverter(tg) // a failed scrape forgets everything: the output wanted of each failed one
			for _, cv := range []*Converter{c, forgets} {
				if _, err := cv.ConvertAll(tc.before, tc.ct, at(0), 0); err != nil {
					t.Fatal(err)
				}
			}
			var rms []*metricspb.ResourceMetrics
			scrapes := 0
			for {
				scrapes++
				if scrapes > wantScrapes {
					t.Fatalf("still cut at scrape %d, want up at scrape %d (%d new series, %d a scrape)", scrapes, wantScrapes, newSeries, k)
				}
				got, _, err := c.convertBy(context.Background(), tc.page, tc.ct, at(scrapes), 0, time.Unix(0, 1))
				if err == nil {
					rms = got
					break
				}
				var pe *pageError
				if !errors.As(err, &pe) || !pe.cut || !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("scrape %d: %v, want the page cut short at its deadline", scrapes, err)
				}
				down, _ := c.downLeased(at(scrapes), 0, pe.n, true)
				want, _ := forgets.downLeased(at(scrapes), 0, pe.n, false)
				sameResources(t, fmt.Sprintf("cut scrape %d", scrapes), down, want)
				values, markers := pointCounts(down)
				if up := synthOf(down[0])["up"]; up != 0 || values != 0 || (scrapes == 1) != (markers > 0) {
					t.Fatalf("cut scrape %d: up %v, %d points of the page, %d staleness markers", scrapes, up, values, markers)
				}
			}
			t.Logf("%d new series, %d a scrape: up at scrape %d", newSeries, k, scrapes)
			if scrapes != wantScrapes {
				t.Errorf("up at scrape %d, want %d (%d new series, %d a scrape)", scrapes, wantScrapes, newSeries, k)
			}
			if c.lc.taken == 0 {
				t.Error("the complete scrape took no line from the line cache: the cut ones' lines were not kept")
			}

			fresh := NewConverter(tg)
			want, err := fresh.ConvertAll(tc.page, tc.ct, at(scrapes), 0)
			if err != nil {
				t.Fatal(err)
			}
			sameResources(t, "the first complete scrape", rms, want)
			if got := int(countsOf(rms[0]).added); got != int(countsOf(want[0]).added) {
				t.Errorf("scrape_series_added %d, want %d", got, int(countsOf(want[0]).added))
			}
			if c.held != fresh.held || c.index.len() != fresh.index.len() {
				t.Errorf("%d series (%d bytes) kept, a fresh converter %d (%d bytes)", c.index.len(), c.held, fresh.index.len(), fresh.held)
			}
			got, err := c.ConvertAll(tc.page, tc.ct, at(scrapes+1), 0)
			if err != nil {
				t.Fatal(err)
			}
			want, err = fresh.ConvertAll(tc.page, tc.ct, at(scrapes+1), 0)
			if err != nil {
				t.Fatal(err)
			}
			sameResources(t, "the scrape after", got, want)
		})
	}
}

// Through a target's scrape loop: its first scrape, every series of which
// is new, is judged on its fetch alone, however long its conversion takes
// (here past its deadline at the first look); a later page of new series
// cut short at every scrape fails each (up = 0, recorded in the status,
// nothing of the page delivered, the first page's series marked stale
// once) and comes up after ceil(N/K) scrapes with a fresh converter's
// output.
func TestTimedOutScrapesComeUp(t *testing.T) {
	sp := &switchPage{}
	m, col, log := budgetManager(t, sp, 0)
	m.deadline = func(start time.Time, _ time.Duration) time.Time { return start.Add(-time.Hour) }
	ctx := testCtx(t)

	first := seriesPage(0, 3*deadlineEvery)
	sp.set(first, ctText)
	m.ScrapeAll(ctx)
	rm := col.last().Metrics[0]
	if c := countsOf(rm); c.up != 1 || c.added != 3*deadlineEvery {
		t.Fatalf("first scrape: %+v, want up and every series added: a first scrape is judged on its fetch", c)
	}

	const n = 1000
	page := seriesPage(10_000, n)
	sp.set(page, ctText)
	const k = deadlineEvery - 1
	wantScrapes := (n + k - 1) / k
	var b []*metricspb.ResourceMetrics
	for i := 1; ; i++ {
		if i > wantScrapes {
			t.Fatalf("still down at scrape %d, want up at scrape %d", i, wantScrapes)
		}
		m.ScrapeAll(ctx)
		b = col.last().Metrics
		st := m.Targets()[0]
		if countsOf(b[0]).up == 1 {
			if i != wantScrapes || !st.Up {
				t.Errorf("up at scrape %d (status up %v), want %d", i, st.Up, wantScrapes)
			}
			break
		}
		want := 0 // the first page's series are marked stale once, by the first failure
		if i == 1 {
			want = 3 * deadlineEvery
		}
		if values, markers := pointCounts(b); values != 0 || markers != want {
			t.Errorf("cut scrape %d: %d points, %d staleness markers, want none and %d", i, values, markers, want)
		}
		if st.Up || st.ConsecutiveFailures != i || !strings.Contains(st.LastError, "scrape timeout of 1m0s reached while converting the page") {
			t.Errorf("cut scrape %d: status %+v", i, st)
		}
	}

	ts := time.Unix(0, int64(findPoints(b[0], "up").GetGauge().DataPoints[0].TimeUnixNano))
	want, err := NewConverter(m.loops[0].t).ConvertAll(page, ctText, ts, 0)
	if err != nil {
		t.Fatal(err)
	}
	sameResources(t, "the first complete scrape", withoutDuration(b), withoutDuration(want))
	if l := log.String(); strings.Count(l, "scrape failed: target down") != 1 || !strings.Contains(l, "scrape target up again") {
		t.Errorf("log:\n%s", l)
	}

	// A failure that forgets the series (the target answering 500 here)
	// leaves none kept: the next scrape is a first one again, judged on
	// its fetch, up at once with a page of new series.
	sp.fail(http.StatusInternalServerError)
	m.ScrapeAll(ctx)
	if up := countsOf(col.last().Metrics[0]).up; up != 0 || m.loops[0].conv.seriesKept() != 0 {
		t.Fatalf("a 500: up %v, %d series kept", up, m.loops[0].conv.seriesKept())
	}
	sp.set(seriesPage(20_000, n), ctText)
	m.ScrapeAll(ctx)
	if c := countsOf(col.last().Metrics[0]); c.up != 1 || c.added != n {
		t.Errorf("the scrape after the series were forgotten: %+v, want up with %d series added", c, n)
	}
}

// withoutDuration is rms without scrape_duration_seconds (a measurement).
func withoutDuration(rms []*metricspb.ResourceMetrics) []*metricspb.ResourceMetrics {
	out := make([]*metricspb.ResourceMetrics, len(rms))
	for i, rm := range rms {
		rm = proto.Clone(rm).(*metricspb.ResourceMetrics)
		for _, sm := range rm.ScopeMetrics {
			ms := sm.Metrics[:0]
			for _, m := range sm.Metrics {
				if m.Name != "scrape_duration_seconds" {
					ms = append(ms, m)
				}
			}
			sm.Metrics = ms
		}
		out[i] = rm
	}
	return out
}
