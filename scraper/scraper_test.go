package scraper

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/textparse"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/otelstep/otelstep/pipeline"
)

const (
	ctText = "text/plain; version=0.0.4"
	ctOM   = "application/openmetrics-text; version=1.0.0"
)

var fixtures = []struct{ name, file, ct string }{
	{"vllm", "vllm.txt", ctText}, {"node", "node.txt", ctText}, {"dcgm", "dcgm.txt", ctText},
	{"openmetrics", "openmetrics.om", ctOM}, {"edge", "edge.txt", ctText},
	// issue 35's: written from the formats' specifications
	{"metafirst", "metafirst.txt", ctText}, {"federate", "federate.txt", ctText},
	{"timestamps", "timestamps.txt", ctText},
	{"utf8", "utf8.txt", "text/plain; version=1.0.0; charset=utf-8; escaping=allow-utf-8"},
	{"utf8om", "utf8.om", "application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=allow-utf-8"},
}

// loopbackTarget is fixtureTarget("j") for a test server: its scrape
// timeout is a minute's patience (a TLS handshake under -race on a busy
// machine can take seconds), unless the test sets its own.
func loopbackTarget() Target {
	tg := fixtureTarget("j")
	tg.Interval, tg.Timeout = patience, patience
	return tg
}

func fixtureTarget(job string) Target {
	return Target{JobName: job, Address: "127.0.0.1:18200", Scheme: "http", Labels: map[string]string{"gym_service": "fixture"},
		Interval: time.Second, Timeout: time.Second, HonorTimestamps: true}
}

// patience bounds every wait on a condition: long enough for a busy CI
// machine, never a measuring window.
const patience = time.Minute

