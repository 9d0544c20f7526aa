package otlpwire

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/otelstep/otelstep/pipeline"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// ---- fixture helpers ----

type fixtureLine struct {
	file string
	n    int
	data []byte
}

func fixtureLines(t testing.TB) []fixtureLine {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	var out []fixtureLine
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 64<<20)
		n := 0
		for sc.Scan() {
			n++
			line := bytes.TrimSpace(sc.Bytes())
			if len(line) == 0 {
				continue
			}
			out = append(out, fixtureLine{filepath.Base(f), n, append([]byte(nil), line...)})
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		fh.Close()
	}
	return out
}

func generic(t testing.TB, data []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("invalid JSON: %v\n%s", err, data)
	}
	return v
}

// reencode decodes line according to its top-level key and encodes it again.
func reencode(t testing.TB, line []byte, skip ...string) (kind string, out []byte, msg proto.Message) {
	t.Helper()
	switch {
	case bytes.HasPrefix(line, []byte(`{"resourceMetrics"`)):
		req, err := DecodeMetrics(line)
		if err != nil {
			t.Fatal(err)
		}
		return "metrics", AppendMetrics(nil, req.ResourceMetrics, skip...), req
	case bytes.HasPrefix(line, []byte(`{"resourceSpans"`)):
		req, err := DecodeTraces(line)
		if err != nil {
			t.Fatal(err)
		}
		return "traces", AppendTraces(nil, pipeline.TracesFromProto(req.ResourceSpans), skip...), req
	case bytes.HasPrefix(line, []byte(`{"resourceLogs"`)):
		req, err := DecodeLogs(line)
		if err != nil {
			t.Fatal(err)
		}
		return "logs", AppendLogs(nil, pipeline.LogsFromProto(req.ResourceLogs), skip...), req
	}
	t.Fatalf("unknown fixture line: %.80s", line)
	return
}

var idKeys = map[string]bool{"traceId": true, "spanId": true, "parentSpanId": true}

// collectIDs lists "key=value" for every id key in a generic JSON tree.
func collectIDs(v any, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && idKeys[k] {
				*out = append(*out, k+"="+s)
				continue
			}
			collectIDs(e, out)
		}
	case []any:
		for _, e := range x {
			collectIDs(e, out)
		}
	}
}

// protoIDs lists "key=hex" for every non-empty id in a decoded request.
func protoIDs(m proto.Message) []string {
	var out []string
	add := func(k string, id []byte) {
		if len(id) > 0 {
			out = append(out, k+"="+hex.EncodeToString(id))
		}
	}
	exemplars := func(es []*metricspb.Exemplar) {
		for _, e := range es {
			add("spanId", e.SpanId)
			add("traceId", e.TraceId)
		}
	}
	switch r := m.(type) {
	case *coltracepb.ExportTraceServiceRequest:
		for _, rs := range r.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					add("traceId", s.TraceId)
					add("spanId", s.SpanId)
					add("parentSpanId", s.ParentSpanId)
					for _, l := range s.Links {
						add("traceId", l.TraceId)
						add("spanId", l.SpanId)
					}
				}
			}
		}
	case *collogspb.ExportLogsServiceRequest:
		for _, rl := range r.ResourceLogs {
			for _, sl := range rl.ScopeLogs {
				for _, lr := range sl.LogRecords {
					add("traceId", lr.TraceId)
					add("spanId", lr.SpanId)
				}
			}
		}
	case *colmetricspb.ExportMetricsServiceRequest:
		for _, rm := range r.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					switch d := m.Data.(type) {
					case *metricspb.Metric_Gauge:
						for _, p := range d.Gauge.DataPoints {
							exemplars(p.Exemplars)
						}
					case *metricspb.Metric_Sum:
						for _, p := range d.Sum.DataPoints {
							exemplars(p.Exemplars)
						}
					case *metricspb.Metric_Histogram:
						for _, p := range d.Histogram.DataPoints {
							exemplars(p.Exemplars)
						}
					case *metricspb.Metric_ExponentialHistogram:
						for _, p := range d.ExponentialHistogram.DataPoints {
							exemplars(p.Exemplars)
						}
					}
				}
			}
		}
	}
	return out
}

// ---- fixture tests ----

func TestFixtureRoundTrip(t *testing.T) {
	kinds := map[string]int{}
	nids := 0
	for _, fl := range fixtureLines(t) {
		kind, out, msg := reencode(t, fl.data)
		kinds[kind]++
		if !reflect.DeepEqual(generic(t, fl.data), generic(t, out)) {
			t.Errorf("%s:%d: re-encoded %s differs from input\n in: %s\nout: %s", fl.file, fl.n, kind, fl.data, out)
		}
		var want []string
		collectIDs(generic(t, fl.data), &want)
		got := protoIDs(msg)
		sort.Strings(want)
		sort.Strings(got)
		if !reflect.DeepEqual(want, got) {
			t.Errorf("%s:%d: decoded ids %v, file has %v", fl.file, fl.n, got, want)
		}
		nids += len(want)
	}
	if kinds["metrics"] == 0 || kinds["traces"] == 0 || kinds["logs"] == 0 {
		t.Errorf("fixtures do not cover all signals: %v", kinds)
	}
	if nids == 0 {
		t.Error("fixtures contain no ids; id check is vacuous")
	}
}

func TestFixtureNonFinite(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "edge.peer.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var nan, inf, ninf int
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		req, err := DecodeMetrics(line)
		if err != nil {
			t.Fatal(err)
		}
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					if g := m.GetGauge(); g != nil {
						for _, p := range g.DataPoints {
							v := p.GetAsDouble()
							switch {
							case math.IsNaN(v):
								nan++
							case math.IsInf(v, 1):
								inf++
							case math.IsInf(v, -1):
								ninf++
							}
						}
					}
				}
			}
		}
		out := string(AppendMetrics(nil, req.ResourceMetrics))
		for _, s := range []string{`"asDouble":"NaN"`, `"asDouble":"Infinity"`, `"asDouble":"-Infinity"`} {
			if !strings.Contains(out, s) {
				t.Errorf("output lacks %s", s)
			}
		}
	}
	if nan == 0 || inf == 0 || ninf == 0 {
		t.Errorf("edge fixture: NaN=%d +Inf=%d -Inf=%d, want all > 0", nan, inf, ninf)
	}
}

