package scraper

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/relabel"
)

func rc(t *testing.T, action relabel.Action, regex string, mod func(*relabel.Config)) *relabel.Config {
	t.Helper()
	c := relabel.DefaultRelabelConfig
	c.Action = action
	if regex != "" {
		c.Regex = relabel.MustNewRegexp(regex)
	}
	if mod != nil {
		mod(&c)
	}
	if err := c.Validate(model.UTF8Validation); err != nil {
		t.Fatalf("relabel config %+v: %v", c, err)
	}
	return &c
}

func src(names ...string) func(*relabel.Config) {
	return func(c *relabel.Config) {
		for _, n := range names {
			c.SourceLabels = append(c.SourceLabels, model.LabelName(n))
		}
	}
}

const relabelPage = `# TYPE go_gc gauge
go_gc 1
# TYPE req counter
req_total{code="200",pid="7",meta_zone="z"} 5
req_total{code="500",pid="7",meta_zone="z"} 1
# TYPE lat histogram
lat_bucket{le="1"} 1
lat_bucket{le="+Inf"} 2
lat_count 2
lat_sum 3
`

func TestMetricRelabel(t *testing.T) {
	cfgs := []*relabel.Config{
		rc(t, relabel.Drop, "go_.*", src("__name__")),
		rc(t, relabel.Keep, "req_total|lat_.*", src("__name__")),
		rc(t, relabel.LabelDrop, "pid", nil),
		rc(t, relabel.LabelMap, "meta_(.+)", func(c *relabel.Config) { c.Replacement = "$1" }),
		rc(t, relabel.Replace, "(.*)", func(c *relabel.Config) {
			c.SourceLabels = []modelName{"code"}
			c.TargetLabel = "status"
		}),
		rc(t, relabel.LabelKeep, "__name__|status|zone|le|job|instance|gym_service", nil),
	}
	rm := conv(t, relabelPage, ctText, func(tg *Target) { tg.MetricRelabelConfigs = cfgs })
	if got := pageNames(rm); strings.Join(got, ",") != "lat,req_total" {
		t.Fatalf("names %v", got)
	}
	for _, p := range metric(t, rm, "req_total").GetSum().DataPoints {
		a := attrs(p.Attributes)
		if _, ok := a["pid"]; ok || a["zone"] != "z" || a["status"] == "" || a["code"] != "" || a["gym_service"] != "fixture" {
			t.Errorf("attributes %v", a)
		}
	}
	if h := metric(t, rm, "lat").GetHistogram().DataPoints[0]; h.Count != 2 || len(h.ExplicitBounds) != 1 {
		t.Errorf("histogram survives relabeling: %v", h)
	}
	val := func(n string) float64 { return metric(t, rm, n).GetGauge().DataPoints[0].GetAsDouble() }
	if val("scrape_samples_scraped") != 7 || val("scrape_samples_post_metric_relabeling") != 6 || val("scrape_series_added") != 6 {
		t.Errorf("counts scraped=%v post=%v added=%v", val("scrape_samples_scraped"), val("scrape_samples_post_metric_relabeling"), val("scrape_series_added"))
	}
}

// Renaming __name__ leaves the TYPE behind: the collector finds no
// metadata for the new name, so it is an unknown gauge.
func TestMetricRelabelRename(t *testing.T) {
	cfg := rc(t, relabel.Replace, "go_gc", func(c *relabel.Config) {
		c.SourceLabels = []modelName{"__name__"}
		c.TargetLabel = "__name__"
		c.Replacement = "renamed"
	})
	rm := conv(t, relabelPage, ctText, func(tg *Target) { tg.MetricRelabelConfigs = []*relabel.Config{cfg} })
	checkKind(t, rm, "renamed", "gauge", "unknown")
	if findPoints(rm, "go_gc") != nil {
		t.Error("old name still there")
	}
}

