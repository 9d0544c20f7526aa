package scraper

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/relabel"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/otelstep/otelstep/pipeline"
)

// A scrape never makes a resource or a scope of no points, what the OTLP
// receiver drops so that no JSONL line holds nothing: the target's resource always has the synthetic series, and a
// resource of the page's own job and instance (honor_labels) is made only
// for points, staleness markers included.
func TestNoEmptyResources(t *testing.T) {
	tg := fixtureTarget("empty")
	tg.HonorLabels = true
	tg.MetricRelabelConfigs = []*relabel.Config{rc(t, relabel.Drop, "dropped", src("__name__"))}
	c := NewConverter(tg)
	check := func(what string, rms []*metricspb.ResourceMetrics) {
		t.Helper()
		if len(rms) == 0 {
			t.Fatalf("%s: no resource", what)
		}
		for i, rm := range rms {
			if len(rm.ScopeMetrics) == 0 {
				t.Errorf("%s: resource %d has no scope", what, i)
			}
			for j, sm := range rm.ScopeMetrics {
				if pipeline.ScopeMetricsPoints(sm) == 0 {
					t.Errorf("%s: resource %d scope %d has no points", what, i, j)
				}
			}
		}
	}
	for i, page := range []string{
		"",
		"# TYPE g gauge\n# HELP g metadata, no sample\n",
		"# TYPE g gauge\ng{job=\"inner\",instance=\"in:1\"} 1\n",
		"# TYPE dropped gauge\ndropped{job=\"other\",instance=\"o:1\"} 1\n", // every point of o:1 dropped; g's stale
		"# TYPE g gauge\ng{job=\"inner\",instance=\"in:1\"} 2\n",
		"",
	} {
		rms, err := c.ConvertAll([]byte(page), ctText, t0.Add(time.Duration(i)*time.Second), time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("page %d %q", i, page), rms)
	}
	check("target down", c.DownAll(t0.Add(time.Minute), time.Millisecond))
}