func TestSkipResourceKeys(t *testing.T) {
	for _, fl := range fixtureLines(t) {
		if !bytes.Contains(fl.data, []byte(`"Authorization"`)) {
			continue
		}
		_, out, _ := reencode(t, fl.data)
		if !bytes.Contains(out, []byte("example-ingest-token")) {
			t.Fatalf("%s: token missing without skip; test is vacuous", fl.file)
		}
		_, out, _ = reencode(t, fl.data, "nope", "Authorization")
		if bytes.Contains(out, []byte("example-ingest-token")) || bytes.Contains(out, []byte(`"Authorization"`)) {
			t.Errorf("%s: Authorization attribute not dropped: %s", fl.file, out)
		}
		// Everything else is kept.
		if !bytes.Contains(out, []byte(`"service.name"`)) {
			t.Errorf("%s: other resource attributes lost", fl.file)
		}
		generic(t, out)
	}
	// Skipping every attribute leaves an empty resource, valid JSON.
	rs := []*tracepb.ResourceSpans{{Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{kvStr("a", "1"), kvStr("b", "2")}}}}
	if got, want := string(AppendTraces(nil, pipeline.TracesFromProto(rs), "a", "b")), `{"resourceSpans":[{"resource":{}}]}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if got, want := string(AppendTraces(nil, pipeline.TracesFromProto(rs), "a")), `{"resourceSpans":[{"resource":{"attributes":[{"key":"b","value":{"stringValue":"2"}}]}}]}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	// Only resource attributes are filtered, not span attributes.
	rs[0].ScopeSpans = []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{Attributes: []*commonpb.KeyValue{kvStr("a", "x")}}}}}
	if got := string(AppendTraces(nil, pipeline.TracesFromProto(rs), "a")); !strings.Contains(got, `"spans":[{"attributes":[{"key":"a"`) {
		t.Errorf("span attribute dropped: %s", got)
	}
}

// ---- unit tests ----

func kvStr(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

func TestAppendFloatMatchesEncodingJSON(t *testing.T) {
	vals := []float64{0, 1, -1, 0.1, 1.1, 1e20, 1e21, 1e-6, 1e-7, 9.999999e-7, 123456789012345678901234.0,
		1.100000499017366e+09, 1796202765.123, math.MaxFloat64, math.SmallestNonzeroFloat64, -1e-300, 5e-324, 1e100}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		vals = append(vals, math.Float64frombits(r.Uint64()), r.NormFloat64()*math.Pow(10, float64(r.IntN(60)-30)))
	}
	// integers, which take AppendInt: around the edge of its range too
	vals = append(vals, 1<<53, 1<<53-1, 1<<53+2, -(1 << 53), -(1<<53 - 1), 1e15, 1e16, 1e17, -1e18, 4294967296, 1410, -273)
	for range 20000 {
		vals = append(vals, float64(r.Int64N(1<<55)-1<<54), float64(r.Int64N(1e6)-5e5), math.Trunc(r.NormFloat64()*math.Pow(10, float64(r.IntN(25)))))
	}
	// decimals of 1 to 17 significant digits with 1 to 17 fraction digits,
	// as a page would write them
	for range 200000 {
		digits, frac := 1+r.IntN(17), 1+r.IntN(17)
		m := r.Int64N(int64(math.Pow10(min(digits, 18))))
		s := strconv.FormatInt(m, 10)
		for len(s) <= frac {
			s = "0" + s
		}
		s = s[:len(s)-frac] + "." + s[len(s)-frac:]
		if r.IntN(4) == 0 {
			s = "-" + s
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatal(err)
		}
		vals = append(vals, f, math.Nextafter(f, 0), math.Nextafter(f, math.Inf(1)))
	}
	vals = append(vals, 1e15-0.5, 1e15-0.125, 999999999999999.9, 99999999999999.99, 123456789012345.6, 0.000001, 0.0000015,
		0.1+0.2, 1.0/3, 2.0/3, 0.125, -0.5, 1e-6+1e-21, 1e-6-1e-21, 4.35, 0.07, 1.005, 8.675309e-3)
	for _, f := range vals {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		want, _ := json.Marshal(f)
		if got := appendFloat(nil, f); string(got) != string(want) {
			t.Fatalf("appendFloat(%v) = %s, encoding/json %s", f, got, want)
		}
	}
	for f, want := range map[float64]string{math.NaN(): `"NaN"`, math.Inf(1): `"Infinity"`, math.Inf(-1): `"-Infinity"`, 1e21: "1e+21", 1e-7: "1e-7", 1.100000499017366e+09: "1100000499.017366", math.Copysign(0, -1): "-0"} {
		if got := string(appendFloat(nil, f)); got != want {
			t.Errorf("appendFloat(%v) = %s, want %s", f, got, want)
		}
	}
}

