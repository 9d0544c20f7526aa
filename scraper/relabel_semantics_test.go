package scraper

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/relabel"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
)

// relabelProcess is the relabel package's verdict and labels for ls.
func relabelProcess(ls labels.Labels, cfgs ...*relabel.Config) (labels.Labels, bool) {
	lb := labels.NewBuilder(ls)
	keep := relabel.ProcessBuilder(lb, cfgs...)
	return lb.Labels(), keep
}

// everyAction is a metric_relabel_configs list with every action of
// model/relabel, each of which changes or drops some series of
// everyActionPage.
func everyAction(t *testing.T) []*relabel.Config {
	return []*relabel.Config{
		rc(t, relabel.Replace, `(\d)\d\d`, func(c *relabel.Config) {
			c.SourceLabels, c.TargetLabel, c.Replacement = model.LabelNames{"code"}, "class", "${1}xx"
		}),
		rc(t, relabel.Lowercase, "", func(c *relabel.Config) { c.SourceLabels, c.TargetLabel = model.LabelNames{"Method"}, "method" }),
		rc(t, relabel.Uppercase, "", func(c *relabel.Config) { c.SourceLabels, c.TargetLabel = model.LabelNames{"env"}, "ENV" }),
		rc(t, relabel.HashMod, "", func(c *relabel.Config) {
			c.SourceLabels, c.TargetLabel, c.Modulus = model.LabelNames{"path"}, "shard", 4
		}),
		rc(t, relabel.LabelMap, "meta_(.+)", func(c *relabel.Config) { c.Replacement = "$1" }),
		rc(t, relabel.LabelDrop, "meta_.+|Method", nil),
		rc(t, relabel.Keep, "http_.+|rpc_.+", src("__name__")),
		rc(t, relabel.Drop, "fail", src("status")),
		rc(t, relabel.KeepEqual, "", func(c *relabel.Config) { c.SourceLabels, c.TargetLabel = model.LabelNames{"a"}, "b" }),
		rc(t, relabel.DropEqual, "", func(c *relabel.Config) { c.SourceLabels, c.TargetLabel = model.LabelNames{"c"}, "d" }),
		// renames: the metric takes the new name's metadata (none here)
		rc(t, relabel.Replace, "rpc_(.+)", func(c *relabel.Config) {
			c.SourceLabels, c.TargetLabel, c.Replacement = model.LabelNames{"__name__"}, "__name__", "grpc_$1"
		}),
		rc(t, relabel.LabelKeep, "__name__|job|instance|gym_service|exported_job|class|method|ENV|shard|zone|path|env|code|a|b|c|d|status", nil),
	}
}

const everyActionPage = `http_requests{code="200",Method="GET",env="prod",path="/a",meta_zone="z1",a="x",b="x",c="1",d="2",status="ok"} 1
http_requests{code="500",Method="POST",env="dev",path="/b",a="x",b="y"} 2
http_requests{code="404",Method="Get",env="Dev",path="/c",meta_zone="z2",job="inner",c="3"} 3
rpc_calls{status="fail",a="1",b="1"} 4
rpc_calls{a="1",b="1",c="5",d="5"} 5
rpc_calls{a="2",b="2",c="3",extra="gone"} 6
go_gc{a="1",b="1"} 7
`

// pagePoints are the points of rm's page metrics by name and sorted
// attributes, with their values.
func pagePoints(rm *metricspb.ResourceMetrics) map[string]float64 {
	out := map[string]float64{}
	synth := map[string]bool{}
	for _, d := range synthDefs {
		synth[d.name] = true
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if synth[m.Name] {
			continue
		}
		for _, p := range numPoints(m) {
			out[m.Name+"{"+attrKey(p.Attributes)+"}"] = p.GetAsDouble()
		}
	}
	return out
}

func attrKey(kvs []*commonpb.KeyValue) string {
	var s []string
	for _, kv := range kvs {
		s = append(s, kv.Key+"="+kv.Value.GetStringValue())
	}
	sort.Strings(s)
	return strings.Join(s, ",")
}

