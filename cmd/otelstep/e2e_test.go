package main

import (
	"bufio"
	"context"
	"fmt"
	"github.com/otelstep/otelstep/internal/fakebackend"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/otelstep/otelstep/bench"
	"github.com/otelstep/otelstep/internal/proctest"
	"github.com/otelstep/otelstep/otlpwire"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

const testToken = "e2e-Secret-Token-7f3a9c" // must appear nowhere on disk or in logs

// The binaries under test, each built at its first use (package proctest).
var (
	// tested is built as the tests are: -pgo=off (README.md), so the binary
	// shares their compiled dependencies, and under go test -race with the
	// race detector too, so a data race anywhere in the running pipeline
	// fails the test (the binary then exits 66).
	tested = &proctest.Build{Args: raceArgs()}
	// static is built as otelstep is released, without cgo. tested may use
	// cgo (always under -race), and a cgo build cannot set another thread's
	// timer slack (tuning.go).
	static = &proctest.Build{Env: []string{"CGO_ENABLED=0"}, Args: []string{"-pgo=off"}}
)

const raceBuild = proctest.Race

func raceArgs() []string {
	if raceBuild {
		return []string{"-pgo=off", "-race"}
	}
	return []string{"-pgo=off"}
}

// buildBinary builds otelstep once per test run.
func buildBinary(t *testing.T) string { return tested.Get(t) }

// buildStatic builds otelstep as it is released, once per test run.
func buildStatic(t *testing.T) string { return static.Get(t) }

// patience is how long a test waits for what takes milliseconds on an
// idle machine (proctest.Patience).
const patience = proctest.Patience

// waitHealthy waits for the health endpoint at addr to answer 200,
// failing the test with the process's output if it does not.
func waitHealthy(t *testing.T, addr string, out fmt.Stringer) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for proctest.Health(addr) != 200 {
		if time.Now().After(deadline) {
			t.Fatalf("not healthy in %v:\n%s", patience, out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// otelstepProcess is the built binary running on a config.
type otelstepProcess = proctest.Process

// lockedOut is a process's output, written by exec's copying goroutine.
type lockedOut = proctest.Output

// startOtelstep runs bin --config cfgPath with env added to the test's,
// waits until healthAddr answers 200, and kills the process at the test's
// end if it still runs.
func startOtelstep(t *testing.T, bin, cfgPath, healthAddr string, env ...string) *otelstepProcess {
	t.Helper()
	return proctest.Start(t, bin, cfgPath, healthAddr, env...)
}

// assertNoToken fails the test if the token is in any file under dir but
// the config (which names only the variable) or in log.
func assertNoToken(t *testing.T, dir, cfgPath, log string) {
	t.Helper()
	proctest.AssertNoToken(t, testToken, dir, cfgPath, log)
}

// freePort returns a loopback host:port nothing listens on, for the binary
// under test to bind, from below the ephemeral range and never handed out
// twice in one test binary (see bench.Ports).
func freePort(t *testing.T) string {
	t.Helper()
	p, err := ports.Take(1)
	if err != nil {
		t.Fatal(err)
	}
	return p[0]
}

var ports bench.Ports

// tokenResource is the resource processor that stamps the token as the
// Authorization attribute, the part every written test config shares.
const tokenResource = `processors:
  resource:
    attributes:
    - key: Authorization
      value: ${env:OTEL_TOKEN}
      action: upsert
`

// jsonlConfig is a config of one traces pipeline: the OTLP receiver with
// protocols (the YAML under its protocols key, indented six spaces), the
// token stamped, into the JSONL file jsonl; the health endpoint at health;
// service (indented two spaces, such as a telemetry section) added to the
// service section.
func jsonlConfig(health, protocols, jsonl, service string) string {
	return `extensions:
  health_check:
    endpoint: ` + health + `
receivers:
  otlp:
    protocols:
` + protocols + tokenResource + `exporters:
  file/traces:
    path: ` + jsonl + `
service:
  extensions: [health_check]
` + service + `  pipelines:
    traces:
      receivers: [otlp]
      processors: [resource]
      exporters: [file/traces]
`
}

// writeConfig writes cfg as dir/collector.yaml and returns its path.
func writeConfig(t *testing.T, dir, cfg string) string {
	t.Helper()
	path := filepath.Join(dir, "collector.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// backend is the fake OTLP/HTTP backend behind a routing proxy: it answers
// 200 to everything, and seen counts a resource without the Authorization
// attribute as dropped, as the real proxy silently does.
type backend struct{ *fakebackend.Backend }

func newBackend(t *testing.T) *backend { return &backend{fakebackend.New(t)} }

// seen is what a backend received, as the routing proxy sees it.
type seen struct {
	metrics   []*metricspb.ResourceMetrics
	spans     map[string]bool // by name
	logs      map[string]bool // by string body
	resources []*resourcepb.Resource
	// resourceSignals[i] is the signal resources[i] came in.
	resourceSignals []string
	// dropped counts resources without the token's attribute; badHeader
	// requests without the token's header.
	dropped, badHeader, requests int
	// canon counts every resource-level message received (ResourceMetrics,
	// ResourceSpans, ResourceLogs) in canonical form, to compare what two
	// backends received.
	canon map[string]int
}

func (b *backend) seen() *seen {
	s := &seen{spans: map[string]bool{}, logs: map[string]bool{}, canon: map[string]int{}}
	for _, r := range b.Requests() {
		s.requests++
		if r.Header.Get("Authorization") != "Bearer "+testToken {
			s.badHeader++
		}
		if r.Status != 200 {
			continue
		}
		check := func(res *resourcepb.Resource, sig string, m proto.Message) {
			s.resources = append(s.resources, res)
			s.resourceSignals = append(s.resourceSignals, sig)
			if attr(res, "Authorization") != testToken {
				s.dropped++
			}
			s.canon[sig+"\x00"+canonical(m)]++
		}
		for _, rm := range r.Metrics.GetResourceMetrics() {
			check(rm.Resource, "metrics", rm)
			s.metrics = append(s.metrics, rm)
		}
		for _, rs := range r.Traces.GetResourceSpans() {
			check(rs.Resource, "traces", rs)
			for _, sp := range fakebackend.Spans([]*tracepb.ResourceSpans{rs}) {
				s.spans[sp.Name] = true
			}
		}
		for _, rl := range r.Logs.GetResourceLogs() {
			check(rl.Resource, "logs", rl)
			for _, lr := range fakebackend.LogRecords([]*logspb.ResourceLogs{rl}) {
				s.logs[lr.Body.GetStringValue()] = true
			}
		}
	}
	return s
}

// canonical is m with its resource's attributes sorted by key (the order
// an attribute was stamped in does not matter to the backend), as
// deterministic protobuf.
func canonical(m proto.Message) string {
	m = proto.Clone(m)
	type withResource interface{ GetResource() *resourcepb.Resource }
	if r := m.(withResource).GetResource(); r != nil {
		sort.Slice(r.Attributes, func(i, j int) bool { return r.Attributes[i].Key < r.Attributes[j].Key })
	}
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(data)
}

func attr(r *resourcepb.Resource, key string) string {
	for _, kv := range r.GetAttributes() {
		if kv.Key == key {
			return kv.Value.GetStringValue()
		}
	}
	return ""
}

func pageServer(t *testing.T, file string) *httptest.Server {
	page, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write(page)
	}))
	t.Cleanup(s.Close)
	return s
}

// familyNames lists the OTLP metric names a page must produce: one per
// family (histogram and summary series fold into their family), with the
// config's vllm: -> vllm_ rename applied.
func familyNames(t *testing.T, file string) map[string]bool {
	page, _ := os.ReadFile(file)
	p, err := textparse.New(page, "text/plain; version=0.0.4", labels.NewSymbolTable(), textparse.ParserOptions{})
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]string{}
	names := map[string]bool{}
	for {
		e, err := p.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch e {
		case textparse.EntryType:
			n, typ := p.Type()
			types[string(n)] = string(typ)
		case textparse.EntrySeries:
			var ls labels.Labels
			p.Labels(&ls)
			name := ls.Get("__name__")
			for _, suf := range []string{"_bucket", "_sum", "_count"} {
				if base, ok := strings.CutSuffix(name, suf); ok && (types[base] == "histogram" || types[base] == "summary") {
					name = base
				}
			}
			names[strings.Replace(name, ":", "_", 1)] = true
		}
	}
	return names
}

func TestEndToEnd(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	vllm := pageServer(t, "testdata/vllm.txt")
	node := pageServer(t, "testdata/node.txt")
	be := newBackend(t)

	grpcAddr, httpAddr, healthAddr := freePort(t), freePort(t), freePort(t)
	deadAddr := freePort(t) // dcgm is down: it must not stop the others
	cfg, _ := os.ReadFile("testdata/collector-v1.yaml")
	r := strings.NewReplacer(
		"localhost:8000", strings.TrimPrefix(vllm.URL, "http://"),
		"localhost:9100", strings.TrimPrefix(node.URL, "http://"),
		"localhost:9400", deadAddr,
		"0.0.0.0:4317", grpcAddr, "0.0.0.0:4318", httpAddr, "0.0.0.0:13133", healthAddr,
		"https://otlp.example.com", be.URL(),
		"/remote/jobs/gym-job-20260921T100000Z-abc123/scicode/otel", filepath.Join(dir, "job", "otel"),
	)
	jobByInstance.Store(strings.TrimPrefix(vllm.URL, "http://"), "vllm-policy")
	jobByInstance.Store(strings.TrimPrefix(node.URL, "http://"), "node")
	jobByInstance.Store(deadAddr, "dcgm")
	cfgPath := filepath.Join(dir, "collector.yaml")
	if err := os.WriteFile(cfgPath, []byte(r.Replace(string(cfg))), 0o644); err != nil {
		t.Fatal(err)
	}

	o := startOtelstep(t, bin, cfgPath, healthAddr, "OTEL_TOKEN="+testToken, "SLURM_JOB_ID=12345")
	stderr := &o.Out

	ctx := context.Background()
	res := sdkresource.NewSchemaless(attribute.String("service.name", "gym-driver"))
	// Traces over HTTP/protobuf with the real SDK exporter.
	texp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpoint(httpAddr), otlptracehttp.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(texp), sdktrace.WithResource(res))
	const nSpans, nLogs = 40, 30
	tr := tp.Tracer("e2e")
	for i := range nSpans {
		_, sp := tr.Start(ctx, fmt.Sprintf("span-%d", i))
		sp.End()
	}
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatalf("trace export: %v", err)
	}
	// Logs over gRPC.
	lexp, err := otlploggrpc.New(ctx, otlploggrpc.WithEndpoint(grpcAddr), otlploggrpc.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(sdklog.NewBatchProcessor(lexp)), sdklog.WithResource(res))
	lg := lp.Logger("e2e")
	for i := range nLogs {
		var rec otellog.Record
		rec.SetBody(attribute.StringValue(fmt.Sprintf("log-%d", i)))
		rec.SetSeverity(otellog.SeverityInfo)
		lg.Emit(ctx, rec)
	}
	if err := lp.Shutdown(ctx); err != nil {
		t.Fatalf("log export: %v", err)
	}

	// The first scrapes are spread over the first 250ms and batched for
	// 200ms: wait until every target's first scrape reached the backend, so
	// that a second up point can only be the final scrape at SIGTERM.
	var jobs map[string]bool
	wctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := be.WaitContext(wctx, func([]*fakebackend.Request) bool {
		jobs = map[string]bool{}
		for _, rm := range be.Metrics() {
			jobs[jobOf(rm)] = true
		}
		return jobs["vllm-policy"] && jobs["node"] && jobs["dcgm"]
	}); err != nil {
		t.Fatalf("the first scrapes did not reach the backend in %v (jobs seen: %v)", patience, jobs)
	}
	stopAt := time.Now()
	o.Stop(t)

	// The JSONL files.
	otel := filepath.Join(dir, "job", "otel")
	jsonlMetrics := map[string]map[string]bool{} // job -> metric names
	jsonlPoints := 0
	upPoints := map[string]int{}  // job -> points of up
	lastUp := map[string]uint64{} // job -> the latest up point's time
	forLines(t, filepath.Join(otel, "metrics.jsonl"), func(line []byte) {
		req, err := otlpwire.DecodeMetrics(line)
		if err != nil {
			t.Fatalf("metrics.jsonl: %v", err)
		}
		for _, rm := range req.ResourceMetrics {
			collectNames(jsonlMetrics, rm)
			jsonlPoints += points(rm)
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					if m.Name == "up" {
						upPoints[jobOf(rm)] += len(m.GetGauge().GetDataPoints())
						for _, p := range m.GetGauge().GetDataPoints() {
							lastUp[jobOf(rm)] = max(lastUp[jobOf(rm)], p.TimeUnixNano)
						}
					}
				}
			}
		}
	})
	jsonlSpans, jsonlLogs := map[string]bool{}, map[string]bool{}
	forLines(t, filepath.Join(otel, "traces.jsonl"), func(line []byte) {
		req, err := otlpwire.DecodeTraces(line)
		if err != nil {
			t.Fatalf("traces.jsonl: %v", err)
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					jsonlSpans[sp.Name] = true
					if len(sp.TraceId) != 16 || len(sp.SpanId) != 8 {
						t.Errorf("span %s ids: %x %x", sp.Name, sp.TraceId, sp.SpanId)
					}
				}
			}
		}
	})
	forLines(t, filepath.Join(otel, "logs.jsonl"), func(line []byte) {
		req, err := otlpwire.DecodeLogs(line)
		if err != nil {
			t.Fatalf("logs.jsonl: %v", err)
		}
		for _, rl := range req.ResourceLogs {
			for _, sl := range rl.ScopeLogs {
				for _, lr := range sl.LogRecords {
					jsonlLogs[lr.Body.GetStringValue()] = true
				}
			}
		}
	})

	backendMetrics := map[string]map[string]bool{}
	backendPoints := 0
	got := be.seen()
	for _, rm := range got.metrics {
		collectNames(backendMetrics, rm)
		backendPoints += points(rm)
	}
	for job, file := range map[string]string{"vllm-policy": "testdata/vllm.txt", "node": "testdata/node.txt"} {
		for name := range familyNames(t, file) {
			if !jsonlMetrics[job][name] {
				t.Errorf("job %s: metric %s missing from metrics.jsonl", job, name)
			}
			if !backendMetrics[job][name] {
				t.Errorf("job %s: metric %s missing at the backend", job, name)
			}
		}
		for _, syn := range []string{"up", "scrape_duration_seconds", "scrape_samples_scraped"} {
			if !jsonlMetrics[job][syn] || !backendMetrics[job][syn] {
				t.Errorf("job %s: synthetic %s missing", job, syn)
			}
		}
	}
	// The first scrape is at start (the test waited for it), the final one
	// at SIGTERM: an up point stamped after the signal. (A regular scrape
	// may fall in between: targets are spread over their 15 s interval.)
	for _, job := range []string{"vllm-policy", "node", "dcgm"} {
		if upPoints[job] < 2 || lastUp[job] < uint64(stopAt.UnixNano()) {
			t.Errorf("job %s: %d up points, the latest at %v; want the first scrape and a final one after SIGTERM at %v",
				job, upPoints[job], time.Unix(0, int64(lastUp[job])), stopAt)
		}
	}
	if !jsonlMetrics["dcgm"]["up"] {
		t.Error("the down dcgm target has no up series")
	}
	if jsonlPoints != backendPoints || jsonlPoints == 0 {
		t.Errorf("points: %d in metrics.jsonl, %d at the backend", jsonlPoints, backendPoints)
	}
	for i := range nSpans {
		n := fmt.Sprintf("span-%d", i)
		if !jsonlSpans[n] || !got.spans[n] {
			t.Errorf("%s: in jsonl %v, at backend %v", n, jsonlSpans[n], got.spans[n])
		}
	}
	for i := range nLogs {
		n := fmt.Sprintf("log-%d", i)
		if !jsonlLogs[n] || !got.logs[n] {
			t.Errorf("%s: in jsonl %v, at backend %v", n, jsonlLogs[n], got.logs[n])
		}
	}
	if got.dropped != 0 || got.badHeader != 0 {
		t.Errorf("backend dropped %d resources without Authorization; %d requests with a bad header", got.dropped, got.badHeader)
	}
	want := map[string]string{"service.name": "my-registered-service", "user": "someone", "run_id": "gym-job-20260921T100000Z-abc123",
		"slurm_job_id": "12345", "benchmark": "scicode", "cluster": "cluster-a", "model": "/checkpoint", "Authorization": testToken}
	for _, res := range got.resources {
		for k, v := range want {
			if got := attr(res, k); got != v {
				t.Errorf("resource attribute %s = %q, want %q", k, got, v)
				break
			}
		}
		for _, kv := range res.Attributes {
			if kv.Key == "slurm_job_id" {
				if _, ok := kv.Value.Value.(*commonpb.AnyValue_StringValue); !ok {
					t.Errorf("slurm_job_id is %T, want a string", kv.Value.Value)
				}
			}
		}
	}
	assertNoToken(t, dir, cfgPath, stderr.String())
	if !strings.Contains(stderr.String(), "level=DEBUG") {
		t.Error("debug level from the config was not applied")
	}
	t.Logf("backend: %d requests, %d resources, %d points; jsonl: %d points", got.requests, len(got.resources), backendPoints, jsonlPoints)
	checkReport(t, filepath.Join(dir, "job"), testToken, nSpans, nLogs)
	checkReplay(t, otel, be)
}