func read(t testing.TB, f string) []byte {
	b, err := os.ReadFile("testdata/" + f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type shape struct {
	kind   string
	points int
	unit   string
	ptype  string
}

func shapeOf(m map[string]any) shape {
	s := shape{}
	for _, k := range []string{"gauge", "sum", "histogram", "summary"} {
		if d, ok := m[k].(map[string]any); ok {
			s.kind = k
			dp, _ := d["dataPoints"].([]any)
			s.points = len(dp)
		}
	}
	s.unit, _ = m["unit"].(string)
	if md, ok := m["metadata"].([]any); ok && len(md) > 0 {
		s.ptype = md[0].(map[string]any)["value"].(map[string]any)["stringValue"].(string)
	}
	return s
}

// peer decodes the first line of NAME.peer.jsonl generically.
func peer(t *testing.T, name string) (res any, metrics map[string]map[string]any) {
	line := strings.SplitN(string(read(t, name+".peer.jsonl")), "\n", 2)[0]
	var d map[string]any
	if err := json.Unmarshal([]byte(line), &d); err != nil {
		t.Fatal(err)
	}
	rm := d["resourceMetrics"].([]any)[0].(map[string]any)
	metrics = map[string]map[string]any{}
	for _, m := range rm["scopeMetrics"].([]any)[0].(map[string]any)["metrics"].([]any) {
		mm := m.(map[string]any)
		metrics[mm["name"].(string)] = mm
	}
	return rm["resource"], metrics
}

func ours(t *testing.T, rm *metricspb.ResourceMetrics) (res any, metrics map[string]map[string]any) {
	b, err := protojson.Marshal(&metricspb.MetricsData{ResourceMetrics: []*metricspb.ResourceMetrics{rm}})
	if err != nil {
		t.Fatal(err)
	}
	var d map[string]any
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	r := d["resourceMetrics"].([]any)[0].(map[string]any)
	metrics = map[string]map[string]any{}
	for _, m := range r["scopeMetrics"].([]any)[0].(map[string]any)["metrics"].([]any) {
		mm := m.(map[string]any)
		if _, dup := metrics[mm["name"].(string)]; dup {
			t.Errorf("duplicate metric %s", mm["name"])
		}
		metrics[mm["name"].(string)] = mm
	}
	return r["resource"], metrics
}

func TestFixturesShape(t *testing.T) {
	for _, fx := range fixtures {
		t.Run(fx.name, func(t *testing.T) {
			c := NewConverter(fixtureTarget(fx.name))
			rm, err := c.Convert(read(t, fx.file), fx.ct, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if sn := rm.ScopeMetrics[0].Scope; sn.Name != ScopeName || sn.Version != ScopeVersion {
				t.Errorf("scope %v", sn)
			}
			pres, pm := peer(t, fx.name)
			ores, om := ours(t, rm)
			pj, _ := json.Marshal(pres)
			oj, _ := json.Marshal(ores)
			if string(pj) != string(oj) {
				t.Errorf("resource:\n got %s\nwant %s", oj, pj)
			}
			for n, m := range pm {
				o, ok := om[n]
				if !ok {
					t.Errorf("missing metric %s", n)
					continue
				}
				if a, b := shapeOf(o), shapeOf(m); a != b {
					t.Errorf("%s: got %+v want %+v", n, a, b)
				}
				if d, _ := m["description"].(string); d != o["description"] && !(d == "" && o["description"] == nil) {
					t.Errorf("%s: description %q vs %q", n, o["description"], d)
				}
			}
			for n := range om {
				if _, ok := pm[n]; !ok {
					t.Errorf("extra metric %s", n)
				}
			}
			if fx.name == "vllm" || fx.name == "openmetrics" || fx.name == "edge" {
				for n, m := range pm {
					h, ok := m["histogram"].(map[string]any)
					if !ok {
						continue
					}
					oh := om[n]["histogram"].(map[string]any)
					for i, dp := range h["dataPoints"].([]any) {
						p := dp.(map[string]any)
						q := oh["dataPoints"].([]any)[i].(map[string]any)
						for _, k := range []string{"bucketCounts", "explicitBounds", "count", "sum", "attributes", "exemplars"} {
							a, _ := json.Marshal(p[k])
							if k == "exemplars" {
								hexIDs(q[k])
							}
							b, _ := json.Marshal(q[k])
							if string(a) != string(b) {
								t.Errorf("%s[%d].%s: got %s want %s", n, i, k, b, a)
							}
						}
					}
				}
			}
		})
	}
}

// hexIDs rewrites protojson's base64 traceId/spanId into OTLP/JSON hex.
func hexIDs(v any) {
	l, _ := v.([]any)
	for _, e := range l {
		m := e.(map[string]any)
		for _, k := range []string{"traceId", "spanId"} {
			if s, ok := m[k].(string); ok {
				b, _ := base64.StdEncoding.DecodeString(s)
				m[k] = hex.EncodeToString(b)
			}
		}
	}
}

func findPoints(rm *metricspb.ResourceMetrics, name string) *metricspb.Metric {
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name == name {
			return m
		}
	}
	return nil
}

func TestOpenMetricsDetails(t *testing.T) {
	c := NewConverter(fixtureTarget("openmetrics"))
	rm, err := c.Convert(read(t, "openmetrics.om"), ctOM, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	m := findPoints(rm, "gym_rollouts_total")
	p := m.GetSum().DataPoints[0]
	if p.StartTimeUnixNano != 1796190000500000000 {
		t.Errorf("start %d", p.StartTimeUnixNano)
	}
	if len(p.Exemplars) != 1 || len(p.Exemplars[0].TraceId) != 16 || len(p.Exemplars[0].SpanId) != 8 {
		t.Errorf("exemplars %v", p.Exemplars)
	}
	if m.Unit != "rollouts" || findPoints(rm, "gym_step_seconds").Unit != "s" {
		t.Error("units")
	}
}

func TestEdgeLabels(t *testing.T) {
	c := NewConverter(fixtureTarget("edge"))
	rm, err := c.Convert(read(t, "edge.txt"), ctText, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, a := range findPoints(rm, "edge_labels_many").GetGauge().DataPoints[0].Attributes {
		keys = append(keys, a.Key)
	}
	if got := strings.Join(keys, ","); got != "a,exported_instance,exported_job,gym_service,m,z" {
		t.Errorf("keys %s", got)
	}
	ts := findPoints(rm, "edge_timestamped_total").GetSum().DataPoints[0].TimeUnixNano
	if ts != 1796200000000*uint64(time.Millisecond) {
		t.Errorf("honor timestamps: %d", ts)
	}
}

func TestCounterStartTimes(t *testing.T) {
	c := NewConverter(fixtureTarget("x"))
	t0 := time.Unix(1000, 0)
	page := func(v string) []byte { return []byte("# TYPE c counter\nc_total " + v + "\n") }
	st := func(rm *metricspb.ResourceMetrics) uint64 {
		return findPoints(rm, "c_total").GetSum().DataPoints[0].StartTimeUnixNano
	}
	r1, _ := c.Convert(page("5"), ctText, t0)
	r2, _ := c.Convert(page("7"), ctText, t0.Add(time.Second))
	if st(r1) != uint64(t0.UnixNano()) || st(r2) != st(r1) {
		t.Errorf("start %d %d", st(r1), st(r2))
	}
	r3, _ := c.Convert(page("1"), ctText, t0.Add(2*time.Second))
	if st(r3) != uint64(t0.Add(2*time.Second).UnixNano()) {
		t.Errorf("reset start %d", st(r3))
	}
	r4, _ := c.Convert(page("2"), ctText, t0.Add(3*time.Second))
	if st(r4) != st(r3) {
		t.Errorf("after reset %d", st(r4))
	}
}

func TestGarbage(t *testing.T) {
	c := NewConverter(fixtureTarget("x"))
	_, err := c.Convert([]byte("ok 1\nok2 2\n}}garbage{{ x\n"), ctText, time.Now())
	if err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("err = %v", err)
	}
}

type collect struct {
	mu sync.Mutex
	b  []*pipeline.Batch
	ch chan struct{}
}

func (c *collect) Consume(_ context.Context, b *pipeline.Batch) error {
	c.mu.Lock()
	c.b = append(c.b, b)
	c.mu.Unlock()
	select {
	case c.ch <- struct{}{}:
	default:
	}
	return nil
}

func upOf(t *testing.T, b *pipeline.Batch) float64 {
	m := findPoints(b.Metrics[0], "up")
	if m == nil {
		t.Fatal("no up")
	}
	return m.GetGauge().DataPoints[0].GetAsDouble()
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// oneTarget is a Manager of one fixture target served by srv (changed by mod
// when it is not nil), and the collector of its batches.
func oneTarget(t *testing.T, srv *httptest.Server, mod func(*Target)) (*Manager, *collect) {
	t.Helper()
	tg := loopbackTarget()
	tg.Address = strings.TrimPrefix(srv.URL, "http://")
	if mod != nil {
		mod(&tg)
	}
	col := &collect{ch: make(chan struct{}, 1)}
	m, err := New(Options{Targets: []Target{tg}, Next: col, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	return m, col
}

func scrapeOnce(t *testing.T, h http.Handler, mod func(*Target)) *pipeline.Batch {
	srv := httptest.NewServer(h)
	defer srv.Close()
	m, col := oneTarget(t, srv, mod)
	m.ScrapeAll(context.Background())
	if len(col.b) != 1 {
		t.Fatalf("%d batches", len(col.b))
	}
	return col.b[0]
}

func serve(body []byte, ct string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ct)
		_, _ = w.Write(body)
	})
}

func TestScrapeHTTP(t *testing.T) {
	var gotAccept string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAccept = r.Header.Get("Accept")
		w.Header().Set("Content-Type", ctText)
		_, _ = w.Write(read(t, "vllm.txt"))
	})
	b := scrapeOnce(t, h, nil)
	if upOf(t, b) != 1 || !strings.Contains(gotAccept, "openmetrics") {
		t.Errorf("up=%v accept=%q", upOf(t, b), gotAccept)
	}
	if findPoints(b.Metrics[0], "vllm:e2e_request_latency_seconds") == nil {
		t.Error("missing histogram")
	}
	b = scrapeOnce(t, serve(read(t, "openmetrics.om"), ctOM), nil)
	if findPoints(b.Metrics[0], "gym_rollouts_total") == nil {
		t.Error("om")
	}
}

func TestScrapeFailures(t *testing.T) {
	if b := scrapeOnce(t, serve([]byte("{{{garbage"), ctText), nil); upOf(t, b) != 0 {
		t.Error("garbage: up != 0")
	}
	if b := scrapeOnce(t, http.NotFoundHandler(), nil); upOf(t, b) != 0 {
		t.Error("404: up != 0")
	}
	// A target that never answers: only the scrape timeout can end the
	// scrape, so its returning at all shows the timeout cut it.
	never := make(chan struct{})
	defer close(never)
	silent := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-never:
		case <-r.Context().Done():
		}
	})
	if b := scrapeOnce(t, silent, func(tg *Target) { tg.Timeout = 200 * time.Millisecond }); upOf(t, b) != 0 {
		t.Error("silent: up != 0")
	}
	if b := scrapeOnce(t, serve(read(t, "node.txt"), ctText), func(tg *Target) { tg.BodySizeLimit = 1000 }); upOf(t, b) != 0 {
		t.Error("size limit: up != 0")
	}
	// down target
	tg := fixtureTarget("j")
	tg.Address = "127.0.0.1:1"
	col := &collect{ch: make(chan struct{}, 1)}
	m, _ := New(Options{Targets: []Target{tg}, Next: col, Logger: quiet()})
	m.ScrapeAll(context.Background())
	if upOf(t, col.b[0]) != 0 {
		t.Error("down: up != 0")
	}
}