func TestAppendString(t *testing.T) {
	cases := map[string]string{
		"":                    `""`,
		"plain":               `"plain"`,
		`q"b\s/`:              `"q\"b\\s/"`,
		"\n\t\r\b\f":          `"\n\t\r\b\f"`,
		"\x00\x01\x1f\x7f":    `"\u0000\u0001\u001f` + "\x7f" + `"`,
		"<a&b>":               `"<a&b>"`,
		"héllo 世界 😀":          `"héllo 世界 😀"`,
		"bad\xffutf8\xc3":     `"bad` + "\ufffd" + `utf8` + "\ufffd" + `"`,
		"\xed\xa0\x80":        `"` + "\ufffd\ufffd\ufffd" + `"`,
		"\u2028\u2029":        `"` + "\u2028\u2029" + `"`,
		"tail\\":              `"tail\\"`,
		"mix\x00\"é\xfe\x1bz": `"mix\u0000\"é` + "\ufffd" + `\u001bz"`,
	}
	for in, want := range cases {
		got := string(appendString(nil, in))
		if got != want {
			t.Errorf("appendString(%q) = %s, want %s", in, got, want)
		}
		var back string
		if err := json.Unmarshal([]byte(got), &back); err != nil {
			t.Errorf("appendString(%q) = %s: invalid JSON: %v", in, got, err)
		}
		var valid []rune
		for _, r := range in {
			valid = append(valid, r)
		}
		if back != string(valid) {
			t.Errorf("appendString(%q) decodes to %q", in, back)
		}
	}
	// Random bytes: always valid JSON decoding to the U+FFFD-repaired input.
	r := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		bs := make([]byte, r.IntN(20))
		for i := range bs {
			bs[i] = byte(r.Uint32())
		}
		in := string(bs)
		var back string
		if err := json.Unmarshal(appendString(nil, in), &back); err != nil {
			t.Fatalf("appendString(%q): %v", in, err)
		}
		var valid []rune
		for _, r := range in {
			valid = append(valid, r)
		}
		if back != string(valid) {
			t.Fatalf("appendString(%q) decodes to %q", in, back)
		}
	}
}

func TestOneofZeroValues(t *testing.T) {
	zero := 0.0
	attrs := []*commonpb.KeyValue{
		{Key: "s", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{}}},
		{Key: "b", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{}}},
		{Key: "i", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{}}},
		{Key: "d", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{}}},
		{Key: "y", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{}}},
		{Key: "a", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{}}}},
		{Key: "k", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{}}}},
		{Key: "e", Value: &commonpb.AnyValue{}},
		{Key: "n"},
	}
	rms := []*metricspb.ResourceMetrics{{ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{
		{Name: "g", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: []*metricspb.NumberDataPoint{
			{Attributes: attrs, Value: &metricspb.NumberDataPoint_AsDouble{}},
			{Value: &metricspb.NumberDataPoint_AsInt{}, Exemplars: []*metricspb.Exemplar{{Value: &metricspb.Exemplar_AsDouble{}}, {Value: &metricspb.Exemplar_AsInt{}}}},
			{},
		}}}},
		{Name: "h", Data: &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{DataPoints: []*metricspb.HistogramDataPoint{
			{Sum: &zero, Min: &zero, Max: &zero}, {},
		}}}},
		{Name: "s", Data: &metricspb.Metric_Summary{Summary: &metricspb.Summary{}}},
	}}}}}
	got := string(AppendMetrics(nil, rms))
	want := `{"resourceMetrics":[{"scopeMetrics":[{"metrics":[` +
		`{"name":"g","gauge":{"dataPoints":[{"attributes":[` +
		`{"key":"s","value":{"stringValue":""}},{"key":"b","value":{"boolValue":false}},{"key":"i","value":{"intValue":"0"}},` +
		`{"key":"d","value":{"doubleValue":0}},{"key":"y","value":{"bytesValue":""}},{"key":"a","value":{"arrayValue":{}}},` +
		`{"key":"k","value":{"kvlistValue":{}}},{"key":"e","value":{}},{"key":"n"}],"asDouble":0},` +
		`{"asInt":"0","exemplars":[{"asDouble":0},{"asInt":"0"}]},{}]}},` +
		`{"name":"h","histogram":{"dataPoints":[{"sum":0,"min":0,"max":0},{}]}},` +
		`{"name":"s","summary":{}}]}]}]}`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// And protojson agrees.
	pj, err := pjOpts.Marshal(&colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: rms})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(generic(t, pj), generic(t, []byte(got))) {
		t.Errorf("protojson differs:\n%s\n%s", pj, got)
	}
	req, err := DecodeMetrics([]byte(got))
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(req, &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: rms}) {
		t.Error("round trip lost oneof zero values")
	}
}

func TestEmpty(t *testing.T) {
	if got := string(AppendMetrics([]byte("x"), nil)); got != "x{}" {
		t.Errorf("got %s", got)
	}
	if got := string(AppendLogs(nil, pipeline.LogsFromProto([]*logspb.ResourceLogs{nil, {}}))); got != `{"resourceLogs":[{},{}]}` {
		t.Errorf("got %s", got)
	}
	for _, in := range []string{`{}`, `{"resourceSpans":[]}`, `{"resourceSpans":[{}]}`} {
		if _, err := DecodeTraces([]byte(in)); err != nil {
			t.Errorf("DecodeTraces(%s): %v", in, err)
		}
	}
}

