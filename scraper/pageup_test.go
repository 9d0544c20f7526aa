package scraper

import (
	"testing"

	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
)

// A page's own up and scrape_* series (a federation page carries the up of
// the jobs it federates) and the synthetic series are one metric of each
// name, with the synthetic metric's type and description, as in the
// collector (issue 35, item 2).
func TestPageOwnSyntheticNames(t *testing.T) {
	page := `# HELP up Whatever the page says.
# TYPE up counter
up{instance="10.0.0.1:9100",job="node"} 0 1796200000000
up{instance="10.0.0.2:9100",job="node"} 1
# TYPE scrape_duration_seconds untyped
scrape_duration_seconds{instance="10.0.0.1:9100",job="node"} 10
scrape_samples_scraped{instance="10.0.0.1:9100",job="node"} 812
`
	for _, scrape := range []string{"up", "down"} {
		t.Run(scrape, func(t *testing.T) {
			c := NewConverter(fixtureTarget("fed"))
			rm, err := c.Convert([]byte(page), ctText, t0)
			if err != nil {
				t.Fatal(err)
			}
			wantUp := 1.0
			if scrape == "down" { // the page's series get staleness markers, in the same metric
				rm, wantUp = c.Down(t0.Add(1e9), 0), 0
			}
			count := map[string]int{}
			for _, m := range rm.ScopeMetrics[0].Metrics {
				count[m.Name]++
			}
			for _, d := range synthDefs {
				if count[d.name] != 1 {
					t.Errorf("%d metrics named %s, want 1", count[d.name], d.name)
				}
			}
			for name, pagePoints := range map[string]int{"up": 2, "scrape_duration_seconds": 1, "scrape_samples_scraped": 1, "scrape_series_added": 0} {
				m := checkKind(t, rm, name, "gauge", "gauge")
				var synth, own int
				for _, p := range m.GetGauge().DataPoints {
					a := attrs(p.Attributes)
					if a["exported_job"] == "" {
						synth++
						if name == "up" && p.GetAsDouble() != wantUp {
							t.Errorf("synthetic up %v, want %v", p.GetAsDouble(), wantUp)
						}
						continue
					}
					own++
					if scrape == "up" && name == "up" && a["exported_instance"] == "10.0.0.1:9100" && (p.GetAsDouble() != 0 || p.TimeUnixNano != 1796200000000*1e6) {
						t.Errorf("the page's up: %v", p)
					}
				}
				if scrape == "down" && name == "up" {
					pagePoints = 1 // the stamped series has no staleness marker
				}
				if synth != 1 || own != pagePoints {
					t.Errorf("%s: %d synthetic points and %d of the page, want 1 and %d", name, synth, own, pagePoints)
				}
				for _, d := range synthDefs {
					if d.name == name && (m.Description != d.help || m.Unit != d.unit) {
						t.Errorf("%s: description %q unit %q, want the synthetic metric's", name, m.Description, m.Unit)
					}
				}
			}
		})
	}
}

// The page's up of the very series the synthetic up is (no labels of its
// own): one point, the synthetic value at the scrape's time; a page point
// with a time of its own stays, and the synthetic one is dropped, as the
// collector refuses two times in one point.
func TestPageUpSameSeries(t *testing.T) {
	one := func(page string) *metricspb.NumberDataPoint {
		t.Helper()
		pts := metric(t, conv(t, page, ctText), "up").GetGauge().DataPoints
		if len(pts) != 1 {
			t.Fatalf("%d up points, want 1", len(pts))
		}
		return pts[0]
	}
	if p := one("up 0\n"); p.GetAsDouble() != 1 || p.TimeUnixNano != uint64(t0.UnixNano()) {
		t.Errorf("unstamped: %v", p)
	}
	if p := one("up 0 1796200000000\n"); p.GetAsDouble() != 0 || p.TimeUnixNano != 1796200000000*1e6 {
		t.Errorf("stamped: %v", p)
	}
}

// Under honor_labels the page's up of other jobs is of their resources;
// the target's resource has the synthetic up alone.
func TestPageUpHonorLabels(t *testing.T) {
	tg := fixtureTarget("fed")
	tg.HonorLabels = true
	rms, err := NewConverter(tg).ConvertAll([]byte("up{job=\"node\",instance=\"10.0.0.1:9100\"} 0\n"), ctText, t0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rms) != 2 {
		t.Fatalf("%d resources, want 2", len(rms))
	}
	if pts := metric(t, rms[0], "up").GetGauge().DataPoints; len(pts) != 1 || pts[0].GetAsDouble() != 1 {
		t.Errorf("target's up: %v", pts)
	}
	if m := metric(t, rms[1], "up"); len(m.GetGauge().DataPoints) != 1 || m.Description != synthDefs[0].help {
		t.Errorf("page's up: %v", m)
	}
}
