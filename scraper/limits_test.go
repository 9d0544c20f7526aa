package scraper

import (
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/relabel"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/otelstep/otelstep/pipeline"
)

// synthOf is the value of each synthetic series (up, scrape_*) in rm: of
// the point of its metric with the fewest attributes (the target's
// labels), not one of a federation page's own.
func synthOf(rm *metricspb.ResourceMetrics) map[string]float64 {
	got := map[string]float64{}
	for _, d := range synthDefs {
		if m := findPoints(rm, d.name); m != nil {
			pts := m.GetGauge().DataPoints
			best := pts[0]
			for _, p := range pts {
				if len(p.Attributes) < len(best.Attributes) {
					best = p
				}
			}
			got[d.name] = best.GetAsDouble()
		}
	}
	return got
}

// counts is a scrape's up, scrape_samples_scraped,
// scrape_samples_post_metric_relabeling and scrape_series_added.
type counts struct{ up, scraped, post, added float64 }

func countsOf(rm *metricspb.ResourceMetrics) counts {
	s := synthOf(rm)
	return counts{s["up"], s["scrape_samples_scraped"], s["scrape_samples_post_metric_relabeling"], s["scrape_series_added"]}
}

// switchPage serves whatever page it was last set to, or the HTTP status
// it was last set to fail with.
type switchPage struct {
	mu     sync.Mutex
	page   []byte
	ct     string
	status int // not 0: the answer instead of the page
}

func (s *switchPage) set(page []byte, ct string) {
	s.mu.Lock()
	s.page, s.ct, s.status = page, ct, 0
	s.mu.Unlock()
}

// fail makes s answer status instead of a page, until the next set.
func (s *switchPage) fail(status int) {
	s.mu.Lock()
	s.status = status
	s.mu.Unlock()
}

func (s *switchPage) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	page, ct, status := s.page, s.ct, s.status
	s.mu.Unlock()
	if status != 0 {
		http.Error(w, http.StatusText(status), status)
		return
	}
	w.Header().Set("Content-Type", ct)
	_, _ = w.Write(page)
}

// giant is a string of n bytes.
func giant(n int) string { return strings.Repeat("x", n) }