func TestDecodeTolerance(t *testing.T) {
	in := `{"resource_spans":[{"scope_spans":[{"spans":[{"trace_id":"0102030405060708090A0b0c0d0e0f10",` +
		` "span_id" : "1112131415161718", "parent_span_id":"", "kind":"SPAN_KIND_CLIENT", "start_time_unix_nano":1700000000000000000,` +
		`"endTimeUnixNano":"1700000000000000001","status":{"code":"STATUS_CODE_ERROR"},"links":[{"traceId":null,"spanId":"2122232425262728"}],` +
		`"unknownField":{"x":[1,2]},"name":"tr\u0061ceId"}]}]}]}`
	req, err := DecodeTraces([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	s := req.ResourceSpans[0].ScopeSpans[0].Spans[0]
	if hex.EncodeToString(s.TraceId) != "0102030405060708090a0b0c0d0e0f10" || hex.EncodeToString(s.SpanId) != "1112131415161718" || len(s.ParentSpanId) != 0 {
		t.Errorf("ids: %x %x %x", s.TraceId, s.SpanId, s.ParentSpanId)
	}
	if s.Kind != tracepb.Span_SPAN_KIND_CLIENT || s.Status.Code != tracepb.Status_STATUS_CODE_ERROR || s.StartTimeUnixNano != 1700000000000000000 || s.EndTimeUnixNano != 1700000000000000001 {
		t.Errorf("fields: %v", s)
	}
	if s.Name != "traceId" || hex.EncodeToString(s.Links[0].SpanId) != "2122232425262728" || s.Links[0].TraceId != nil {
		t.Errorf("fields: %v", s)
	}
	// Escaped key names are still recognised.
	req, err = DecodeTraces([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"span\u0049d":"0a0b0c0d0e0f1011"}]}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(req.ResourceSpans[0].ScopeSpans[0].Spans[0].SpanId); got != "0a0b0c0d0e0f1011" {
		t.Errorf("escaped key: %s", got)
	}
}

func TestJSONDecodeErrors(t *testing.T) {
	cases := []struct {
		f    func([]byte) error
		in   string
		want []string
	}{
		{decT, `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz"}]}]}]}`, []string{"otlpwire: decode OTLP/JSON traces:", "traceId", "not hex"}},
		{decT, `{"resourceSpans":[{"scopeSpans":[{"spans":[{"parentSpanId":"abc"}]}]}]}`, []string{"otlpwire: decode OTLP/JSON traces:", "parentSpanId", "odd"}},
		{decL, `{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"spanId":"0102030405060708x0"}]}]}]}`, []string{"otlpwire: decode OTLP/JSON logs:", "spanId"}},
		{decM, `{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"gauge":{"dataPoints":[{"exemplars":[{"traceId":"AQID"}]}]}}]}]}]}`, []string{"otlpwire: decode OTLP/JSON metrics:", "traceId"}},
		{decM, `{"resourceMetrics":[`, []string{"otlpwire: decode OTLP/JSON metrics:"}},
		{decM, `{"resourceMetrics":"x`, []string{"otlpwire: decode OTLP/JSON metrics:", "unterminated"}},
		{decL, `not json`, []string{"otlpwire: decode OTLP/JSON logs:"}},
		{decT, `{"resourceSpans":[{"scopeSpans":[{"spans":[{"startTimeUnixNano":"-1"}]}]}]}`, []string{"otlpwire: decode OTLP/JSON traces:"}},
	}
	for _, c := range cases {
		err := c.f([]byte(c.in))
		if err == nil {
			t.Errorf("%s: no error", c.in)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", c.in, err, w)
			}
		}
	}
}

func decT(b []byte) error { _, err := DecodeTraces(b); return err }
func decL(b []byte) error { _, err := DecodeLogs(b); return err }
func decM(b []byte) error { _, err := DecodeMetrics(b); return err }

// ---- randomized cross check against protojson ----

type gen struct{ r *rand.Rand }

func (g gen) maybe() bool { return g.r.IntN(2) == 0 }

func (g gen) str() string {
	if g.maybe() {
		return ""
	}
	const alpha = "abcXYZ09 _-.\"\\/\n\t\x01<>&é世😀"
	rs := []rune(alpha)
	n := g.r.IntN(12)
	out := make([]rune, n)
	for i := range out {
		out[i] = rs[g.r.IntN(len(rs))]
	}
	return string(out)
}

func (g gen) u64() uint64 {
	switch g.r.IntN(4) {
	case 0:
		return 0
	case 1:
		return math.MaxUint64 - uint64(g.r.IntN(3))
	}
	return g.r.Uint64() >> g.r.IntN(64)
}

func (g gen) i64() int64   { return int64(g.u64()) }
func (g gen) u32() uint32  { return uint32(g.u64()) }
func (g gen) i32() int32   { return int32(g.u64()) }
func (g gen) f64() float64 { return g.floats()[0] }

func (g gen) floats() []float64 {
	n := g.r.IntN(4)
	if n == 0 {
		n = 1
	}
	out := make([]float64, n)
	for i := range out {
		switch g.r.IntN(8) {
		case 0:
			out[i] = 0
		case 1:
			out[i] = []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 1e21, 1e-7, math.MaxFloat64, 5e-324}[g.r.IntN(8)]
		case 2:
			out[i] = float64(g.r.IntN(1000))
		case 3:
			out[i] = math.Float64frombits(g.r.Uint64())
			if math.IsNaN(out[i]) {
				out[i] = math.NaN() // canonical NaN so proto.Equal works
			}
		default:
			out[i] = g.r.NormFloat64() * math.Pow(10, float64(g.r.IntN(40)-20))
		}
	}
	return out
}

func (g gen) optF() *float64 {
	if g.maybe() {
		return nil
	}
	f := g.f64()
	return &f
}

func (g gen) id(n int) []byte {
	if g.r.IntN(3) == 0 {
		return nil
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(g.r.Uint32())
	}
	return b
}

func (g gen) any(depth int) *commonpb.AnyValue {
	v := &commonpb.AnyValue{}
	k := g.r.IntN(10)
	if depth > 2 && k >= 4 && k <= 5 {
		k = 0
	}
	switch k {
	case 0:
		v.Value = &commonpb.AnyValue_StringValue{StringValue: g.str()}
	case 1:
		v.Value = &commonpb.AnyValue_BoolValue{BoolValue: g.maybe()}
	case 2:
		v.Value = &commonpb.AnyValue_IntValue{IntValue: g.i64()}
	case 3:
		v.Value = &commonpb.AnyValue_DoubleValue{DoubleValue: g.f64()}
	case 4:
		a := &commonpb.ArrayValue{}
		for range g.r.IntN(3) {
			a.Values = append(a.Values, g.any(depth+1))
		}
		v.Value = &commonpb.AnyValue_ArrayValue{ArrayValue: a}
	case 5:
		v.Value = &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: g.attrs(depth + 1)}}
	case 6:
		v.Value = &commonpb.AnyValue_BytesValue{BytesValue: g.id(g.r.IntN(7))}
	case 7:
		v.Value = &commonpb.AnyValue_StringValueStrindex{StringValueStrindex: g.i32()}
	case 8:
		// unset oneof
	default:
		v.Value = &commonpb.AnyValue_StringValue{StringValue: g.str()}
	}
	return v
}