func TestManagerRun(t *testing.T) {
	srv := httptest.NewServer(serve(read(t, "edge.txt"), ctText))
	defer srv.Close()
	m, col := oneTarget(t, srv, func(tg *Target) { tg.Interval = time.Hour })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = m.Run(ctx); close(done) }()
	select {
	case <-col.ch:
	case <-time.After(patience): // the interval is an hour
		t.Fatal("first scrape not immediate")
	}
	cancel()
	<-done
	m.ScrapeAll(context.Background())
	col.mu.Lock()
	defer col.mu.Unlock()
	if len(col.b) != 2 || upOf(t, col.b[1]) != 1 {
		t.Fatalf("batches %d", len(col.b))
	}
	for i, b := range col.b {
		if !b.Scraped {
			t.Errorf("batch %d is not marked as the scraper's (pipeline.Batch.Scraped)", i)
		}
	}
}

func benchConvert(b *testing.B, file, ct string) { benchConvertPage(b, read(b, file), ct) }

func benchConvertPage(b *testing.B, page []byte, ct string) {
	c := NewConverter(fixtureTarget("bench"))
	rm, err := c.Convert(page, ct, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	samples := findPoints(rm, "scrape_samples_scraped").GetGauge().DataPoints[0].GetAsDouble()
	b.ReportAllocs()
	b.ResetTimer()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	ts := time.Now()
	for i := 0; i < b.N; i++ {
		ts = ts.Add(time.Second)
		if _, err := c.Convert(page, ct, ts); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&m1)
	el := b.Elapsed().Seconds()
	total := samples * float64(b.N)
	b.ReportMetric(total/el, "samples/s")
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/total, "allocs/sample")
}