// The relabel verdict is cached per raw series: a known series is not
// relabeled again (here: changing the rules has no effect on it).
func TestMetricRelabelCached(t *testing.T) {
	tg := fixtureTarget("sem")
	tg.MetricRelabelConfigs = []*relabel.Config{rc(t, relabel.Drop, "go_.*", src("__name__"))}
	c := NewConverter(tg)
	if _, err := c.Convert([]byte(relabelPage), ctText, t0); err != nil {
		t.Fatal(err)
	}
	c.t.MetricRelabelConfigs = []*relabel.Config{rc(t, relabel.Drop, ".*", src("__name__"))}
	rm, err := c.Convert([]byte(relabelPage), ctText, t0.Add(1e9))
	if err != nil {
		t.Fatal(err)
	}
	if got := pageNames(rm); strings.Join(got, ",") != "lat,req_total" {
		t.Errorf("names %v: cached verdicts not used", got)
	}
}

func TestTargetRelabel(t *testing.T) {
	srv := httptest.NewServer(serve([]byte("# TYPE g gauge\ng 1\n"), ctText))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	mk := func(address string, cfgs ...*relabel.Config) Target {
		tg := fixtureTarget("j")
		tg.Address = address
		tg.MetricsPath = "/wrong"
		tg.RelabelConfigs = cfgs
		return tg
	}
	targets := []Target{
		// dropped: never scraped
		mk("127.0.0.1:1", rc(t, relabel.Drop, "127.0.0.1:1", src("__address__"))),
		// address, path, job and labels rewritten
		mk("placeholder:1",
			rc(t, relabel.Replace, ".*", func(c *relabel.Config) { c.TargetLabel = "__address__"; c.Replacement = addr }),
			rc(t, relabel.Replace, ".*", func(c *relabel.Config) { c.TargetLabel = "__metrics_path__"; c.Replacement = "/metrics" }),
			rc(t, relabel.Replace, ".*", func(c *relabel.Config) { c.TargetLabel = "job"; c.Replacement = "renamed" }),
			rc(t, relabel.Replace, ".*", func(c *relabel.Config) { c.TargetLabel = "instance"; c.Replacement = "node-a" }),
			rc(t, relabel.Replace, "(.*)", func(c *relabel.Config) {
				c.SourceLabels = []modelName{"__scheme__"}
				c.TargetLabel = "scheme_was"
			}),
			rc(t, relabel.LabelDrop, "gym_service", nil),
		),
	}
	col := &collect{ch: make(chan struct{}, 2)}
	m, err := New(Options{Targets: targets, Next: col, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.loops) != 1 {
		t.Fatalf("%d loops, want 1 (one target dropped)", len(m.loops))
	}
	m.ScrapeAll(context.Background())
	if len(col.b) != 1 || upOf(t, col.b[0]) != 1 {
		t.Fatalf("relabeled target not scraped: %d batches", len(col.b))
	}
	rm := col.b[0].Metrics[0]
	if r := kvs(rm.Resource.Attributes); !strings.Contains(r, `service.name={"stringValue":"renamed"}`) || !strings.Contains(r, `service.instance.id={"stringValue":"node-a"}`) {
		t.Errorf("resource %s", r)
	}
	if a := attrs(metric(t, rm, "g").GetGauge().DataPoints[0].Attributes); a["scheme_was"] != "http" || a["gym_service"] != "" {
		t.Errorf("attributes %v", a)
	}
}

type modelName = model.LabelName

// A metric_relabel_configs rule that rewrites job moves the series to a
// resource of that job, as the collector builds resources from the labels
// after relabeling.
func TestMetricRelabelJobMakesAResource(t *testing.T) {
	tg := fixtureTarget("sem")
	tg.MetricRelabelConfigs = []*relabel.Config{rc(t, relabel.Replace, "go_.*", func(c *relabel.Config) {
		c.SourceLabels = model.LabelNames{"__name__"}
		c.TargetLabel = "job"
		c.Replacement = "runtime"
	})}
	rms, err := NewConverter(tg).ConvertAll([]byte(relabelPage), ctText, t0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rms) != 2 || findPoints(rms[1], "go_gc") == nil || findPoints(rms[0], "go_gc") != nil || findPoints(rms[0], "req_total") == nil {
		t.Fatalf("want go_gc alone under job runtime: %d resources", len(rms))
	}
	if got := rms[1].Resource.Attributes[0].Value.GetStringValue(); got != "runtime" {
		t.Errorf("service.name %q, want runtime", got)
	}
}