func (g gen) attrs(depth int) []*commonpb.KeyValue {
	var out []*commonpb.KeyValue
	for range g.r.IntN(4) {
		kv := &commonpb.KeyValue{Key: g.str()}
		if g.r.IntN(5) > 0 {
			kv.Value = g.any(depth)
		}
		if g.r.IntN(8) == 0 {
			kv.KeyStrindex = g.i32()
		}
		out = append(out, kv)
	}
	return out
}

func (g gen) resource() *resourcepb.Resource {
	if g.r.IntN(4) == 0 {
		return nil
	}
	r := &resourcepb.Resource{Attributes: g.attrs(0), DroppedAttributesCount: g.u32()}
	for range g.r.IntN(2) {
		e := &commonpb.EntityRef{SchemaUrl: g.str(), Type: g.str()}
		for range g.r.IntN(3) {
			e.IdKeys = append(e.IdKeys, g.str())
		}
		for range g.r.IntN(3) {
			e.DescriptionKeys = append(e.DescriptionKeys, g.str())
		}
		r.EntityRefs = append(r.EntityRefs, e)
	}
	return r
}

func (g gen) scope() *commonpb.InstrumentationScope {
	if g.r.IntN(4) == 0 {
		return nil
	}
	return &commonpb.InstrumentationScope{Name: g.str(), Version: g.str(), Attributes: g.attrs(0), DroppedAttributesCount: g.u32()}
}

func (g gen) exemplars() []*metricspb.Exemplar {
	var out []*metricspb.Exemplar
	for range g.r.IntN(3) {
		e := &metricspb.Exemplar{FilteredAttributes: g.attrs(1), TimeUnixNano: g.u64(), SpanId: g.id(8), TraceId: g.id(16)}
		switch g.r.IntN(3) {
		case 0:
			e.Value = &metricspb.Exemplar_AsDouble{AsDouble: g.f64()}
		case 1:
			e.Value = &metricspb.Exemplar_AsInt{AsInt: g.i64()}
		}
		out = append(out, e)
	}
	return out
}

func (g gen) u64s() []uint64 {
	var out []uint64
	for range g.r.IntN(4) {
		out = append(out, g.u64())
	}
	return out
}

func (g gen) numberPoints() []*metricspb.NumberDataPoint {
	var out []*metricspb.NumberDataPoint
	for range g.r.IntN(3) {
		p := &metricspb.NumberDataPoint{Attributes: g.attrs(1), StartTimeUnixNano: g.u64(), TimeUnixNano: g.u64(), Exemplars: g.exemplars(), Flags: g.u32()}
		switch g.r.IntN(3) {
		case 0:
			p.Value = &metricspb.NumberDataPoint_AsDouble{AsDouble: g.f64()}
		case 1:
			p.Value = &metricspb.NumberDataPoint_AsInt{AsInt: g.i64()}
		}
		out = append(out, p)
	}
	return out
}

func (g gen) temporality() metricspb.AggregationTemporality {
	return metricspb.AggregationTemporality(g.r.IntN(3))
}

func (g gen) buckets() *metricspb.ExponentialHistogramDataPoint_Buckets {
	if g.r.IntN(3) == 0 {
		return nil
	}
	return &metricspb.ExponentialHistogramDataPoint_Buckets{Offset: g.i32(), BucketCounts: g.u64s()}
}

func (g gen) metric() *metricspb.Metric {
	m := &metricspb.Metric{Name: g.str(), Description: g.str(), Unit: g.str(), Metadata: g.attrs(1)}
	switch g.r.IntN(6) {
	case 0:
		m.Data = &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: g.numberPoints()}}
	case 1:
		m.Data = &metricspb.Metric_Sum{Sum: &metricspb.Sum{DataPoints: g.numberPoints(), AggregationTemporality: g.temporality(), IsMonotonic: g.maybe()}}
	case 2:
		h := &metricspb.Histogram{AggregationTemporality: g.temporality()}
		for range g.r.IntN(3) {
			p := &metricspb.HistogramDataPoint{Attributes: g.attrs(1), StartTimeUnixNano: g.u64(), TimeUnixNano: g.u64(), Count: g.u64(),
				Sum: g.optF(), BucketCounts: g.u64s(), Exemplars: g.exemplars(), Flags: g.u32(), Min: g.optF(), Max: g.optF()}
			if g.maybe() {
				p.ExplicitBounds = g.floats()
			}
			h.DataPoints = append(h.DataPoints, p)
		}
		m.Data = &metricspb.Metric_Histogram{Histogram: h}
	case 3:
		h := &metricspb.ExponentialHistogram{AggregationTemporality: g.temporality()}
		for range g.r.IntN(3) {
			h.DataPoints = append(h.DataPoints, &metricspb.ExponentialHistogramDataPoint{Attributes: g.attrs(1), StartTimeUnixNano: g.u64(), TimeUnixNano: g.u64(),
				Count: g.u64(), Sum: g.optF(), Scale: g.i32(), ZeroCount: g.u64(), Positive: g.buckets(), Negative: g.buckets(), Flags: g.u32(),
				Exemplars: g.exemplars(), Min: g.optF(), Max: g.optF(), ZeroThreshold: g.f64()})
		}
		m.Data = &metricspb.Metric_ExponentialHistogram{ExponentialHistogram: h}
	case 4:
		s := &metricspb.Summary{}
		for range g.r.IntN(3) {
			p := &metricspb.SummaryDataPoint{Attributes: g.attrs(1), StartTimeUnixNano: g.u64(), TimeUnixNano: g.u64(), Count: g.u64(), Sum: g.f64(), Flags: g.u32()}
			for range g.r.IntN(3) {
				p.QuantileValues = append(p.QuantileValues, &metricspb.SummaryDataPoint_ValueAtQuantile{Quantile: g.f64(), Value: g.f64()})
			}
			s.DataPoints = append(s.DataPoints, p)
		}
		m.Data = &metricspb.Metric_Summary{Summary: s}
	}
	return m
}

