package replay

import (
	"bytes"
	"context"
	"fmt"
	"github.com/otelstep/otelstep/internal/fakebackend"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/otelstep/otelstep/otlpwire"
	"github.com/otelstep/otelstep/pipeline"
	"github.com/otelstep/otelstep/resource"
	"github.com/otelstep/otelstep/sink"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

const token = "replay-Test-Token-91c2e" // must never be printed

// fakeBackend is replay's test backend (internal/fakebackend): it wants
// gzip protobuf (else 415), and view checks the header and the
// Authorization attribute on every resource and counts spans by name.
// answer, when set, decides the response to request n (1-based) before it
// is answered: a status other than 200 leaves the request out of what view
// counts but requests, times and headers; < 0 says answer wrote the
// response.
type fakeBackend struct {
	*fakebackend.Backend
	mu     sync.Mutex
	answer func(n int, names []string, w http.ResponseWriter) int
}

func newBackend() *fakeBackend {
	fb, err := fakebackend.Start("127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	b := &fakeBackend{Backend: fb}
	fb.Answer(b.reply)
	return b
}

func wantGzipProtobuf(r *fakebackend.Request) bool {
	return r.Header.Get("Content-Encoding") == "gzip" && r.Header.Get("Content-Type") == "application/x-protobuf"
}

func (b *fakeBackend) reply(r *fakebackend.Request) fakebackend.Reply {
	if !wantGzipProtobuf(r) {
		return fakebackend.Reply{Status: http.StatusUnsupportedMediaType, ContentType: "text/plain", Body: []byte("want gzip protobuf\n")}
	}
	answer := b.answer
	if answer == nil {
		return fakebackend.Reply{}
	}
	var names []string
	for _, sp := range fakebackend.Spans(r.Traces.GetResourceSpans()) {
		names = append(names, sp.Name)
	}
	rec := httptest.NewRecorder()
	code := answer(r.N, names, rec)
	if code == http.StatusOK && rec.Body.Len() == 0 {
		return fakebackend.Reply{}
	}
	if code < 0 {
		code = rec.Code
	}
	return fakebackend.Reply{Status: code, RetryAfter: rec.Header().Get("Retry-After"), ContentType: rec.Header().Get("Content-Type"), Body: rec.Body.Bytes()}
}

// backendView is what a fakeBackend received.
type backendView struct {
	requests  int
	paths     map[string]int
	spans     map[string]int // span name -> times received
	logs      int
	points    int
	resources int
	badHeader int
	badAttr   int
	canon     map[string]int
	times     []time.Time
	headers   []http.Header
	order     []string // span names in the order they arrived
}

func (b *fakeBackend) view() *backendView { return b.viewSince(0) }

// viewSince is the view of the requests after the first n.
func (b *fakeBackend) viewSince(n int) *backendView {
	v := &backendView{paths: map[string]int{}, spans: map[string]int{}, canon: map[string]int{}}
	for _, r := range b.Requests()[n:] {
		if r.DecodeErr != nil || !wantGzipProtobuf(r) {
			continue
		}
		v.requests++
		v.times = append(v.times, r.At)
		v.headers = append(v.headers, r.Header)
		if r.Status != http.StatusOK {
			continue
		}
		v.paths[r.Path]++
		if r.Header.Get("Authorization") != "Bearer "+token {
			v.badHeader++
		}
		for _, res := range r.Resources() {
			v.resources++
			if !fakebackend.StampedOnce(res, token) {
				v.badAttr++
			}
		}
		for _, m := range r.Metrics.GetResourceMetrics() {
			v.canon[canonical(m)]++
		}
		for _, m := range r.Traces.GetResourceSpans() {
			v.canon[canonical(m)]++
		}
		for _, m := range r.Logs.GetResourceLogs() {
			v.canon[canonical(m)]++
		}
		for _, sp := range fakebackend.Spans(r.Traces.GetResourceSpans()) {
			v.spans[sp.Name]++
			v.order = append(v.order, sp.Name)
		}
		v.logs += len(fakebackend.LogRecords(r.Logs.GetResourceLogs()))
		v.points += fakebackend.DataPoints(r.Metrics.GetResourceMetrics())
	}
	return v
}

// canonical is m with its resource attributes sorted, deterministic
// protobuf: two deliveries of the same data compare equal.
func canonical(m proto.Message) string {
	m = proto.Clone(m)
	type withResource interface{ GetResource() *resourcepb.Resource }
	if r := m.(withResource).GetResource(); r != nil {
		sort.SliceStable(r.Attributes, func(i, j int) bool { return r.Attributes[i].Key < r.Attributes[j].Key })
	}
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(data)
}

func (b *fakeBackend) snapshot() (requests int, spans map[string]int) {
	v := b.view()
	return v.requests, v.spans
}

func str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// traceLine is one export request line holding one span named name.
func traceLine(name string) []byte {
	rs := []*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "svc")}},
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{
			Name: name, TraceId: bytes.Repeat([]byte{1}, 16), SpanId: []byte{1, 2, 3, 4, 5, 6, 7, 8},
			StartTimeUnixNano: 1, EndTimeUnixNano: 2,
		}}}},
	}}
	return otlpwire.AppendTraces(nil, pipeline.TracesFromProto(rs))
}