// benchConvertLeased converts page as the scrape loop does: each scrape's
// chunks go back to the pools once its batch is let go.
func benchConvertLeased(b *testing.B, file string) {
	page := read(b, file)
	c := NewConverter(fixtureTarget("bench"))
	ts := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		ts = ts.Add(time.Second)
		_, leases, err := c.ConvertLeased(page, ctText, ts, time.Millisecond)
		if err != nil {
			b.Fatal(err)
		}
		(&pipeline.Batch{Leases: leases}).Release()
	}
}

func BenchmarkConvertLeasedVLLM(b *testing.B) { benchConvertLeased(b, "vllm.txt") }
func BenchmarkConvertLeasedNode(b *testing.B) { benchConvertLeased(b, "node.txt") }

func BenchmarkConvertVLLM(b *testing.B) { benchConvert(b, "vllm.txt", ctText) }
func BenchmarkConvertNode(b *testing.B) { benchConvert(b, "node.txt", ctText) }
func BenchmarkConvertOM(b *testing.B)   { benchConvert(b, "openmetrics.om", ctOM) }

// BenchmarkConvertOMLarge is an OpenMetrics page of 50 copies of the
// fixture's families (renamed), without its exemplars: the shape of an
// instrumented service that answers OpenMetrics, as prometheus_client does.
func BenchmarkConvertOMLarge(b *testing.B) {
	page := regexp.MustCompile(` # \{[^\n]*`).ReplaceAll(read(b, "openmetrics.om"), nil)
	body := bytes.TrimSuffix(page, []byte("# EOF\n"))
	var big []byte
	for k := range 50 {
		big = append(big, bytes.ReplaceAll(body, []byte("gym_"), fmt.Appendf(nil, "gym%d_", k))...)
	}
	big = append(big, "# EOF\n"...)
	benchConvertPage(b, big, ctOM)
}