// expectedPoints runs the relabel package itself on each sample's labels
// as Prometheus's scrape loop has them (the page's, the target's added,
// exported_ for a clash) and says what the collector then makes of them:
// a point of the metric __name__ with the other labels but job and
// instance as attributes, or none.
func expectedPoints(t *testing.T, page string, tg Target, cfgs []*relabel.Config) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	target := labels.FromStrings("job", tg.JobName, "instance", tg.Address, "gym_service", "fixture")
	for _, line := range strings.Split(strings.TrimSpace(page), "\n") {
		series, val, _ := strings.Cut(line, " ")
		name, rest, _ := strings.Cut(strings.TrimSuffix(series, "}"), "{")
		lb := labels.NewBuilder(labels.FromStrings("__name__", name))
		for _, kv := range strings.Split(rest, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				v = strings.Trim(v, `"`)
				if target.Has(k) {
					lb.Set("exported_"+k, v)
					continue
				}
				lb.Set(k, v)
			}
		}
		target.Range(func(l labels.Label) { lb.Set(l.Name, l.Value) })
		res, keep := relabelProcess(lb.Labels(), cfgs...)
		if !keep {
			continue
		}
		var attrs []string
		res.Range(func(l labels.Label) {
			switch l.Name {
			case "__name__", "job", "instance":
			default:
				attrs = append(attrs, l.Name+"="+l.Value)
			}
		})
		sort.Strings(attrs)
		out[res.Get("__name__")+"{"+strings.Join(attrs, ",")+"}"] = parseFloat(val)
	}
	return out
}

// metric_relabel_configs with every action give what the relabel package
// gives on the same labels, and the verdicts hold on the cached scrapes.
func TestMetricRelabelEveryAction(t *testing.T) {
	cfgs := everyAction(t)
	tg := fixtureTarget("rl")
	tg.MetricRelabelConfigs = cfgs
	want := expectedPoints(t, everyActionPage, tg, cfgs)
	if len(want) != 3 {
		t.Fatalf("the rules keep %d series, want 3 (the test's page and rules disagree)", len(want))
	}
	c := NewConverter(tg)
	for i := range 3 {
		rm, err := c.Convert([]byte(everyActionPage), ctText, t0.Add(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		got := pagePoints(rm)
		for k, v := range want {
			if g, ok := got[k]; !ok || g != v {
				t.Errorf("scrape %d: %s = %v (present %v), want %v; have %v", i+1, k, g, ok, v, got)
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("scrape %d: %s, which the rules drop", i+1, k)
			}
		}
		counts := map[string]float64{}
		for _, m := range rm.ScopeMetrics[0].Metrics {
			if strings.HasPrefix(m.Name, "scrape_samples") {
				counts[m.Name] = m.GetGauge().DataPoints[0].GetAsDouble()
			}
		}
		if counts["scrape_samples_scraped"] != 7 || counts["scrape_samples_post_metric_relabeling"] != 3 {
			t.Errorf("scrape %d: counts %v, want 7 scraped and 3 after relabeling", i+1, counts)
		}
	}
}

// A rule that leaves a series no __name__ fails the scrape, every scrape,
// as in Prometheus; the error names the series.
func TestMetricRelabelNoName(t *testing.T) {
	tg := fixtureTarget("rl")
	tg.MetricRelabelConfigs = []*relabel.Config{rc(t, relabel.LabelDrop, "__name__", nil)}
	c := NewConverter(tg)
	for i := range 2 {
		_, err := c.Convert([]byte("# TYPE g gauge\ng{a=\"1\"} 1\n"), ctText, t0.Add(time.Duration(i)*time.Second))
		if err == nil || !strings.Contains(err.Error(), `line 2`) || !strings.Contains(err.Error(), `g{a="1"}`) || !strings.Contains(err.Error(), "__name__") {
			t.Errorf("scrape %d: error %v", i+1, err)
		}
	}
}

// scrapeLog records the requests a test server answered.
type scrapeLog struct {
	mu   sync.Mutex
	urls []*url.URL
}

func (s *scrapeLog) handler(page string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.urls = append(s.urls, r.URL)
		s.mu.Unlock()
		w.Header().Set("Content-Type", ctText)
		_, _ = w.Write([]byte(page))
	})
}