// writeTraces writes n lines of spans prefix-0 .. prefix-(n-1).
func writeTraces(t *testing.T, path, prefix string, n int) {
	t.Helper()
	var buf bytes.Buffer
	for i := range n {
		buf.Write(traceLine(fmt.Sprintf("%s-%d", prefix, i)))
		buf.WriteByte('\n')
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func opts(srv *fakeBackend, paths ...string) Options {
	var out bytes.Buffer
	return Options{
		Endpoint: srv.URL(), Token: token, Paths: paths, Progress: &out,
		Retry: sink.RetryOptions{InitialInterval: 5 * time.Millisecond, MaxInterval: 20 * time.Millisecond, MaxElapsedTime: 5 * time.Second},
	}
}

func mustRun(t *testing.T, ctx context.Context, o Options) *Summary {
	t.Helper()
	s, err := Run(ctx, o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return s
}

func progressOf(o Options) string { return o.Progress.(*bytes.Buffer).String() }

// wantEach requires every span prefix-0..n-1 exactly once.
func wantEach(t *testing.T, spans map[string]int, prefix string, n int) {
	t.Helper()
	missing, doubled := 0, 0
	for i := range n {
		switch c := spans[fmt.Sprintf("%s-%d", prefix, i)]; {
		case c == 0:
			missing++
		case c > 1:
			doubled++
		}
	}
	if missing > 0 || doubled > 0 {
		t.Errorf("%s: %d of %d spans never arrived, %d arrived more than once", prefix, missing, n, doubled)
	}
}

// TestFixturesReplay replays files the collector wrote (which carry its own
// run's token) and requires what arrives to be the decoded lines with the
// new token stamped, and nothing else: the same resources, points, spans
// and log records.
func TestFixturesReplay(t *testing.T) {
	be := newBackend()
	srv := be
	defer srv.Close()
	files, _ := filepath.Glob("testdata/*.peer*.jsonl")
	if len(files) != 3 {
		t.Fatalf("want the three collector fixtures, got %v", files)
	}
	want := map[string]int{}
	wantItems := [3]int64{}
	for _, f := range files {
		data, _ := os.ReadFile(f)
		for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
			sig, _ := sniff(l)
			b := &pipeline.Batch{Signal: sig}
			switch sig {
			case pipeline.Metrics:
				req, err := otlpwire.DecodeMetrics(l)
				if err != nil {
					t.Fatal(err)
				}
				b.Metrics = req.ResourceMetrics
			case pipeline.Traces:
				req, err := otlpwire.DecodeTraces(l)
				if err != nil {
					t.Fatal(err)
				}
				b.Traces = pipeline.TracesFromProto(req.ResourceSpans)
			case pipeline.Logs:
				req, err := otlpwire.DecodeLogs(l)
				if err != nil {
					t.Fatal(err)
				}
				b.Logs = pipeline.LogsFromProto(req.ResourceLogs)
			}
			resource.Stamp(b, "Authorization", token)
			wantItems[sig] += int64(pipeline.CountItems(b))
			for _, m := range b.Metrics {
				want[canonical(m)]++
			}
			rss, err := pipeline.TracesProto(b.Traces)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range rss {
				want[canonical(m)]++
			}
			rls, err := pipeline.LogsProto(b.Logs)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range rls {
				want[canonical(m)]++
			}
		}
	}
	o := opts(srv, "testdata")
	o.StateDir = t.TempDir()
	s := mustRun(t, context.Background(), o)
	if !s.OK() {
		t.Fatalf("not OK: %s\n%s", s.Reason(), progressOf(o))
	}
	v := be.view()
	if v.badHeader != 0 || v.badAttr != 0 {
		t.Errorf("%d requests without the Bearer header, %d resources without exactly one new Authorization attribute", v.badHeader, v.badAttr)
	}
	for k, n := range want {
		if v.canon[k] != n {
			t.Errorf("a resource message in the files arrived %d times, want %d", v.canon[k], n)
		}
	}
	if len(v.canon) != len(want) {
		t.Errorf("%d distinct resource messages arrived, want %d", len(v.canon), len(want))
	}
	for sig, n := range wantItems {
		if s.Signals[sig].Items != n || n == 0 {
			t.Errorf("%s: summary says %d items sent, the files hold %d", pipeline.Signal(sig), s.Signals[sig].Items, n)
		}
	}
	if int64(v.points) != wantItems[pipeline.Metrics] {
		t.Errorf("backend got %d points, want %d", v.points, wantItems[pipeline.Metrics])
	}
	var sum bytes.Buffer
	s.Write(&sum)
	if strings.Contains(sum.String()+progressOf(o), token) {
		t.Error("the token was printed")
	}
}

func TestBackendFailsThenRecovers(t *testing.T) {
	be := newBackend()
	be.answer = func(n int, _ []string, w http.ResponseWriter) int {
		switch n {
		case 1:
			w.Header().Set("Retry-After", "1")
			return 503
		case 2:
			return 429
		case 3:
			return 502
		}
		return 200
	}
	srv := be
	defer srv.Close()
	f := filepath.Join(t.TempDir(), "traces.jsonl")
	writeTraces(t, f, "s", 20)
	o := opts(srv, f)
	o.Concurrency = 1 // the answers above are in order
	s := mustRun(t, context.Background(), o)
	if !s.OK() {
		t.Fatalf("not OK: %s", s.Reason())
	}
	_, spans := be.snapshot()
	wantEach(t, spans, "s", 20)
	if got := s.Signals[pipeline.Traces].Retries; got != 3 {
		t.Errorf("%d retries, want 3", got)
	}
	gap := be.view().times[1].Sub(be.view().times[0])
	if gap < 900*time.Millisecond {
		t.Errorf("retried %v after a 503 with Retry-After: 1", gap)
	}
}

func TestBackendDownPastRetryBudget(t *testing.T) {
	be := newBackend()
	be.answer = func(int, []string, http.ResponseWriter) int { return 503 }
	srv := be
	defer srv.Close()
	f := filepath.Join(t.TempDir(), "traces.jsonl")
	writeTraces(t, f, "s", 5)
	o := opts(srv, f)
	o.Retry.MaxElapsedTime = 100 * time.Millisecond
	s := mustRun(t, context.Background(), o)
	if s.OK() || s.Err == nil || !strings.Contains(s.Err.Error(), "503") {
		t.Fatalf("want a failure naming the 503, got OK=%v err=%v", s.OK(), s.Err)
	}
	// Nothing was done: a later run sends everything.
	be.answer = nil
	s = mustRun(t, context.Background(), opts(srv, f))
	if !s.OK() {
		t.Fatal(s.Reason())
	}
	_, spans := be.snapshot()
	wantEach(t, spans, "s", 5)
}

// TestStopAndResume stops a replay in the middle, with requests in flight
// completing out of order, then resumes it: every span arrives exactly once.
func TestStopAndResume(t *testing.T) {
	const n = 300
	for round := range 3 {
		be := newBackend()
		ctx, cancel := context.WithCancel(context.Background())
		stopAt := 20 + round*37
		be.answer = func(k int, _ []string, _ http.ResponseWriter) int {
			time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
			if k == stopAt {
				cancel()
			}
			return 200
		}
		srv := be
		f := filepath.Join(t.TempDir(), "traces.jsonl")
		writeTraces(t, f, "s", n)
		o := opts(srv, f)
		o.BatchBytes = 1 // a request per line
		o.Concurrency = 4
		s := mustRun(t, ctx, o)
		if !s.Stopped || s.OK() {
			t.Fatalf("round %d: want a stopped, not-OK summary", round)
		}
		reqs, spans := be.snapshot()
		if reqs >= n {
			t.Fatalf("round %d: the stop did not stop anything (%d requests)", round, reqs)
		}
		sent := 0
		for _, c := range spans {
			sent += c
		}
		s2 := mustRun(t, context.Background(), o)
		if !s2.OK() {
			t.Fatalf("round %d: resume: %s", round, s2.Reason())
		}
		if s2.AlreadySent+s2.Signals[pipeline.Traces].Lines != n {
			t.Errorf("round %d: resume read %d lines and skipped %d as sent, want %d in all",
				round, s2.Signals[pipeline.Traces].Lines, s2.AlreadySent, n)
		}
		_, spans = be.snapshot()
		wantEach(t, spans, "s", n)
		t.Logf("round %d: stopped after %d spans, resumed with %d lines", round, sent, s2.Signals[pipeline.Traces].Lines)
		cancel()
		srv.Close()
	}
}

// TestResumeSkipsDoneRanges writes a checkpoint with gaps, as requests that
// completed out of order leave it, and requires the resumed replay to send
// exactly the lines in the gaps and after.
func TestResumeSkipsDoneRanges(t *testing.T) {
	be := newBackend()
	srv := be
	defer srv.Close()
	dir := t.TempDir()
	f := filepath.Join(dir, "traces.jsonl")
	writeTraces(t, f, "s", 10)
	data, _ := os.ReadFile(f)
	var offs []int64 // start of each line, and the end
	offs = append(offs, 0)
	for i, c := range data {
		if c == '\n' {
			offs = append(offs, int64(i+1))
		}
	}
	o := opts(srv, f)
	r, err := prepare(o)
	if err != nil {
		t.Fatal(err)
	}
	tr := r.files[0].tr
	for _, i := range []int{0, 1, 3, 5, 6} { // line i+1 done
		tr.done(span{Start: offs[i], End: offs[i+1], FirstLine: i + 1, Lines: 1}, 0)
	}
	if err := tr.flush(); err != nil {
		t.Fatal(err)
	}
	s := mustRun(t, context.Background(), o)
	if !s.OK() {
		t.Fatal(s.Reason())
	}
	_, spans := be.snapshot()
	for i := range 10 {
		want := 1
		if i == 0 || i == 1 || i == 3 || i == 5 || i == 6 {
			want = 0
		}
		if spans[fmt.Sprintf("s-%d", i)] != want {
			t.Errorf("line %d: sent %d times, want %d", i+1, spans[fmt.Sprintf("s-%d", i)], want)
		}
	}
	if s.AlreadySent != 5 {
		t.Errorf("AlreadySent = %d, want 5", s.AlreadySent)
	}
}

func TestRerunSendsNothingAndFromStart(t *testing.T) {
	be := newBackend()
	srv := be
	defer srv.Close()
	dir := t.TempDir()
	f := filepath.Join(dir, "traces.jsonl")
	writeTraces(t, f, "s", 7)
	o := opts(srv, dir)
	if s := mustRun(t, context.Background(), o); !s.OK() {
		t.Fatal(s.Reason())
	}
	r1, _ := be.snapshot()
	s := mustRun(t, context.Background(), o)
	r2, spans := be.snapshot()
	if !s.OK() || r2 != r1 || s.AlreadySent != 7 {
		t.Errorf("rerun: OK=%v, %d more requests, %d lines already sent; want true, 0, 7", s.OK(), r2-r1, s.AlreadySent)
	}
	wantEach(t, spans, "s", 7)
	// The file grows (the job wrote more): only the new lines go.
	fh, _ := os.OpenFile(f, os.O_APPEND|os.O_WRONLY, 0)
	fh.Write(append(traceLine("late"), '\n'))
	fh.Close()
	mustRun(t, context.Background(), o)
	_, spans = be.snapshot()
	if spans["late"] != 1 || spans["s-0"] != 1 {
		t.Errorf("after growth: late sent %d times, s-0 %d times; want 1 and 1", spans["late"], spans["s-0"])
	}
	// --from-start sends everything again.
	o.FromStart = true
	if s := mustRun(t, context.Background(), o); !s.OK() || s.Signals[pipeline.Traces].Lines != 8 {
		t.Errorf("from start: OK=%v, %d lines", s.OK(), s.Signals[pipeline.Traces].Lines)
	}
	_, spans = be.snapshot()
	if spans["s-3"] != 2 || spans["late"] != 2 {
		t.Errorf("from start: s-3 sent %d times, late %d; want 2 and 2", spans["s-3"], spans["late"])
	}
	// Another endpoint has its own checkpoint.
	be2 := newBackend()
	srv2 := be2
	defer srv2.Close()
	o2 := opts(srv2, dir)
	mustRun(t, context.Background(), o2)
	_, spans = be2.snapshot()
	wantEach(t, spans, "s", 7)
}

// Corrupt lines are reported and skipped; a last line with no newline yet
// (still being written) is neither: it is left for the next run, which
// sends it once it is whole. A run over lines an earlier run skipped is not
// OK (exit 1): they were never sent.
func TestCorruptAndTruncatedLines(t *testing.T) {
	be := newBackend()
	srv := be
	defer srv.Close()
	dir := t.TempDir()
	f := filepath.Join(dir, "traces.jsonl")
	var buf bytes.Buffer
	for _, l := range [][]byte{
		traceLine("a"), traceLine("b"),
		[]byte(`{"resourceSpans":[{"resource":{"attributes":[{"key":"k","value":{"stringValue":"v"}}]},"scopeSpans":[{"spans":[{"name":`), // line 3: corrupt
		traceLine("c"),
		[]byte(`this is not json`), // line 5
		{},                         // line 6: blank
		traceLine("d"),
	} {
		buf.Write(l)
		buf.WriteByte('\n')
	}
	full := traceLine("e")
	buf.Write(full[:len(full)/2]) // line 8: being written
	os.WriteFile(f, buf.Bytes(), 0o644)
	o := opts(srv, f)
	s := mustRun(t, context.Background(), o)
	if s.OK() {
		t.Fatal("OK with corrupt lines")
	}
	_, spans := be.snapshot()
	for _, n := range []string{"a", "b", "c", "d"} {
		if spans[n] != 1 {
			t.Errorf("span %s sent %d times, want 1", n, spans[n])
		}
	}
	if len(spans) != 4 {
		t.Errorf("spans sent: %v", spans)
	}
	want := []string{f + ":3: corrupt: ", f + ":5: not an OTLP export request"}
	if len(s.Problems) != len(want) {
		t.Fatalf("problems %q, want %d", s.Problems, len(want))
	}
	sort.Strings(s.Problems)
	for i, w := range want {
		if !strings.HasPrefix(s.Problems[i], w) {
			t.Errorf("problem %q, want prefix %q", s.Problems[i], w)
		}
		if !strings.Contains(progressOf(o), w) {
			t.Errorf("%q was not reported as found", w)
		}
	}
	if s.Failures() != 2 || !strings.Contains(s.Reason(), "2 lines were skipped") || s.Pending != 1 {
		t.Errorf("failures %d, reason %q, pending %d", s.Failures(), s.Reason(), s.Pending)
	}
	if !strings.Contains(progressOf(o), f+":8: the last line has no newline yet") {
		t.Errorf("the line being written was not reported: %s", progressOf(o))
	}
	// The next run sends nothing but says lines were skipped before: not OK.
	r1, _ := be.snapshot()
	o = opts(srv, f)
	s = mustRun(t, context.Background(), o)
	r2, _ := be.snapshot()
	if r2 != r1 || s.OK() || s.SkippedEarlier != 2 || !strings.Contains(s.Reason(), "2 lines were skipped by earlier runs") || s.Pending != 1 {
		t.Errorf("rerun: %d requests, OK=%v, skipped earlier %d, reason %q, pending %d; want 0, false, 2, pending 1", r2-r1, s.OK(), s.SkippedEarlier, s.Reason(), s.Pending)
	}
	// The writer finishes line 8 and writes a ninth: the next run sends
	// both, once.
	fh, err := os.OpenFile(f, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.Write(full[len(full)/2:])
	fh.Write([]byte("\n"))
	fh.Write(traceLine("g"))
	fh.Write([]byte("\n"))
	fh.Close()
	s = mustRun(t, context.Background(), opts(srv, f))
	_, spans = be.snapshot()
	if spans["e"] != 1 || spans["g"] != 1 || spans["a"] != 1 || s.Pending != 0 || s.Failures() != 0 {
		t.Errorf("after the line was finished: spans %v, pending %d, failures %d", spans, s.Pending, s.Failures())
	}
}

func TestBadRequestSkipsOnlyTheBadLine(t *testing.T) {
	be := newBackend()
	be.answer = func(_ int, names []string, w http.ResponseWriter) int {
		for _, n := range names {
			if n == "poison" {
				w.Header().Set("Content-Type", "text/plain")
				w.WriteHeader(400)
				fmt.Fprint(w, "span name not allowed; you sent Bearer "+token)
				return -1
			}
		}
		return 200
	}
	srv := be
	defer srv.Close()
	f := filepath.Join(t.TempDir(), "traces.jsonl")
	var buf bytes.Buffer
	for i := range 10 {
		name := fmt.Sprintf("s-%d", i)
		if i == 3 {
			name = "poison"
		}
		buf.Write(append(traceLine(name), '\n'))
	}
	os.WriteFile(f, buf.Bytes(), 0o644)
	o := opts(srv, f)
	s := mustRun(t, context.Background(), o)
	_, spans := be.snapshot()
	for i := range 10 {
		want := 1
		if i == 3 {
			want = 0
		}
		if got := spans[fmt.Sprintf("s-%d", i)]; got != want {
			t.Errorf("s-%d sent %d times, want %d", i, got, want)
		}
	}
	if len(s.Problems) != 1 || !strings.HasPrefix(s.Problems[0], f+":4: rejected by the backend: HTTP 400") {
		t.Errorf("problems %q", s.Problems)
	}
	if s.OK() {
		t.Error("OK with a rejected line")
	}
	if strings.Contains(progressOf(o)+strings.Join(s.Problems, ""), token) {
		t.Error("the backend's echo of the token was printed")
	}
}

func TestUnauthorizedStopsTheReplay(t *testing.T) {
	be := newBackend()
	be.answer = func(int, []string, http.ResponseWriter) int { return 401 }
	srv := be
	defer srv.Close()
	f := filepath.Join(t.TempDir(), "traces.jsonl")
	writeTraces(t, f, "s", 50)
	o := opts(srv, f)
	o.BatchBytes = 1
	o.Concurrency = 4
	s := mustRun(t, context.Background(), o)
	if s.Err == nil || !strings.Contains(s.Reason(), "401") {
		t.Fatalf("want an error naming the 401, got %v", s.Err)
	}
	if reqs, _ := be.snapshot(); reqs > 2*o.Concurrency+1 {
		t.Errorf("%d requests after the backend refused the token", reqs)
	}
	be.answer = nil
	mustRun(t, context.Background(), opts(srv, f))
	_, spans := be.snapshot()
	wantEach(t, spans, "s", 50)
}

func TestSignalsDryRunAndStateDir(t *testing.T) {
	be := newBackend()
	srv := be
	defer srv.Close()
	dir := t.TempDir()
	writeTraces(t, filepath.Join(dir, "traces.jsonl"), "s", 4)
	for _, name := range []string{"metrics.peer-gym-v1.jsonl", "logs.peer.jsonl"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, name), data, 0o644)
	}
	os.WriteFile(filepath.Join(dir, "collector.yaml"), []byte("not jsonl"), 0o644)

	o := opts(srv, dir)
	o.DryRun = true
	s := mustRun(t, context.Background(), o)
	if reqs, _ := be.snapshot(); reqs != 0 || !s.OK() {
		t.Fatalf("dry run: %d requests, OK=%v", reqs, s.OK())
	}
	if s.Signals[pipeline.Traces].Items != 4 || s.Signals[pipeline.Metrics].Items == 0 || s.Signals[pipeline.Logs].Items == 0 {
		t.Errorf("dry run counts: %+v", s.Signals)
	}
	if states, _ := filepath.Glob(filepath.Join(dir, ".*")); len(states) != 0 {
		t.Errorf("dry run wrote %v", states)
	}

	o = opts(srv, dir)
	o.Signals = []pipeline.Signal{pipeline.Traces}
	o.StateDir = filepath.Join(t.TempDir(), "state")
	s = mustRun(t, context.Background(), o)
	if !s.OK() {
		t.Fatal(s.Reason())
	}
	paths := fmt.Sprint(be.view().paths)
	if paths != "map[/v1/traces:1]" {
		t.Errorf("--signal traces sent %s", paths)
	}
	if states, _ := filepath.Glob(filepath.Join(dir, ".*")); len(states) != 0 {
		t.Errorf("--state given, but checkpoints beside the files: %v", states)
	}
	// Only the traces file has anything done; the others have no
	// checkpoint yet.
	if states, _ := filepath.Glob(filepath.Join(o.StateDir, "*.json")); len(states) != 1 {
		t.Errorf("want 1 checkpoint in --state, got %v", states)
	}
	// All signals after the traces only: metrics and logs go now, the
	// traces are not sent again.
	o.Signals = nil
	mustRun(t, context.Background(), o)
	if be.view().paths["/v1/metrics"] == 0 || be.view().paths["/v1/logs"] == 0 || be.view().paths["/v1/traces"] != 1 {
		t.Errorf("the full replay after --signal traces sent %v", be.view().paths)
	}
}

// TestSignalFilterOnAMixedFile: lines of a signal left out stay unsent in
// the checkpoint, so a later replay of that signal sends exactly them.
func TestSignalFilterOnAMixedFile(t *testing.T) {
	be := newBackend()
	srv := be
	defer srv.Close()
	f := filepath.Join(t.TempDir(), "mixed.jsonl")
	var buf bytes.Buffer
	logLine := []byte(`{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":{"stringValue":"x"}}]}]}]}`)
	for i := range 12 {
		if i%3 == 2 {
			buf.Write(append(logLine, '\n'))
		} else {
			buf.Write(append(traceLine(fmt.Sprintf("s-%d", i)), '\n'))
		}
	}
	os.WriteFile(f, buf.Bytes(), 0o644)
	o := opts(srv, f)
	o.Signals = []pipeline.Signal{pipeline.Traces}
	s := mustRun(t, context.Background(), o)
	if !s.OK() || s.Signals[pipeline.Traces].Items != 8 || s.Signals[pipeline.Logs].Skipped[reasonFiltered] != 4 {
		t.Fatalf("traces only: %+v", s.Signals)
	}
	o.Signals = nil
	s = mustRun(t, context.Background(), o)
	if !s.OK() || s.Signals[pipeline.Traces].Items != 0 || s.Signals[pipeline.Logs].Items != 4 || s.AlreadySent != 8 {
		t.Errorf("then all: traces %d, logs %d, already sent %d; want 0, 4, 8", s.Signals[pipeline.Traces].Items, s.Signals[pipeline.Logs].Items, s.AlreadySent)
	}
	r1, _ := be.snapshot()
	s = mustRun(t, context.Background(), o)
	if r2, _ := be.snapshot(); r2 != r1 || s.AlreadySent != 12 {
		t.Errorf("third run: %d requests, %d already sent; want 0 and 12", r2-r1, s.AlreadySent)
	}
	if be.view().logs != 4 {
		t.Errorf("%d log records arrived, want 4", be.view().logs)
	}
	for i := range 12 {
		want := 1
		if i%3 == 2 {
			want = 0
		}
		if got := be.view().spans[fmt.Sprintf("s-%d", i)]; got != want {
			t.Errorf("s-%d arrived %d times, want %d", i, got, want)
		}
	}
}

func TestCheckpointOfARewrittenFile(t *testing.T) {
	be := newBackend()
	srv := be
	defer srv.Close()
	f := filepath.Join(t.TempDir(), "traces.jsonl")
	writeTraces(t, f, "s", 3)
	mustRun(t, context.Background(), opts(srv, f))
	writeTraces(t, f, "other", 3) // same length, other content
	_, err := Run(context.Background(), opts(srv, f))
	if err == nil || !strings.Contains(err.Error(), "rewritten") || !strings.Contains(err.Error(), "--from-start") {
		t.Fatalf("want an error saying the file was rewritten, got %v", err)
	}
	writeTraces(t, f, "x", 1) // shorter
	_, err = Run(context.Background(), opts(srv, f))
	if err == nil || !strings.Contains(err.Error(), "rewritten") {
		t.Fatalf("shorter file: %v", err)
	}
}

func TestOptionErrors(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "traces.jsonl")
	writeTraces(t, f, "s", 1)
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Endpoint: "http://x", Paths: []string{f}}, "no ingest token"},
		{Options{Endpoint: "ftp://x", Token: "t", Paths: []string{f}}, "http:// or https://"},
		{Options{Endpoint: "http://x", Token: "t"}, "no PATH"},
		{Options{Endpoint: "http://x", Token: "t", Paths: []string{filepath.Join(dir, "missing.jsonl")}}, "missing.jsonl: no such file"},
		{Options{Endpoint: "http://x", Token: "t", Paths: []string{t.TempDir()}}, "no .jsonl files"},
		{Options{Endpoint: "http://x", Token: "t", Paths: []string{f}, Headers: map[string]string{"authorization": "x"}}, "made from the token"},
	} {
		_, err := Run(context.Background(), c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.o, err, c.want)
		}
	}
}