func BenchmarkParseOnly(b *testing.B) {
	page := read(b, "vllm.txt")
	n := 0
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		p, _ := textparse.New(page, ctText, nil, textparse.ParserOptions{})
		for {
			e, err := p.Next()
			if err != nil {
				break
			}
			if e == textparse.EntrySeries {
				p.Series()
				n++
			}
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "samples/s")
}

// Each scrape's resource is its own: stamping one must not change another.
func TestResourceNotShared(t *testing.T) {
	c := NewConverter(Target{JobName: "j", Address: "127.0.0.1:1", Scheme: "http", MetricsPath: "/metrics", HonorTimestamps: true})
	page := []byte("# TYPE a gauge\na 1\n")
	r1, err := c.Convert(page, "text/plain; version=0.0.4", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	r2, _ := c.Convert(page, "text/plain; version=0.0.4", time.Now())
	r3 := c.Down(time.Now(), time.Millisecond)
	n := len(r2.Resource.Attributes)
	r1.Resource.Attributes = append(r1.Resource.Attributes, &commonpb.KeyValue{Key: "Authorization"})
	r1.Resource.Attributes[0] = &commonpb.KeyValue{Key: "changed"}
	if len(r2.Resource.Attributes) != n || r2.Resource.Attributes[0].Key == "changed" || r3.Resource.Attributes[0].Key == "changed" || r1.Resource == r2.Resource {
		t.Fatal("scrapes share a resource")
	}
}

func TestPhaseGroupsTargets(t *testing.T) {
	const iv = 15 * time.Second
	seen := map[time.Duration]bool{}
	for i := range 50 {
		job := fmt.Sprintf("job%d", i)
		p := phase(job, 0, iv)
		if p < 0 || p >= iv {
			t.Fatalf("phase %v outside [0, %v)", p, iv)
		}
		if p != phase(job, 0, iv) {
			t.Fatal("phase is not deterministic")
		}
		seen[p/(iv/10)] = true
	}
	if len(seen) < 6 {
		t.Errorf("50 jobs fall in only %d of 10 tenths of the interval", len(seen))
	}
	// New: a job's targets share its phase, phaseGroup at a time.
	var targets []Target
	for i := range 2*phaseGroup + 1 {
		targets = append(targets, Target{JobName: "node", Address: fmt.Sprintf("10.0.0.%d:9100", i), Interval: iv})
	}
	targets = append(targets, Target{JobName: "dcgm", Address: "10.0.0.1:9400", Interval: iv})
	m, err := New(Options{Targets: targets, Next: pipeline.ConsumerFunc(func(context.Context, *pipeline.Batch) error { return nil })})
	if err != nil {
		t.Fatal(err)
	}
	phases := map[time.Duration]int{}
	for _, l := range m.loops {
		phases[l.ph]++
	}
	if len(phases) != 4 {
		t.Errorf("%d targets of 2 jobs in %d phases, want 4 (3 groups of node, 1 of dcgm): %v", len(m.loops), len(phases), phases)
	}
	if m.loops[0].ph != m.loops[phaseGroup-1].ph || m.loops[0].ph == m.loops[phaseGroup].ph {
		t.Error("the first phaseGroup targets of a job do not share a phase, or the next one joins them")
	}
	now := time.Unix(1_800_000_000, 250e6) // offset 250ms within any whole-second interval
	for _, c := range []struct{ ph, want time.Duration }{
		{300 * time.Millisecond, 50 * time.Millisecond},
		{250 * time.Millisecond, time.Second}, // exactly now: the next one
		{100 * time.Millisecond, 850 * time.Millisecond},
	} {
		if got := untilPhase(now, time.Second, c.ph); got != c.want {
			t.Errorf("untilPhase(phase %v) = %v, want %v", c.ph, got, c.want)
		}
	}
}

// The line a parse error names is the failing one also when the entries
// before it were TYPE/HELP/UNIT lines or comments, not samples.
func TestParseErrorLineAfterMetadata(t *testing.T) {
	for _, c := range []struct {
		page, ct, want string
	}{
		{"# TYPE req counter\n# UNIT req requests\nreq_total 1\n# EOF\n", ctOM, "line 2"},
		{"# HELP a x\n# TYPE a gauge\n# just a comment\na{b=\"c\" 1\n", ctText, "line 4"},
	} {
		_, err := NewConverter(fixtureTarget("t")).Convert([]byte(c.page), c.ct, time.Now())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want it to name %s", c.page, err, c.want)
		}
	}
}