// twoTargets is a Manager of a target served by bad and one served by a
// steady page, logging to log, and a function that scrapes both once and
// returns the bad target's batch and the steady one's.
func twoTargets(t *testing.T, bad http.Handler, mod func(*Target), log *logBuf) func() (badB, goodB *pipeline.Batch) {
	t.Helper()
	badSrv := httptest.NewServer(bad)
	t.Cleanup(badSrv.Close)
	goodSrv := httptest.NewServer(serve([]byte("# TYPE g gauge\ng{k=\"v\"} 7\n"), ctText))
	t.Cleanup(goodSrv.Close)
	tb := targetAt(badSrv)
	tb.Interval, tb.Timeout = time.Minute, time.Minute // a 16 MiB page under -race on a busy machine
	if mod != nil {
		mod(&tb)
	}
	tg := targetAt(goodSrv)
	tg.JobName = "steady"
	col := &collect{}
	m, err := New(Options{Targets: []Target{tb, tg}, Next: col, Logger: slog.New(slog.NewTextHandler(log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return func() (*pipeline.Batch, *pipeline.Batch) {
		col.mu.Lock()
		col.b = nil
		col.mu.Unlock()
		m.ScrapeAll(testCtx(t))
		col.mu.Lock()
		defer col.mu.Unlock()
		if len(col.b) != 2 {
			t.Fatalf("%d batches", len(col.b))
		}
		var badB, goodB *pipeline.Batch
		for _, b := range col.b {
			if b.Metrics[0].Resource.Attributes[0].Value.GetStringValue() == "steady" {
				goodB = b
			} else {
				badB = b
			}
		}
		if badB == nil || goodB == nil {
			t.Fatal("a target's batch is missing")
		}
		return badB, goodB
	}
}

// A page holding a name or label longer than the labels library encodes
// (more than 16 MiB, under the 64 MiB body limit), served by a real
// target, fails that scrape and no more: up = 0, the reason logged once
// with the job and target, the previous page's series marked stale, the
// other target's scrape whole; the next good page converts as it would
// after any failed scrape.
func TestGiantNamesFailTheScrape(t *testing.T) {
	big := maxLabelLength + 1
	cases := []struct {
		name, page, ct, reason string
		mod                    func(*Target)
	}{
		{"label value", "# TYPE g gauge\ng{a=\"" + giant(big) + "\"} 1\n", ctText, "line 2: a name, label or value of 16777217 bytes", nil},
		{"metric name", "x 1\n" + giant(big) + " 1\n", ctText, "line 2: a name, label or value of 16777217 bytes", nil},
		{"label name", "g{" + giant(big) + "=\"v\"} 1\n", ctText, "line 1: a name, label or value of 16777217 bytes", nil},
		{"quoted UTF-8 name", "{\"" + giant(big) + "\"} 1\n", ctText, "line 1: a name, label or value of 16777217 bytes", nil},
		{"exemplar label", "# TYPE c counter\nc_total 1 # {trace=\"" + giant(big) + "\"} 1\n# EOF\n", ctOM, "line 2: a name, label or value of 16777217 bytes", nil},
		// Each label fits, but a rule joins them into one that does not:
		// the labels library panics, and the scrape recovers from it.
		{"relabeled past the limit", "g{a=\"" + giant(big/2+1) + "\",b=\"" + giant(big/2+1) + "\"} 1\n", ctText,
			"recovered from a panic in github.com/prometheus/prometheus/model/labels", func(tg *Target) {
				tg.MetricRelabelConfigs = []*relabel.Config{rc(t, relabel.Lowercase, "", func(c *relabel.Config) {
					c.SourceLabels, c.TargetLabel = model.LabelNames{"a", "b"}, "c"
				})}
			}},
	}
	good := []byte("# TYPE g gauge\ng{a=\"1\"} 1\ng{a=\"2\"} 2\n")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var log logBuf
			sp := &switchPage{}
			scrape := twoTargets(t, sp, tc.mod, &log)
			sp.set(good, ctText)
			first, _ := scrape()
			if c := countsOf(first.Metrics[0]); c.up != 1 {
				t.Fatalf("good page: %+v", c)
			}
			sp.set([]byte(tc.page), tc.ct)
			bad, steady := scrape()
			if c := countsOf(bad.Metrics[0]); c.up != 0 {
				t.Errorf("up = %v on the giant page", c.up)
			}
			if g := findPoints(bad.Metrics[0], "g"); g == nil || len(g.GetGauge().DataPoints) != 2 || g.GetGauge().DataPoints[0].Flags != flagNoValue {
				t.Errorf("the good page's series not marked stale: %v", g)
			}
			if c := countsOf(steady.Metrics[0]); c.up != 1 || findPoints(steady.Metrics[0], "g") == nil {
				t.Errorf("the other target's scrape: %+v", c)
			}
			lines := strings.Split(strings.TrimSpace(log.String()), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], "scrape failed") || !strings.Contains(lines[0], tc.reason) ||
				!strings.Contains(lines[0], "job=j") || !strings.Contains(lines[0], "target=http://127.0.0.1:") {
				t.Errorf("log, want one line naming the job, target and %q:\n%.2000s", tc.reason, log.String())
			}
			if len(log.String()) > 4096 {
				t.Errorf("the log holds %d bytes: the page is in it", len(log.String()))
			}
			// The next good page is what a converter that saw the first
			// good page and a failed scrape makes of it.
			sp.set(good, ctText)
			after, _ := scrape()
			ref := NewConverter(targetOf(t, tc.mod))
			ts := time.Unix(1_800_000_000, 0)
			if _, _, err := ref.ConvertLeased(good, ctText, ts, 0); err != nil {
				t.Fatal(err)
			}
			ref.DownLeased(ts.Add(time.Second), 0)
			want, _, err := ref.ConvertLeased(good, ctText, ts.Add(2*time.Second), 0)
			if err != nil {
				t.Fatal(err)
			}
			if !sameScrape(normalized(after.Metrics), normalized(want)) {
				t.Errorf("the good page after the failure:\n%v\nwant\n%v", after.Metrics, want)
			}
		})
	}
}