func TestHeadersSent(t *testing.T) {
	be := newBackend()
	srv := be
	defer srv.Close()
	f := filepath.Join(t.TempDir(), "traces.jsonl")
	writeTraces(t, f, "s", 2)
	o := opts(srv, f)
	o.Headers = map[string]string{"X-Tenant": "gym", "X-Scope-OrgID": "42"}
	mustRun(t, context.Background(), o)
	for _, h := range be.view().headers {
		if h.Get("X-Tenant") != "gym" || h.Get("X-Scope-OrgID") != "42" {
			t.Errorf("headers %v", h)
		}
	}
}

func TestPlainProgress(t *testing.T) {
	be := newBackend()
	be.answer = func(int, []string, http.ResponseWriter) int { time.Sleep(2 * time.Millisecond); return 200 }
	srv := be
	defer srv.Close()
	f := filepath.Join(t.TempDir(), "traces.jsonl")
	writeTraces(t, f, "s", 40)
	o := opts(srv, f)
	o.BatchBytes = 1
	o.Concurrency = 1
	o.ProgressEvery = 5 * time.Millisecond
	mustRun(t, context.Background(), o)
	out := progressOf(o)
	if !strings.Contains(out, "replay: ") || !strings.Contains(out, "lines") || !strings.Contains(out, "ETA") {
		t.Errorf("no progress lines in %q", out)
	}
	if strings.Contains(out, "\r") {
		t.Error("a carriage return in plain progress")
	}
}

func TestTerminalBar(t *testing.T) {
	be := newBackend()
	be.answer = func(int, []string, http.ResponseWriter) int { time.Sleep(2 * time.Millisecond); return 200 }
	srv := be
	defer srv.Close()
	f := filepath.Join(t.TempDir(), "traces.jsonl")
	writeTraces(t, f, "s", 30)
	o := opts(srv, f)
	o.BatchBytes, o.Concurrency = 1, 1
	o.Terminal, o.ProgressEvery = true, 5*time.Millisecond
	mustRun(t, context.Background(), o)
	out := progressOf(o)
	if !strings.Contains(out, "\r\x1b[K[") || !strings.Contains(out, "%") || !strings.Contains(out, "ETA") {
		t.Errorf("no bar redrawn in place: %q", out)
	}
	if !strings.HasSuffix(out, "\r\x1b[K") {
		t.Errorf("the bar is not cleared at the end: %q", out[max(0, len(out)-80):])
	}
}