func (g gen) metrics() []*metricspb.ResourceMetrics {
	var out []*metricspb.ResourceMetrics
	for range g.r.IntN(3) {
		rm := &metricspb.ResourceMetrics{Resource: g.resource(), SchemaUrl: g.str()}
		for range g.r.IntN(3) {
			sm := &metricspb.ScopeMetrics{Scope: g.scope(), SchemaUrl: g.str()}
			for range g.r.IntN(4) {
				sm.Metrics = append(sm.Metrics, g.metric())
			}
			rm.ScopeMetrics = append(rm.ScopeMetrics, sm)
		}
		out = append(out, rm)
	}
	return out
}

func (g gen) span() *tracepb.Span {
	s := &tracepb.Span{TraceId: g.id(16), SpanId: g.id(8), TraceState: g.str(), ParentSpanId: g.id(8), Flags: g.u32(), Name: g.str(),
		Kind: tracepb.Span_SpanKind(g.r.IntN(6)), StartTimeUnixNano: g.u64(), EndTimeUnixNano: g.u64(), Attributes: g.attrs(0),
		DroppedAttributesCount: g.u32(), DroppedEventsCount: g.u32(), DroppedLinksCount: g.u32()}
	for range g.r.IntN(3) {
		s.Events = append(s.Events, &tracepb.Span_Event{TimeUnixNano: g.u64(), Name: g.str(), Attributes: g.attrs(1), DroppedAttributesCount: g.u32()})
	}
	for range g.r.IntN(3) {
		s.Links = append(s.Links, &tracepb.Span_Link{TraceId: g.id(16), SpanId: g.id(8), TraceState: g.str(), Attributes: g.attrs(1), DroppedAttributesCount: g.u32(), Flags: g.u32()})
	}
	if g.maybe() {
		s.Status = &tracepb.Status{Message: g.str(), Code: tracepb.Status_StatusCode(g.r.IntN(3))}
	}
	return s
}

func (g gen) traces() []*tracepb.ResourceSpans {
	var out []*tracepb.ResourceSpans
	for range g.r.IntN(3) {
		rs := &tracepb.ResourceSpans{Resource: g.resource(), SchemaUrl: g.str()}
		for range g.r.IntN(3) {
			ss := &tracepb.ScopeSpans{Scope: g.scope(), SchemaUrl: g.str()}
			for range g.r.IntN(4) {
				ss.Spans = append(ss.Spans, g.span())
			}
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		out = append(out, rs)
	}
	return out
}

func (g gen) logs() []*logspb.ResourceLogs {
	var out []*logspb.ResourceLogs
	for range g.r.IntN(3) {
		rl := &logspb.ResourceLogs{Resource: g.resource(), SchemaUrl: g.str()}
		for range g.r.IntN(3) {
			sl := &logspb.ScopeLogs{Scope: g.scope(), SchemaUrl: g.str()}
			for range g.r.IntN(4) {
				lr := &logspb.LogRecord{TimeUnixNano: g.u64(), ObservedTimeUnixNano: g.u64(), SeverityNumber: logspb.SeverityNumber(g.r.IntN(25)),
					SeverityText: g.str(), Attributes: g.attrs(0), DroppedAttributesCount: g.u32(), Flags: g.u32(), TraceId: g.id(16), SpanId: g.id(8), EventName: g.str()}
				if g.maybe() {
					lr.Body = g.any(0)
				}
				sl.LogRecords = append(sl.LogRecords, lr)
			}
			rl.ScopeLogs = append(rl.ScopeLogs, sl)
		}
		out = append(out, rl)
	}
	return out
}

// hexifyIDs turns protojson's base64 id values into hex in a generic tree.
func hexifyIDs(t *testing.T, v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && idKeys[k] {
				b, err := base64.StdEncoding.DecodeString(s)
				if err != nil {
					t.Fatalf("protojson id %q: %v", s, err)
				}
				x[k] = hex.EncodeToString(b)
				continue
			}
			x[k] = hexifyIDs(t, e)
		}
	case []any:
		for i, e := range x {
			x[i] = hexifyIDs(t, e)
		}
	}
	return v
}

func crossCheck(t *testing.T, i int, orig proto.Message, enc []byte, decode func([]byte) (proto.Message, error)) {
	t.Helper()
	got, err := decode(enc)
	if err != nil {
		t.Fatalf("case %d: decode own output: %v\n%s", i, err, enc)
	}
	if !proto.Equal(orig, got) {
		t.Fatalf("case %d: round trip mismatch\nenc: %s\norig: %v\ngot:  %v", i, enc, orig, got)
	}
	pj, err := pjOpts.Marshal(orig)
	if err != nil {
		t.Fatalf("case %d: protojson: %v", i, err)
	}
	want := hexifyIDs(t, generic(t, pj))
	if !reflect.DeepEqual(want, generic(t, enc)) {
		t.Fatalf("case %d: differs from protojson (ids hexified)\nprotojson: %s\nours:      %s", i, pj, enc)
	}
}

func TestRandomCrossCheck(t *testing.T) {
	g := gen{rand.New(rand.NewPCG(42, 7))}
	n := 3000
	if testing.Short() {
		n = 300
	}
	for i := range n {
		rms := g.metrics()
		crossCheck(t, i, &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: rms}, AppendMetrics(nil, rms),
			func(b []byte) (proto.Message, error) { return DecodeMetrics(b) })
		rss := g.traces()
		crossCheck(t, i, &coltracepb.ExportTraceServiceRequest{ResourceSpans: rss}, AppendTraces(nil, pipeline.TracesFromProto(rss)),
			func(b []byte) (proto.Message, error) { return DecodeTraces(b) })
		rls := g.logs()
		crossCheck(t, i, &collogspb.ExportLogsServiceRequest{ResourceLogs: rls}, AppendLogs(nil, pipeline.LogsFromProto(rls)),
			func(b []byte) (proto.Message, error) { return DecodeLogs(b) })
	}
}