// targetOf is the fixture target as twoTargets makes the failing one
// (its address aside), for a reference converter.
func targetOf(t *testing.T, mod func(*Target)) Target {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	tg := targetAt(srv)
	if mod != nil {
		mod(&tg)
	}
	return tg
}

// normalized is rms with what differs between two runs of the same pages
// at other times set aside: point times, start times, the resource (the
// address) and scrape_duration_seconds.
func normalized(rms []*metricspb.ResourceMetrics) []*metricspb.ResourceMetrics {
	out := make([]*metricspb.ResourceMetrics, len(rms))
	for i, rm := range rms {
		rm = canonical(rm)
		rm.Resource = nil
		for _, sm := range rm.ScopeMetrics {
			var ms []*metricspb.Metric
			for _, m := range sm.Metrics {
				if m.Name == "scrape_duration_seconds" {
					continue
				}
				if g := m.GetGauge(); g != nil {
					for _, p := range g.DataPoints {
						p.TimeUnixNano, p.StartTimeUnixNano = 0, 0
					}
				}
				ms = append(ms, m)
			}
			sm.Metrics = ms
		}
		out[i] = rm
	}
	return out
}

// convLimited converts pages in turn with one converter of the fixture
// target with limits lim, returning each one's resource and error.
func convLimited(t *testing.T, lim Limits, mod func(*Target), pages ...string) ([]*metricspb.ResourceMetrics, []error) {
	t.Helper()
	tg := fixtureTarget("lim")
	tg.Limits = lim
	if mod != nil {
		mod(&tg)
	}
	c := NewConverter(tg)
	ts := time.Unix(1_800_000_000, 0)
	var rms []*metricspb.ResourceMetrics
	var errs []error
	for i, p := range pages {
		at := ts.Add(time.Duration(i) * time.Second)
		rm, _, err := c.ConvertLeased([]byte(p), ctText, at, 0)
		if err != nil {
			var pe *pageError
			if !errors.As(err, &pe) {
				t.Fatalf("page %d: %v is no pageError", i, err)
			}
			rm, _ = c.downLeased(at, 0, pe.n, false)
		}
		rms = append(rms, rm[0])
		errs = append(errs, err)
	}
	return rms, errs
}

// sample_limit counts the samples metric relabeling kept, a repeat of a
// series not again; past it the scrape fails at once: the page is read
// no further (Prometheus reads it to its end, holding none of it), and
// the scrape_samples_* series count the samples up to the one past the
// limit, and the series added before it.
func TestSampleLimit(t *testing.T) {
	page := "# TYPE g gauge\ng{a=\"1\"} 1\ng{a=\"1\"} 1\ndropped 5\ng{a=\"2\"} 2\ng{a=\"3\"} 3\n"
	drop := func(tg *Target) {
		tg.MetricRelabelConfigs = []*relabel.Config{rc(t, relabel.Drop, "dropped", func(c *relabel.Config) {
			c.SourceLabels = model.LabelNames{"__name__"}
		})}
	}
	for _, tc := range []struct {
		limit int
		want  counts
		err   string
	}{
		{0, counts{1, 5, 4, 3}, ""},
		{3, counts{1, 5, 4, 3}, ""}, // a1, a2, a3: the repeat and the dropped series do not count
		{2, counts{0, 5, 4, 2}, "sample limit exceeded (limit: 2)"},
		{1, counts{0, 4, 3, 1}, "sample limit exceeded (limit: 1)"}, // stopped at a2
	} {
		rms, errs := convLimited(t, Limits{Samples: tc.limit}, drop, page)
		if got := countsOf(rms[0]); got != tc.want {
			t.Errorf("sample_limit %d: %+v, want %+v", tc.limit, got, tc.want)
		}
		if (errs[0] == nil) != (tc.err == "") || errs[0] != nil && (errs[0].Error() != tc.err || !errors.Is(errs[0], errSampleLimit)) {
			t.Errorf("sample_limit %d: error %v, want %q", tc.limit, errs[0], tc.err)
		}
		if tc.err != "" && len(pageNames(rms[0])) != 0 {
			t.Errorf("sample_limit %d: a failed scrape sent %v", tc.limit, pageNames(rms[0]))
		}
	}
	// A page the line cache takes whole (the same as the last) counts too.
	rms, errs := convLimited(t, Limits{Samples: 4}, nil, page, page+"g{a=\"4\"} 4\n", page+"g{a=\"4\"} 4\n", page)
	for i, want := range []float64{1, 0, 0, 1} {
		if up := countsOf(rms[i]).up; up != want {
			t.Errorf("scrape %d: up %v, want %v (%v)", i, up, want, errs[i])
		}
	}
}