// relabel_configs rewrite a target as the relabel package rewrites its
// labels, Prometheus's way: static labels first, the scrape config's
// job, __scheme__, __metrics_path__, __param_*, __scrape_interval__ and
// __scrape_timeout__ where they do not set them, the rules, then the
// address, URL, interval, job, instance (the address by default) and the
// labels without "__" of what the rules leave.
func TestTargetRelabelAsPrometheus(t *testing.T) {
	var log scrapeLog
	srv := httptest.NewServer(log.handler("g 1\n"))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	tg := Target{JobName: "job-from-config", Address: "placeholder:9100", Scheme: "http", MetricsPath: "/metrics",
		Params:   url.Values{"module": {"if_mib", "second"}, "kept": {"as is"}},
		Interval: time.Minute, Timeout: 10 * time.Second, HonorTimestamps: true,
		Labels: map[string]string{"real_address": addr, "__meta_zone": "z1", "team": "a", "path_prefix": "/probe", "job": "job-from-label"},
		RelabelConfigs: []*relabel.Config{
			rc(t, relabel.Replace, "(.*)", func(c *relabel.Config) {
				c.SourceLabels, c.TargetLabel = model.LabelNames{"__address__"}, "__param_target"
			}),
			rc(t, relabel.Replace, "(.*)", func(c *relabel.Config) {
				c.SourceLabels, c.TargetLabel = model.LabelNames{"__param_target"}, "instance"
			}),
			rc(t, relabel.Replace, "(.*)", func(c *relabel.Config) {
				c.SourceLabels, c.TargetLabel = model.LabelNames{"real_address"}, "__address__"
			}),
			rc(t, relabel.Replace, "(.*)", func(c *relabel.Config) {
				c.SourceLabels, c.TargetLabel, c.Replacement = model.LabelNames{"path_prefix"}, "__metrics_path__", "${1}/metrics"
			}),
			rc(t, relabel.Replace, "", func(c *relabel.Config) { c.TargetLabel, c.Replacement = "__param_module", "ping" }),
			rc(t, relabel.Replace, "", func(c *relabel.Config) { c.TargetLabel, c.Replacement = "__scrape_interval__", "30s" }),
			rc(t, relabel.LabelMap, "__meta_(.+)", func(c *relabel.Config) { c.Replacement = "$1" }),
			rc(t, relabel.LabelDrop, "real_address|path_prefix", nil),
			rc(t, relabel.Uppercase, "", func(c *relabel.Config) { c.SourceLabels, c.TargetLabel = model.LabelNames{"team"}, "TEAM" }),
		},
	}
	// What the relabel package makes of the same labels.
	pre := labels.FromMap(map[string]string{
		"real_address": addr, "__meta_zone": "z1", "team": "a", "path_prefix": "/probe", "job": "job-from-label",
		"__address__": "placeholder:9100", "__scheme__": "http", "__metrics_path__": "/metrics",
		"__scrape_interval__": "1m", "__scrape_timeout__": "10s", "__param_module": "if_mib", "__param_kept": "as is",
	})
	want, keep := relabelProcess(pre, tg.RelabelConfigs...)
	if !keep {
		t.Fatal("the relabel package drops the target")
	}

	col := &collect{ch: make(chan struct{}, 1)}
	m, err := New(Options{Targets: []Target{tg}, Next: col, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.loops[0].t.Interval; got != 30*time.Second {
		t.Errorf("interval %v, want __scrape_interval__'s 30s", got)
	}
	m.ScrapeAll(context.Background())
	if len(log.urls) != 1 || len(col.b) != 1 {
		t.Fatalf("%d requests, %d batches", len(log.urls), len(col.b))
	}
	u := log.urls[0]
	if u.Path != want.Get("__metrics_path__") {
		t.Errorf("path %q, want %q", u.Path, want.Get("__metrics_path__"))
	}
	q := u.Query()
	if q.Get("module") != want.Get("__param_module") || q["module"][1] != "second" || q.Get("target") != want.Get("__param_target") || q.Get("kept") != "as is" {
		t.Errorf("query %v", q)
	}
	rm := col.b[0].Metrics[0]
	res := attrs(rm.Resource.Attributes)
	if res["service.name"] != want.Get("job") || res["service.instance.id"] != want.Get("instance") || res["server.port"] != "9100" {
		t.Errorf("resource %v, want job %q instance %q", res, want.Get("job"), want.Get("instance"))
	}
	var wantAttrs []string
	want.Range(func(l labels.Label) {
		if !strings.HasPrefix(l.Name, "__") && l.Name != "job" && l.Name != "instance" {
			wantAttrs = append(wantAttrs, l.Name+"="+l.Value)
		}
	})
	sort.Strings(wantAttrs)
	for _, mt := range rm.ScopeMetrics[0].Metrics {
		for _, p := range numPoints(mt) {
			if got := attrKey(p.Attributes); got != strings.Join(wantAttrs, ",") {
				t.Errorf("%s attributes %s, want %s", mt.Name, got, strings.Join(wantAttrs, ","))
			}
		}
	}
}

// A static label sets a target's job, instance, scheme, path or params as
// a rule would (Prometheus's static labels come first), with no rules.
func TestStaticLabelsSetTheTarget(t *testing.T) {
	var log scrapeLog
	srv := httptest.NewServer(log.handler("g 1\n"))
	defer srv.Close()
	tg := fixtureTarget("config-job")
	tg.Address = strings.TrimPrefix(srv.URL, "http://")
	tg.Labels = map[string]string{"job": "label-job", "instance": "node-7", "__metrics_path__": "/other", "__param_x": "1", "team": "a"}
	col := &collect{ch: make(chan struct{}, 1)}
	m, err := New(Options{Targets: []Target{tg}, Next: col, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	m.ScrapeAll(context.Background())
	if len(log.urls) != 1 || log.urls[0].Path != "/other" || log.urls[0].Query().Get("x") != "1" {
		t.Fatalf("requests %v", log.urls)
	}
	rm := col.b[0].Metrics[0]
	if res := attrs(rm.Resource.Attributes); res["service.name"] != "label-job" || res["service.instance.id"] != "node-7" {
		t.Errorf("resource %v", res)
	}
	if a := attrKey(metric(t, rm, "g").GetGauge().DataPoints[0].Attributes); a != "team=a" {
		t.Errorf("attributes %s, want team=a alone", a)
	}
}

// hashmod shards a job's targets as the relabel package does; what the
// rules leave that is no target is an error naming it.
func TestTargetRelabelShardingAndErrors(t *testing.T) {
	shard := []*relabel.Config{
		rc(t, relabel.HashMod, "", func(c *relabel.Config) {
			c.SourceLabels, c.TargetLabel, c.Modulus = model.LabelNames{"__address__"}, "__tmp_shard", 3
		}),
		rc(t, relabel.Keep, "1", src("__tmp_shard")),
	}
	var targets []Target
	kept := 0
	for _, a := range []string{"10.0.0.1:9100", "10.0.0.2:9100", "10.0.0.3:9100", "10.0.0.4:9100", "10.0.0.5:9100", "10.0.0.6:9100"} {
		tg := fixtureTarget("shard")
		tg.Address, tg.RelabelConfigs = a, shard
		targets = append(targets, tg)
		if _, keep := relabelProcess(labels.FromStrings("__address__", a), shard...); keep {
			kept++
		}
	}
	m, err := New(Options{Targets: targets, Next: &collect{}, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.loops) != kept {
		t.Errorf("%d targets scraped, the relabel package keeps %d", len(m.loops), kept)
	}
	for _, l := range m.loops {
		if _, ok := l.t.Labels["__tmp_shard"]; ok {
			t.Errorf("a __ label among the target's labels: %v", l.t.Labels)
		}
	}

	for name, tc := range map[string]struct {
		cfg  *relabel.Config
		want string
	}{
		"no address": {rc(t, relabel.LabelDrop, "__address__", nil), "no __address__"},
		"bad interval": {rc(t, relabel.Replace, "", func(c *relabel.Config) { c.TargetLabel, c.Replacement = "__scrape_interval__", "soon" }),
			`__scrape_interval__ "soon"`},
		"timeout over interval": {rc(t, relabel.Replace, "", func(c *relabel.Config) { c.TargetLabel, c.Replacement = "__scrape_timeout__", "5m" }),
			"__scrape_timeout__ 5m0s is longer than __scrape_interval__ 1s"},
		"bad scheme": {rc(t, relabel.Replace, "", func(c *relabel.Config) { c.TargetLabel, c.Replacement = "__scheme__", "ftp" }), `bad scheme "ftp"`},
	} {
		t.Run(name, func(t *testing.T) {
			tg := fixtureTarget("bad")
			tg.RelabelConfigs = []*relabel.Config{tc.cfg}
			_, err := New(Options{Targets: []Target{tg}, Next: &collect{}, Logger: quiet()})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "bad/127.0.0.1:18200") {
				t.Errorf("error %v, want one naming the target and %q", err, tc.want)
			}
		})
	}
}