// TestKeyOrderMatchesProtojson compares key order with protojson on a
// hand-built message with every field set (no floats that format differently).
func TestKeyOrderMatchesProtojson(t *testing.T) {
	one := 1.5
	attrs := []*commonpb.KeyValue{kvStr("k", "v"), {Key: "i", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: -3}}}}
	ex := []*metricspb.Exemplar{{FilteredAttributes: attrs, TimeUnixNano: 5, Value: &metricspb.Exemplar_AsInt{AsInt: 7}, SpanId: []byte{1, 2, 3, 4, 5, 6, 7, 8}, TraceId: bytes.Repeat([]byte{0xab}, 16)}}
	rms := []*metricspb.ResourceMetrics{{
		Resource:  &resourcepb.Resource{Attributes: attrs, DroppedAttributesCount: 2, EntityRefs: []*commonpb.EntityRef{{SchemaUrl: "s", Type: "t", IdKeys: []string{"a"}, DescriptionKeys: []string{"b"}}}},
		SchemaUrl: "rs",
		ScopeMetrics: []*metricspb.ScopeMetrics{{Scope: &commonpb.InstrumentationScope{Name: "n", Version: "v", Attributes: attrs, DroppedAttributesCount: 1}, SchemaUrl: "ss",
			Metrics: []*metricspb.Metric{
				{Name: "a", Description: "d", Unit: "u", Metadata: attrs, Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{AggregationTemporality: 2, IsMonotonic: true,
					DataPoints: []*metricspb.NumberDataPoint{{Attributes: attrs, StartTimeUnixNano: 1, TimeUnixNano: 2, Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: 1.5}, Exemplars: ex, Flags: 1}}}}},
				{Name: "h", Data: &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{AggregationTemporality: 1, DataPoints: []*metricspb.HistogramDataPoint{{Attributes: attrs, StartTimeUnixNano: 1, TimeUnixNano: 2,
					Count: 3, Sum: &one, BucketCounts: []uint64{1, 2}, ExplicitBounds: []float64{0.5}, Exemplars: ex, Flags: 1, Min: &one, Max: &one}}}}},
				{Name: "e", Data: &metricspb.Metric_ExponentialHistogram{ExponentialHistogram: &metricspb.ExponentialHistogram{AggregationTemporality: 1, DataPoints: []*metricspb.ExponentialHistogramDataPoint{{Attributes: attrs,
					StartTimeUnixNano: 1, TimeUnixNano: 2, Count: 3, Sum: &one, Scale: -2, ZeroCount: 4, Positive: &metricspb.ExponentialHistogramDataPoint_Buckets{Offset: -1, BucketCounts: []uint64{5}},
					Negative: &metricspb.ExponentialHistogramDataPoint_Buckets{Offset: 2}, Flags: 1, Exemplars: ex, Min: &one, Max: &one, ZeroThreshold: 0.25}}}}},
				{Name: "s", Data: &metricspb.Metric_Summary{Summary: &metricspb.Summary{DataPoints: []*metricspb.SummaryDataPoint{{Attributes: attrs, StartTimeUnixNano: 1, TimeUnixNano: 2, Count: 3, Sum: 4.5,
					QuantileValues: []*metricspb.SummaryDataPoint_ValueAtQuantile{{Quantile: 0.5, Value: 2}}, Flags: 1}}}}},
			}}},
	}}
	rss := []*tracepb.ResourceSpans{{SchemaUrl: "x", ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{TraceId: []byte{1}, SpanId: []byte{2}, TraceState: "ts", ParentSpanId: []byte{3}, Flags: 257,
		Name: "n", Kind: 2, StartTimeUnixNano: 1, EndTimeUnixNano: 2, Attributes: attrs, DroppedAttributesCount: 1,
		Events: []*tracepb.Span_Event{{TimeUnixNano: 1, Name: "e", Attributes: attrs, DroppedAttributesCount: 1}}, DroppedEventsCount: 2,
		Links: []*tracepb.Span_Link{{TraceId: []byte{4}, SpanId: []byte{5}, TraceState: "t", Attributes: attrs, DroppedAttributesCount: 1, Flags: 1}}, DroppedLinksCount: 3,
		Status: &tracepb.Status{Message: "m", Code: 2}}}}}}}
	rls := []*logspb.ResourceLogs{{ScopeLogs: []*logspb.ScopeLogs{{LogRecords: []*logspb.LogRecord{{TimeUnixNano: 1, ObservedTimeUnixNano: 2, SeverityNumber: 9, SeverityText: "Info",
		Body: &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: attrs}}}, Attributes: attrs, DroppedAttributesCount: 1, Flags: 1,
		TraceId: []byte{1}, SpanId: []byte{2}, EventName: "ev"}}}}}}
	check := func(m proto.Message, ours []byte) {
		pj, err := pjOpts.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if got, w := keySeq(t, ours), keySeq(t, pj); !reflect.DeepEqual(got, w) {
			t.Errorf("key order differs\nprotojson: %v\nours:      %v", w, got)
		}
	}
	check(&colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: rms}, AppendMetrics(nil, rms))
	check(&coltracepb.ExportTraceServiceRequest{ResourceSpans: rss}, AppendTraces(nil, pipeline.TracesFromProto(rss)))
	check(&collogspb.ExportLogsServiceRequest{ResourceLogs: rls}, AppendLogs(nil, pipeline.LogsFromProto(rls)))
}