// TestBodyListFits checks the page buffers' free list: a page gets the
// smallest free buffer that fits it, a bigger page than any grows the
// largest, and the list keeps at most freeBodies, the biggest.
func TestBodyListFits(t *testing.T) {
	var l bodyList
	sizes := []int{40 << 10, 90 << 10, 60 << 10}
	var bufs []*bytes.Buffer
	for _, n := range sizes {
		bufs = append(bufs, l.get(n))
	}
	for i, b := range bufs {
		if b.Cap() < sizes[i] {
			t.Fatalf("get(%d) returned a buffer of cap %d", sizes[i], b.Cap())
		}
		b.Write(make([]byte, sizes[i]))
		l.put(b)
	}
	if len(l.free) != 3 {
		t.Fatalf("free list holds %d buffers, want 3", len(l.free))
	}
	if b := l.get(50 << 10); b != bufs[2] {
		t.Errorf("get(50 KiB) = buffer of cap %d, want the 60 KiB one (cap %d)", b.Cap(), bufs[2].Cap())
	} else if b.Len() != 0 {
		t.Errorf("a reused buffer holds %d bytes", b.Len())
	}
	if b := l.get(200 << 10); b != bufs[1] || b.Cap() < 200<<10 {
		t.Errorf("get(200 KiB) did not grow the largest free buffer")
	}
	if b := l.get(1); b != bufs[0] {
		t.Errorf("get(1) did not return the last free buffer")
	}
	if b := l.get(1); b == nil || b.Cap() < 1 || b == bufs[0] || b == bufs[1] || b == bufs[2] {
		t.Errorf("get on an empty list did not return a new buffer")
	}

	for range freeBodies + 4 {
		b := new(bytes.Buffer)
		b.Grow(1 << 10)
		l.put(b)
	}
	big := new(bytes.Buffer)
	big.Grow(1 << 20)
	l.put(big)
	if len(l.free) != freeBodies {
		t.Fatalf("free list holds %d buffers, want %d", len(l.free), freeBodies)
	}
	found := false
	for _, b := range l.free {
		found = found || b == big
	}
	if !found {
		t.Error("a full list did not keep a bigger buffer in place of its smallest")
	}
	huge := new(bytes.Buffer)
	huge.Grow(17 << 20)
	l.put(huge)
	for _, b := range l.free {
		if b == huge {
			t.Error("the list kept a buffer over 16 MiB")
		}
	}
}