// label_limit, label_name_length_limit and label_value_length_limit apply
// to a new series' labels after metric relabeling, the target's included
// and the metric name as __name__'s value; a series over one fails the
// scrape with Prometheus's message, counted up to it.
func TestLabelLimits(t *testing.T) {
	// The fixture target adds job, instance and gym_service: with
	// __name__, g{a,b} has 6 labels.
	page := "# TYPE g gauge\nok 1\ng{a=\"12345\",bb=\"1\"} 1\ntoolong 2\n"
	for _, tc := range []struct {
		name string
		lim  Limits
		mod  func(*Target)
		want counts
		err  string
	}{
		{"none", Limits{}, nil, counts{1, 3, 3, 3}, ""},
		{"labels at the limit", Limits{Labels: 6}, nil, counts{1, 3, 3, 3}, ""},
		{"labels over", Limits{Labels: 5}, nil, counts{0, 2, 1, 1},
			"series g{a=\"12345\",bb=\"1\"}: label_limit exceeded (metric: g, number of labels: 6, limit: 5)"},
		{"labels over once relabeled", Limits{Labels: 5}, func(tg *Target) {
			tg.MetricRelabelConfigs = []*relabel.Config{rc(t, relabel.LabelDrop, "bb", nil)}
		}, counts{1, 3, 3, 3}, ""},
		{"name at the limit", Limits{LabelNameLength: 11}, nil, counts{1, 3, 3, 3}, ""}, // gym_service
		{"name over", Limits{LabelNameLength: 10}, nil, counts{0, 1, 0, 0},
			"series ok: label_name_length_limit exceeded (metric: ok, label name: gym_service, length: 11, limit: 10)"},
		{"value at the limit", Limits{LabelValueLength: 15}, nil, counts{1, 3, 3, 3}, ""}, // 127.0.0.1:18200
		{"value over", Limits{LabelValueLength: 14}, nil, counts{0, 1, 0, 0},
			"series ok: label_value_length_limit exceeded (metric: ok, label name: instance, value: \"127.0.0.1:18200\", length: 15, limit: 14)"},
		{"metric name over", Limits{LabelValueLength: 5}, func(tg *Target) {
			tg.Instance, tg.JobName, tg.Labels = "i", "j", nil
		}, counts{0, 3, 2, 2},
			"line 4: series toolong: label_value_length_limit exceeded (metric: toolong, label name: __name__, value: \"toolong\", length: 7, limit: 5)"},
	} {
		rms, errs := convLimited(t, tc.lim, tc.mod, page)
		if got := countsOf(rms[0]); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
		got := ""
		if errs[0] != nil {
			got = errs[0].Error()
		}
		if !strings.HasSuffix(got, tc.err) || (tc.err == "") != (got == "") {
			t.Errorf("%s: error %q, want one ending %q", tc.name, got, tc.err)
		}
	}
}

// A series over a limit fails every scrape it is on (it is not cached as
// one that passed), and the scrape after it is gone succeeds.
func TestLabelLimitEveryScrape(t *testing.T) {
	good := "# TYPE g gauge\ng 1\n"
	bad := good + "g{long=\"" + giant(100) + "\"} 1\n"
	rms, errs := convLimited(t, Limits{LabelValueLength: 64}, nil, good, bad, bad, good)
	for i, want := range []float64{1, 0, 0, 1} {
		if up := countsOf(rms[i]).up; up != want {
			t.Errorf("scrape %d: up %v, want %v (%v)", i, up, want, errs[i])
		}
	}
}