// keySeq lists object keys in document order.
func keySeq(t *testing.T, data []byte) []string {
	t.Helper()
	type frame struct{ obj, wantKey bool }
	dec := json.NewDecoder(bytes.NewReader(data))
	var keys []string
	var stack []frame
	value := func() {
		if n := len(stack); n > 0 && stack[n-1].obj {
			stack[n-1].wantKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		if s, ok := tok.(string); ok {
			if n := len(stack); n > 0 && stack[n-1].obj && stack[n-1].wantKey {
				keys = append(keys, s)
				stack[n-1].wantKey = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{obj: true, wantKey: true})
		case json.Delim('['):
			stack = append(stack, frame{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			value()
		default:
			value()
		}
	}
	if len(keys) == 0 {
		t.Fatal("no keys")
	}
	return keys
}

func TestAllocFree(t *testing.T) {
	var reqs []*colmetricspb.ExportMetricsServiceRequest
	for _, fl := range fixtureLines(t) {
		if bytes.HasPrefix(fl.data, []byte(`{"resourceMetrics"`)) {
			r, err := DecodeMetrics(fl.data)
			if err != nil {
				t.Fatal(err)
			}
			reqs = append(reqs, r)
		}
	}
	buf := make([]byte, 0, 1<<20)
	allocs := testing.AllocsPerRun(50, func() {
		for _, r := range reqs {
			buf = AppendMetrics(buf[:0], r.ResourceMetrics, "Authorization")
		}
	})
	if allocs != 0 {
		t.Errorf("AppendMetrics allocates %v times per run with a large enough dst", allocs)
	}
}

// ---- benchmarks ----

func benchMetrics(b *testing.B) ([]*colmetricspb.ExportMetricsServiceRequest, int) {
	var reqs []*colmetricspb.ExportMetricsServiceRequest
	points := 0
	for _, fl := range fixtureLines(b) {
		if !bytes.HasPrefix(fl.data, []byte(`{"resourceMetrics"`)) {
			continue
		}
		r, err := DecodeMetrics(fl.data)
		if err != nil {
			b.Fatal(err)
		}
		reqs = append(reqs, r)
		for _, rm := range r.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					points += len(m.GetGauge().GetDataPoints()) + len(m.GetSum().GetDataPoints()) + len(m.GetHistogram().GetDataPoints()) +
						len(m.GetExponentialHistogram().GetDataPoints()) + len(m.GetSummary().GetDataPoints())
				}
			}
		}
	}
	return reqs, points
}

func BenchmarkAppendMetrics(b *testing.B) {
	reqs, points := benchMetrics(b)
	var buf []byte
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, r := range reqs {
			buf = AppendMetrics(buf[:0], r.ResourceMetrics, "Authorization")
		}
	}
	b.ReportMetric(float64(points)*float64(b.N)/b.Elapsed().Seconds(), "points/s")
}

func BenchmarkProtojsonMetrics(b *testing.B) {
	reqs, points := benchMetrics(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, r := range reqs {
			if _, err := pjOpts.Marshal(r); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(points)*float64(b.N)/b.Elapsed().Seconds(), "points/s")
}

// pjOpts makes protojson write enums as numbers, as OTLP/JSON requires.
var pjOpts = protojson.MarshalOptions{UseEnumNumbers: true}

func TestSkipIgnoresCase(t *testing.T) {
	rs := []*tracepb.ResourceSpans{{Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
		{Key: "authorization", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "tok-lower"}}},
		{Key: "AUTHORIZATION", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "tok-upper"}}},
		{Key: "keep", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "v"}}},
	}}}}
	out := string(AppendTraces(nil, pipeline.TracesFromProto(rs), "Authorization"))
	if strings.Contains(out, "tok-") || !strings.Contains(out, `"keep"`) {
		t.Fatalf("got %s", out)
	}
}

// plainWord says true exactly when all eight bytes pass safe[]: every byte
// value at every position, and random words biased towards the edges.
func TestPlain8(t *testing.T) {
	allSafe := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if s[i] >= utf8.RuneSelf || !safe[s[i]] {
				return false
			}
		}
		return true
	}
	for c := range 256 {
		for pos := range 8 {
			b := []byte("abcdefgh")
			b[pos] = byte(c)
			if got, want := plainWord(load8(string(b))), allSafe(string(b)); got != want {
				t.Fatalf("plainWord(%q) = %v, want %v", b, got, want)
			}
		}
	}
	edges := []byte{0x00, 0x1f, 0x20, 0x21, '"', 0x23, 0x5b, '\\', 0x5d, 0x7f, 0x80, 0xff, 'a'}
	r := rand.New(rand.NewPCG(5, 6))
	for range 200000 {
		var b [8]byte
		for i := range b {
			if r.IntN(2) == 0 {
				b[i] = edges[r.IntN(len(edges))]
			} else {
				b[i] = byte(r.Uint32())
			}
		}
		if got, want := plainWord(load8(string(b[:]))), allSafe(string(b[:])); got != want {
			t.Fatalf("plainWord(%q) = %v, want %v", b, got, want)
		}
	}
}

// Strings of every length take the word paths (eight bytes at a time, the
// last eight, the two halves of a short one): one special byte or rune at
// every offset still comes out escaped as the byte loop escapes it.
func TestAppendStringLong(t *testing.T) {
	specials := []string{`"`, `\`, "\x00", "\x1f", "\n", "\x7f", "é", "世", "😀", "\xff", "\xc3"}
	full := "0123456789abcdefghijklmnopqrstuvwxyz"
	for n := 0; n <= len(full); n++ {
		testAppendStringAt(t, specials, full[:n])
	}
}

func testAppendStringAt(t *testing.T, specials []string, base string) {
	t.Helper()
	for _, sp := range specials {
		for pos := 0; pos <= len(base); pos++ {
			in := base[:pos] + sp + base[pos:]
			got := appendString(nil, in)
			var back string
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatalf("appendString(%q) = %s: %v", in, got, err)
			}
			if want := strings.ToValidUTF8(in, "\ufffd"); back != want {
				t.Fatalf("appendString(%q) decodes to %q, want %q", in, back, want)
			}
			if sp == "\x7f" || len(sp) > 1 && utf8.ValidString(sp) {
				if string(got) != `"`+in+`"` {
					t.Fatalf("appendString(%q) = %s: escaped what needs no escape", in, got)
				}
			}
		}
	}
}