// FirstScrapesDone closes once every target's first scrape was delivered,
// not before: a target held back keeps it open while the others are done;
// and at once for a Manager without targets.
func TestFirstScrapesDone(t *testing.T) {
	page := read(t, "edge.txt")
	hold := make(chan struct{})
	var srvs []*httptest.Server
	for i := range 3 {
		srvs = append(srvs, httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if i == 2 {
				<-hold
			}
			w.Header().Set("Content-Type", ctText)
			_, _ = w.Write(page)
		})))
	}
	for _, srv := range srvs {
		t.Cleanup(srv.Close)
	}
	var unhold sync.Once
	release := func() { unhold.Do(func() { close(hold) }) }
	col := &collect{ch: make(chan struct{}, 10)}
	m := managerOf(t, srvs, col)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = m.Run(ctx); close(done) }()
	defer func() { release(); cancel(); <-done }() // a failure must not leave the handler held
	for range 2 {
		select {
		case <-col.ch:
		case <-time.After(patience):
			t.Fatal("the two prompt targets were not scraped")
		}
	}
	select {
	case <-m.FirstScrapesDone():
		t.Fatal("closed while one target's first scrape was held back")
	case <-time.After(100 * time.Millisecond):
	}
	release()
	select {
	case <-m.FirstScrapesDone():
	case <-time.After(patience):
		t.Fatal("not closed after every first scrape")
	}
	col.mu.Lock()
	n := len(col.b)
	col.mu.Unlock()
	if n < 3 {
		t.Fatalf("closed with %d of 3 first scrapes delivered", n)
	}

	none, err := New(Options{Next: col, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-none.FirstScrapesDone():
	default:
		t.Fatal("a Manager without targets: not closed")
	}
}

// hinted records the batches it takes and, at each flush hint, how many of
// each job's it had taken by then.
type hinted struct {
	mu    sync.Mutex
	jobs  map[string]int
	hints []map[string]int
}

func (h *hinted) Consume(_ context.Context, b *pipeline.Batch) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, kv := range b.Metrics[0].Resource.Attributes {
		if kv.Key == "service.name" {
			h.jobs[kv.Value.GetStringValue()]++
		}
	}
	return nil
}

func (h *hinted) Flush(context.Context) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.hints = append(h.hints, maps.Clone(h.jobs))
}

// The last scrape of a phase group's round tells Next the round is over
// (pipeline.Flusher), once a round and after all of the group's scrapes.
func TestRoundEndHint(t *testing.T) {
	srv := httptest.NewServer(serve(read(t, "edge.txt"), ctText))
	defer srv.Close()
	var tgs []Target
	for _, job := range []string{"a", "a", "a", "b"} {
		tg := fixtureTarget(job)
		tg.Address = strings.TrimPrefix(srv.URL, "http://")
		tgs = append(tgs, tg)
	}
	h := &hinted{jobs: map[string]int{}}
	m, err := New(Options{Targets: tgs, Next: h, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for round := 1; round <= 3; round++ {
		m.ScrapeAll(context.Background())
		h.mu.Lock()
		if len(h.hints) != 2*round {
			t.Fatalf("round %d: %d hints, want %d (one per group and round)", round, len(h.hints), 2*round)
		}
		// Of this round's two hints, one came after all three of job a's
		// scrapes: a's count then was a multiple of 3 at least 3*round.
		ok := false
		for _, hs := range h.hints[2*round-2:] {
			if hs["a"] == 3*round {
				ok = true
			}
		}
		h.mu.Unlock()
		if !ok {
			t.Fatalf("round %d: no hint after all of job a's scrapes: %v", round, h.hints)
		}
	}
}

func TestRoundDelivered(t *testing.T) {
	r := &round{size: 3}
	r.left.Store(3)
	var got []bool
	for range 7 {
		got = append(got, r.delivered())
	}
	if fmt.Sprint(got) != "[false false true false false true false]" {
		t.Fatalf("delivered %v", got)
	}
}
