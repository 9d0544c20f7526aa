package scraper

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/otelstep/otelstep/config"
	"github.com/otelstep/otelstep/telemetry"
)

// A target's scrapes are recorded per scrape: up, samples, and the points
// delivered counted as the receiver's.
func TestScrapeTelemetry(t *testing.T) {
	var fail atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", ctText)
		_, _ = w.Write([]byte("# TYPE g gauge\ng{a=\"1\"} 1\ng{a=\"2\"} 2\n# TYPE c counter\nc_total 3\n"))
	}))
	defer srv.Close()
	tm, err := telemetry.New(config.Telemetry{Level: "detailed"}, telemetry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Shutdown(context.Background())
	tg := fixtureTarget("j")
	tg.Address = strings.TrimPrefix(srv.URL, "http://")
	col := &collect{ch: make(chan struct{}, 1)}
	m, err := New(Options{Targets: []Target{tg}, Next: col, Logger: quiet(), Telemetry: tm.Scrape("prometheus/self")})
	if err != nil {
		t.Fatal(err)
	}
	m.ScrapeAll(context.Background())
	page := metricsPage(t, tm)
	lbl := `{receiver="prometheus/self",scrape_job="j",target="` + tg.Address + `"}`
	for _, w := range []string{
		"otelstep_scrape_up" + lbl + " 1",
		"otelstep_scrape_samples_scraped" + lbl + " 3",
		"otelstep_scrape_samples_post_metric_relabeling" + lbl + " 3",
		"otelstep_scrape_series_added" + lbl + " 3",
		"otelstep_scrape_duration_seconds_count" + lbl + " 1",
		// 3 samples and the 5 synthetic series
		`otelcol_receiver_accepted_metric_points_total{receiver="prometheus/self",transport="http"} 8`,
	} {
		if !strings.Contains(page, w+"\n") {
			t.Errorf("no %s in:\n%s", w, page)
		}
	}
	fail.Store(true)
	m.ScrapeAll(context.Background())
	page = metricsPage(t, tm)
	for _, w := range []string{"otelstep_scrape_up" + lbl + " 0", "otelstep_scrape_duration_seconds_count" + lbl + " 2"} {
		if !strings.Contains(page, w+"\n") {
			t.Errorf("no %s after a failed scrape in:\n%s", w, page)
		}
	}
}

func metricsPage(t *testing.T, tm *telemetry.Telemetry) string {
	t.Helper()
	rec := httptest.NewRecorder()
	tm.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return rec.Body.String()
}