func forLines(t *testing.T, path string, fn func([]byte)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	n := 0
	for sc.Scan() {
		n++
		fn(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Errorf("%s is empty", path)
	}
}

func collectNames(into map[string]map[string]bool, rm *metricspb.ResourceMetrics) {
	// service.name (the job) is upserted by the config's resource
	// processor, so the job is told by service.instance.id.
	job := jobOf(rm)
	if into[job] == nil {
		into[job] = map[string]bool{}
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			into[job][m.Name] = true
		}
	}
}

var jobByInstance sync.Map // instance -> job, set by TestEndToEnd

func jobOf(rm *metricspb.ResourceMetrics) string {
	inst := ""
	for _, kv := range rm.Resource.GetAttributes() {
		if kv.Key == "service.instance.id" {
			inst = kv.Value.GetStringValue()
		}
	}
	if j, ok := jobByInstance.Load(inst); ok {
		return j.(string)
	}
	return inst
}

func points(rm *metricspb.ResourceMetrics) int {
	n := 0
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case *metricspb.Metric_Gauge:
				n += len(d.Gauge.DataPoints)
			case *metricspb.Metric_Sum:
				n += len(d.Sum.DataPoints)
			case *metricspb.Metric_Histogram:
				n += len(d.Histogram.DataPoints)
			case *metricspb.Metric_Summary:
				n += len(d.Summary.DataPoints)
			}
		}
	}
	return n
}
