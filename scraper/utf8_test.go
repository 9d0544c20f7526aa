package scraper

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/common/model"
)

// The Accept header Prometheus 3 and the collector send (scrape.acceptHeader
// with the default scrape protocols and escaping=allow-utf-8).
const prometheusAccept = "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6," +
	"application/openmetrics-text;version=0.0.1;q=0.5," +
	"text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4," +
	"text/plain;version=0.0.4;q=0.3,*/*;q=0.2"

func TestAcceptAsPrometheus(t *testing.T) {
	if acceptHeader != prometheusAccept {
		t.Errorf("Accept:\n %s\nwant\n %s", acceptHeader, prometheusAccept)
	}
}

// negotiate picks, as client_golang's expfmt.NegotiateAccept does, the
// first of the offered media types ("type/subtype;version=V") that the
// Accept header's clauses, highest q first, ask for, and the escaping
// that clause names (underscores if none). No match: text 0.0.4.
func negotiate(accept string, offered ...string) (media, escaping string) {
	type clause struct {
		media, escaping string
		q               float64
	}
	var cs []clause
	for _, c := range strings.Split(accept, ",") {
		parts := strings.Split(c, ";")
		cl := clause{q: 1}
		params := []string{strings.TrimSpace(parts[0])}
		for _, p := range parts[1:] {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			switch k {
			case "q":
				cl.q, _ = strconv.ParseFloat(v, 64)
			case "escaping":
				cl.escaping = v
			case "version":
				params = append(params, "version="+v)
			}
		}
		cl.media = strings.Join(params, ";")
		cs = append(cs, cl)
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].q > cs[j].q })
	for _, c := range cs {
		if slices.Contains(offered, c.media) {
			if c.escaping == "" {
				c.escaping = model.EscapeUnderscores
			}
			return c.media, c.escaping
		}
	}
	return "text/plain;version=0.0.4", model.EscapeUnderscores
}

// negotiating serves a counter app.dotted.requests_total{http.route} and
// a gauge app_queue_depth{queue.name} as a client_golang target would:
// the format and the names' escaping negotiated from the request's Accept
// header (OpenMetrics 1.0.0 offered or not), the names escaped by
// model.EscapeName unless allow-utf-8, and quoted where they are no
// legacy names. It returns the Content-Type it served last.
func negotiating(openMetrics bool) (http.Handler, func() string) {
	var mu sync.Mutex
	var served string
	offered := []string{"text/plain;version=1.0.0", "text/plain;version=0.0.4"}
	if openMetrics {
		offered = append([]string{"application/openmetrics-text;version=1.0.0"}, offered...)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			media, esc := negotiate(r.Header.Get("Accept"), offered...)
			ct := strings.Replace(media, ";", "; ", 1) + "; charset=utf-8; escaping=" + esc
			mu.Lock()
			served = ct
			mu.Unlock()
			scheme, err := model.ToEscapingScheme(esc)
			if err != nil {
				http.Error(w, err.Error(), http.StatusNotAcceptable)
				return
			}
			name := func(n string) string {
				n = model.EscapeName(n, scheme)
				if model.IsValidLegacyMetricName(n) {
					return n
				}
				return strconv.Quote(n)
			}
			series := func(metric, label, value string) string {
				m, l := name(metric), name(label)
				if strings.HasPrefix(m, `"`) {
					return "{" + m + "," + l + "=" + strconv.Quote(value) + "}"
				}
				return m + "{" + l + "=" + strconv.Quote(value) + "}"
			}
			om := strings.HasPrefix(media, "application/openmetrics-text")
			counter := name("app.dotted.requests_total")
			if om {
				counter = name("app.dotted.requests")
			}
			w.Header().Set("Content-Type", ct)
			page := "# HELP " + counter + " Requests.\n# TYPE " + counter + " counter\n" +
				series("app.dotted.requests_total", "http.route", "/api/v1") + " 7\n" +
				"# HELP " + name("app_queue_depth") + " Depth.\n# TYPE " + name("app_queue_depth") + " gauge\n" +
				series("app_queue_depth", "queue.name", "jobs") + " 3\n"
			if om {
				page += "# EOF\n"
			}
			_, _ = w.Write([]byte(page))
		}), func() string {
			mu.Lock()
			defer mu.Unlock()
			return served
		}
}

// A metric and labels with dots arrive with their dots: a client_golang
// target answers the Accept header with escaping=allow-utf-8 (issue 35,
// item 4). With OpenMetrics offered it answers OpenMetrics 1.0.0, else text
// 1.0.0; a target that only knows the older formats is still understood.
func TestUTF8NamesNegotiated(t *testing.T) {
	for _, tc := range []struct {
		name        string
		openMetrics bool
		served      string // the negotiated format's start
	}{
		{"openmetrics", true, "application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=allow-utf-8"},
		{"text", false, "text/plain; version=1.0.0; charset=utf-8; escaping=allow-utf-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, served := negotiating(tc.openMetrics)
			srv := httptest.NewServer(h)
			defer srv.Close()
			m, col := oneTarget(t, srv, nil)
			m.ScrapeAll(context.Background())
			if got := served(); !strings.HasPrefix(got, tc.served) {
				t.Errorf("the target served %q", got)
			}
			if len(col.b) != 1 || upOf(t, col.b[0]) != 1 {
				t.Fatalf("%d batches", len(col.b))
			}
			rm := col.b[0].Metrics[0]
			c := checkKind(t, rm, "app.dotted.requests_total", "sum", "counter")
			if a := attrs(c.GetSum().DataPoints[0].Attributes); a["http.route"] != "/api/v1" {
				t.Errorf("attributes %v", a)
			}
			g := checkKind(t, rm, "app_queue_depth", "gauge", "gauge")
			if a := attrs(g.GetGauge().DataPoints[0].Attributes); a["queue.name"] != "jobs" {
				t.Errorf("attributes %v", a)
			}
		})
	}
}
