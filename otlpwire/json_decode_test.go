package otlpwire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/otelstep/otelstep/pipeline"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// signal bundles the new decoder, the protojson reference and the encoder
// of one request type, so tests can treat the three alike.
type signal struct {
	name   string
	prefix string
	decode func([]byte) (proto.Message, error)
	ref    func([]byte) (proto.Message, error)
	encode func(proto.Message) []byte
}

var signals = []signal{
	{"metrics", `{"resourceMetrics"`,
		func(b []byte) (proto.Message, error) { return nilIfErr(DecodeMetrics(b)) },
		func(b []byte) (proto.Message, error) { return nilIfErr(pjDecodeMetrics(b)) },
		func(m proto.Message) []byte {
			return AppendMetrics(nil, m.(*colmetricspb.ExportMetricsServiceRequest).ResourceMetrics)
		}},
	{"traces", `{"resourceSpans"`,
		func(b []byte) (proto.Message, error) { return nilIfErr(DecodeTraces(b)) },
		func(b []byte) (proto.Message, error) { return nilIfErr(pjDecodeTraces(b)) },
		func(m proto.Message) []byte {
			return AppendTraces(nil, pipeline.TracesFromProto(m.(*coltracepb.ExportTraceServiceRequest).ResourceSpans))
		}},
	{"logs", `{"resourceLogs"`,
		func(b []byte) (proto.Message, error) { return nilIfErr(DecodeLogs(b)) },
		func(b []byte) (proto.Message, error) { return nilIfErr(pjDecodeLogs(b)) },
		func(m proto.Message) []byte {
			return AppendLogs(nil, pipeline.LogsFromProto(m.(*collogspb.ExportLogsServiceRequest).ResourceLogs))
		}},
}

// nilIfErr turns a typed nil message into an untyped nil on error.
func nilIfErr[M proto.Message](m M, err error) (proto.Message, error) {
	if err != nil {
		return nil, err
	}
	return m, nil
}

func signalFor(t testing.TB, line []byte) signal {
	t.Helper()
	for _, s := range signals {
		if bytes.HasPrefix(line, []byte(s.prefix)) {
			return s
		}
	}
	t.Fatalf("unknown line: %.60s", line)
	return signal{}
}

// checkSame decodes in with both decoders and fails unless both accept it
// and agree.
func checkSame(t *testing.T, s signal, in []byte, what string) {
	t.Helper()
	want, err := s.ref(in)
	if err != nil {
		t.Fatalf("%s: protojson path: %v\n%s", what, err, in)
	}
	got, err := s.decode(in)
	if err != nil {
		t.Fatalf("%s: %v\n%s", what, err, in)
	}
	if !proto.Equal(got, want) {
		t.Fatalf("%s: decoders differ\nin:        %s\nprotojson: %v\nnew:       %v", what, in, want, got)
	}
}

// ---- differential tests ----

func TestDecodeMatchesProtojsonOnFixtures(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, fl := range fixtureLines(t) {
		s := signalFor(t, fl.data)
		what := fmt.Sprintf("%s:%d", fl.file, fl.n)
		checkSame(t, s, fl.data, what)
		// The same content spelled the other ways protojson accepts.
		for i := range 5 {
			checkSame(t, s, respell(t, r, fl.data), fmt.Sprintf("%s respelled #%d", what, i))
		}
	}
}

func TestDecodeMatchesProtojsonOnGenerated(t *testing.T) {
	g := gen{rand.New(rand.NewPCG(11, 12))}
	r := rand.New(rand.NewPCG(13, 14))
	n := 2000
	if testing.Short() {
		n = 200
	}
	for i := range n {
		reqs := []proto.Message{
			&colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: g.metrics()},
			&coltracepb.ExportTraceServiceRequest{ResourceSpans: g.traces()},
			&collogspb.ExportLogsServiceRequest{ResourceLogs: g.logs()},
		}
		for j, req := range reqs {
			s := signals[j]
			enc := s.encode(req)
			got, err := s.decode(enc)
			if err != nil {
				t.Fatalf("case %d %s: %v\n%s", i, s.name, err, enc)
			}
			if !proto.Equal(got, req) {
				t.Fatalf("case %d %s: round trip differs\n%s", i, s.name, enc)
			}
			checkSame(t, s, enc, fmt.Sprintf("case %d %s", i, s.name))
			checkSame(t, s, respell(t, r, enc), fmt.Sprintf("case %d %s respelled", i, s.name))
		}
	}
}

// int64Fields are the fields written as decimal strings; respell writes
// some of them as JSON numbers instead.
var int64Fields = map[string]bool{
	"startTimeUnixNano": true, "timeUnixNano": true, "endTimeUnixNano": true, "observedTimeUnixNano": true,
	"count": true, "zeroCount": true, "asInt": true, "intValue": true, "bucketCounts": true,
}

// enumNames maps enum fields to their value names, for respell.
var enumNames = map[string]map[int32]string{
	"kind":                   tracepb.Span_SpanKind_name,
	"code":                   tracepb.Status_StatusCode_name,
	"severityNumber":         logspb.SeverityNumber_name,
	"aggregationTemporality": metricspb.AggregationTemporality_name,
}

// respell rewrites an OTLP/JSON document into another spelling protojson
// accepts: snake_case names, 64-bit integers as numbers (exact ones only),
// enums as names, whitespace, and an unknown field here and there.
func respell(t testing.TB, r *rand.Rand, data []byte) []byte {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("respell: %v", err)
	}
	var b bytes.Buffer
	writeRespelled(&b, r, "", v)
	return b.Bytes()
}

func writeRespelled(b *bytes.Buffer, r *rand.Rand, field string, v any) {
	ws := func() {
		if r.IntN(8) == 0 {
			b.WriteString(" \n\t\r"[:1+r.IntN(4)])
		}
	}
	switch x := v.(type) {
	case map[string]any:
		b.WriteByte('{')
		ws()
		first := true
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		for _, k := range keys {
			e := x[k]
			if !first {
				b.WriteByte(',')
				ws()
			}
			first = false
			name := k
			if r.IntN(2) == 0 {
				name = snake(k)
			}
			enc, _ := json.Marshal(name)
			b.Write(enc)
			ws()
			b.WriteByte(':')
			ws()
			writeRespelled(b, r, k, e)
			ws()
		}
		if r.IntN(6) == 0 {
			if !first {
				b.WriteByte(',')
			}
			b.WriteString(`"someFutureField":{"a":[1,"x",null,true,{"traceId":"0a"}],"b":-1.5e3}`)
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
				ws()
			}
			writeRespelled(b, r, field, e)
		}
		b.WriteByte(']')
	case string:
		if int64Fields[field] && r.IntN(2) == 0 {
			if n, err := strconv.ParseInt(x, 10, 64); err == nil && n > -1<<53 && n < 1<<53 {
				b.WriteString(x) // as a JSON number
				return
			}
			if _, err := strconv.ParseUint(x, 10, 64); err == nil {
				b.WriteString(x) // protojson parses integer numbers exactly
				return
			}
		}
		enc, _ := json.Marshal(x)
		b.Write(enc)
	case json.Number:
		if names := enumNames[field]; names != nil && r.IntN(2) == 0 {
			if n, err := strconv.ParseInt(string(x), 10, 32); err == nil && names[int32(n)] != "" {
				b.WriteString(`"` + names[int32(n)] + `"`)
				return
			}
		}
		if int64Fields[field] || field == "flags" || field == "droppedAttributesCount" {
			if r.IntN(3) == 0 {
				b.WriteString(`"` + string(x) + `"`) // numbers as strings
				return
			}
		}
		b.WriteString(string(x))
	default:
		enc, _ := json.Marshal(x)
		b.Write(enc)
	}
}

// snake converts a lowerCamelCase name to the proto field name.
func snake(s string) string {
	var b strings.Builder
	for _, c := range s {
		if 'A' <= c && c <= 'Z' {
			b.WriteByte('_')
			c += 'a' - 'A'
		}
		b.WriteRune(c)
	}
	return b.String()
}

// ---- rules ----

func TestDecodeAccepts(t *testing.T) {
	const sp = `{"resourceSpans":[{"scopeSpans":[{"spans":[%s]}]}]}`
	const lr = `{"resourceLogs":[{"scopeLogs":[{"logRecords":[%s]}]}]}`
	const dp = `{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"gauge":{"dataPoints":[%s]}}]}]}]}`
	const attr = `{"resourceLogs":[{"resource":{"attributes":[{"key":"k","value":%s}]}}]}`
	cases := []struct {
		name, format, in string
	}{
		{"snake_case names", sp, `{"trace_id":"0102030405060708090a0b0c0d0e0f10","span_id":"1112131415161718","parent_span_id":"2122232425262728","trace_state":"t","start_time_unix_nano":"5","end_time_unix_nano":6,"dropped_attributes_count":1,"dropped_events_count":2,"dropped_links_count":3}`},
		{"upper-case hex", sp, `{"traceId":"ABCDEF0123456789abcdef0123456789"}`},
		{"escaped hex", sp, `{"spanId":"\u0030\u00310203040506\u00307\u00308"}`},
		{"empty id", sp, `{"traceId":"","spanId":""}`},
		{"base64-looking hex is hex", sp, `{"traceId":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}`},
		{"ints as numbers", sp, `{"startTimeUnixNano":18446744073709551615,"flags":4294967295}`},
		{"ints in exponent notation", sp, `{"startTimeUnixNano":1.5e3,"endTimeUnixNano":"2E2","flags":10.0}`},
		{"negative zero int", sp, `{"startTimeUnixNano":-0}`},
		{"enum names", sp, `{"kind":"SPAN_KIND_SERVER","status":{"code":"STATUS_CODE_ERROR"}}`},
		{"enum numbers", sp, `{"kind":3,"status":{"code":2.0}}`},
		{"enum number out of range", sp, `{"kind":99}`},
		{"nulls", sp, `{"traceId":null,"name":null,"attributes":null,"status":null,"kind":null,"startTimeUnixNano":null}`},
		{"unknown fields", sp, `{"x":{"traceId":"0a","y":[[],{},null,true,false,-1.5e-3,"\ud83d\ude00"]},"name":"n","z":1e}`},
		{"whitespace", sp, " { \"name\" : \"n\" ,\t\"kind\"\n:\r1 } "},
		{"escaped key", sp, `{"na\u006de":"n","\u0074raceId":"0102030405060708090a0b0c0d0e0f10"}`},
		{"unicode escapes", sp, `{"name":"\u00e9\ud83d\ude00\n\t\"\\\/\b\f\r\u0000"}`},
		{"raw utf-8", sp, `{"name":"héllo 世界 😀 �"}`},
		{"events links status", sp, `{"events":[{"timeUnixNano":"1","name":"e","attributes":[{"key":"a"}],"droppedAttributesCount":1}],"links":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"1112131415161718","traceState":"s","attributes":[],"droppedAttributesCount":3,"flags":256}],"status":{"message":"m","code":1}}`},
		{"log record", lr, `{"timeUnixNano":"1","observedTimeUnixNano":"2","severityNumber":"SEVERITY_NUMBER_INFO","severityText":"Info","body":{"stringValue":"b"},"attributes":[{"key":"a","value":{"intValue":"-5"}}],"droppedAttributesCount":1,"flags":1,"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"1112131415161718","eventName":"ev"}`},
		{"log record snake", lr, `{"time_unix_nano":1,"observed_time_unix_nano":2,"severity_number":9,"severity_text":"Info","dropped_attributes_count":1,"trace_id":"0102030405060708090a0b0c0d0e0f10","span_id":"1112131415161718","event_name":"ev"}`},
		{"doubles", dp, `{"asDouble":1.5},{"asDouble":"NaN"},{"asDouble":"Infinity"},{"asDouble":"-Infinity"},{"asDouble":"2.5"},{"asDouble":-0},{"asDouble":1e308},{"asDouble":5e-324},{"asDouble":1e-400},{"asDouble":12345678901234567890}`},
		{"ints", dp, `{"asInt":"-9223372036854775808"},{"asInt":9223372036854775807},{"as_int":"12"},{"asInt":1e18}`},
		{"oneof null then other member", dp, `{"asDouble":null,"asInt":"3"}`},
		{"exemplars", dp, `{"exemplars":[{"filteredAttributes":[{"key":"a","value":{"boolValue":true}}],"timeUnixNano":"1","asDouble":2,"spanId":"0102030405060708","traceId":"0102030405060708090a0b0c0d0e0f10"},{"asInt":"3","filtered_attributes":[],"time_unix_nano":"2","span_id":"","trace_id":null}]}`},
		{"any values", attr, `{"arrayValue":{"values":[{"stringValue":"s"},{"boolValue":false},{"intValue":7},{"doubleValue":"NaN"},{"bytesValue":"AQID"},{"kvlistValue":{"values":[{"key":"n","value":{"arrayValue":{"values":[{"arrayValue":{}}]}}}]}},{}]}}`},
		{"bytes spellings", attr, `{"arrayValue":{"values":[{"bytesValue":"AQI="},{"bytesValue":"AQI"},{"bytesValue":"-_8"},{"bytesValue":""},{"bytes_value":"AQ\nID"}]}}`},
		{"any value snake", attr, `{"string_value":"s"}`},
		{"strindex", attr, `{"stringValueStrindex":3}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := []byte(fmt.Sprintf(c.format, c.in))
			checkSame(t, signalFor(t, in), in, c.name)
		})
	}
}

// TestDecodeAttributeShapes covers the attribute fast path and every way
// of leaving it.
func TestDecodeAttributeShapes(t *testing.T) {
	const attr = `{"resourceLogs":[{"resource":{"attributes":[%s]}}]}`
	for _, kv := range []string{
		`{"key":"k","value":{"stringValue":"v"}}`,
		`{"key":"k","value":{"stringValue":"v"},"keyStrindex":3}`,
		`{"key":"k","value":{"stringValue":"v"} }`,
		`{"key":"k","value": {"stringValue":"v" } }`,
		`{"key":"k","value":{"stringValue":"v","x":1}}`,
		`{"key":"k","value":{"intValue":"1"}}`,
		`{"key":"k","value":null}`,
		`{"key":"k","value":{}}`,
		`{"key":"k"}`,
		`{"key":"k","keyStrindex":1,"value":{"stringValue":"v"}}`,
		`{"key":"k\n","value":{"stringValue":"\u00e9"}}`,
		`{"key":"k","value":{"stringValue":"v"},"unknown":{"key":"x"}}`,
		`{"value":{"stringValue":"v"},"key":"k"}`,
		`{"key" :"k","value":{"stringValue":"v"}}`,
		`{"key":"k","value":{"string_value":"v"}}`,
		`{"key":"k","value":{"stringValue":null}}`,
		`{"key":"k","value":{"stringValue":null,"boolValue":true}}`,
	} {
		in := []byte(fmt.Sprintf(attr, kv+","+kv))
		checkSame(t, signals[2], in, kv)
	}
	for _, kv := range []string{
		`{"key":"k","value":{"stringValue":"v"},"key":"j"}`,
		`{"key":"k","value":{"stringValue":"v"},"value":{}}`,
		`{"key":"k","value":{"stringValue":"v",}}`,
		`{"key":"k","value":{"stringValue":"v"},}`,
		`{"key":"k","value":{"stringValue":"v"}`,
		`{"key":"k","value":{"stringValue":"v` + "\xff" + `"}}`,
		`{"key":"k","value":{"stringValue":"v"} "x"}`,
	} {
		in := []byte(fmt.Sprintf(attr, kv))
		if _, err := DecodeLogs(in); err == nil {
			t.Errorf("%s: no error", kv)
		}
		if _, err := pjDecodeLogs(in); err == nil {
			t.Errorf("%s: protojson path accepts it", kv)
		}
	}
}

// TestDecodeNestedFallbackLinear makes sure leaving the fast path does not
// decode nested values again: with a space before each closing brace,
// re-decoding would take time exponential in the depth.
func TestDecodeNestedFallbackLinear(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"resourceLogs":[{"resource":{"attributes":[`)
	const depth = 200
	for range depth {
		b.WriteString(`{"key":"k","value":{"kvlistValue":{"values":[`)
	}
	b.WriteString(`{"key":"k","value":{"stringValue":"v"} }`)
	for range depth {
		b.WriteString(`]}} }`)
	}
	b.WriteString(`]}}]}`)
	in := []byte(b.String())
	checkSame(t, signals[2], in, "nested")
}

func TestDecodeMetricsShapes(t *testing.T) {
	for _, in := range []string{
		`{"resource_metrics":[{"resource":{"attributes":[{"key":"a","value":{"stringValue":"b"}}],"droppedAttributesCount":2,"entityRefs":[{"schemaUrl":"s","type":"t","idKeys":["a","b"],"descriptionKeys":["c"]}]},"schemaUrl":"r","scopeMetrics":[{"scope":{"name":"n","version":"v","attributes":[],"droppedAttributesCount":1},"schemaUrl":"s"}]}]}`,
		`{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"s","description":"d","unit":"1","sum":{"dataPoints":[{"attributes":[],"startTimeUnixNano":"1","timeUnixNano":"2","asDouble":1,"flags":1}],"aggregationTemporality":"AGGREGATION_TEMPORALITY_CUMULATIVE","isMonotonic":true},"metadata":[{"key":"prometheus.type","value":{"stringValue":"counter"}}]}]}]}]}`,
		`{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"histogram":{"dataPoints":[{"count":"3","sum":0,"bucketCounts":["1",2,"0"],"explicitBounds":[0.5,"1","Infinity"],"min":-1,"max":null,"flags":1}],"aggregation_temporality":1}}]}]}]}`,
		`{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"exponential_histogram":{"data_points":[{"count":"3","sum":1.5,"scale":-3,"zero_count":"1","positive":{"offset":-2,"bucket_counts":["1","2"]},"negative":{},"min":0,"max":2,"zero_threshold":1e-9,"exemplars":[]}],"aggregationTemporality":2}}]}]}]}`,
		`{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"summary":{"dataPoints":[{"count":"2","sum":3,"quantileValues":[{"quantile":0.5,"value":1},{}],"flags":null}]}}]}]}]}`,
		`{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"gauge":{}},{"sum":{}},{"histogram":{}},{"exponentialHistogram":{}},{"summary":{}},{"gauge":null,"sum":{}}]}]}]}`,
		`{}`, ` {"resourceMetrics":[]} `, `{"resourceMetrics":null}`, `{"resourceMetrics":[{}]}`,
	} {
		checkSame(t, signals[0], []byte(in), in)
	}
}

// TestDecodeUnknownFieldsNotChecked shows the one place the new decoder is
// more lenient than the protojson path: that path rewrote every member named
// like an id, so a bad id inside an unknown field was an error. Unknown
// fields are now skipped whatever they hold (after a syntax check).
func TestDecodeUnknownFieldsNotChecked(t *testing.T) {
	in := []byte(`{"resourceSpans":[{"resource":{"traceId":"zz"},"scopeSpans":[{"spans":[{"x":{"spanId":"abc"},"name":"n"}]}]}]}`)
	if _, err := pjDecodeTraces(in); err == nil {
		t.Fatal("protojson path accepts bad ids in unknown fields; test is vacuous")
	}
	req, err := DecodeTraces(in)
	if err != nil {
		t.Fatal(err)
	}
	if got := req.ResourceSpans[0].ScopeSpans[0].Spans[0].Name; got != "n" {
		t.Errorf("name %q", got)
	}
}

func TestDecodeIDs(t *testing.T) {
	req, err := DecodeTraces([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0102030405060708090A0b0c0d0e0f10","spanId":"","parentSpanId":"ffffffffffffffff"}]}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	s := req.ResourceSpans[0].ScopeSpans[0].Spans[0]
	if !bytes.Equal(s.TraceId, []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}) || s.SpanId != nil || !bytes.Equal(s.ParentSpanId, bytes.Repeat([]byte{0xff}, 8)) {
		t.Errorf("ids %x %x %x", s.TraceId, s.SpanId, s.ParentSpanId)
	}
	// Ids share storage; appending to one must not clobber another.
	s.TraceId = append(s.TraceId, 0xee)
	if !bytes.Equal(s.ParentSpanId, bytes.Repeat([]byte{0xff}, 8)) {
		t.Errorf("append to an id changed the next id: %x", s.ParentSpanId)
	}
}

// TestDecodeListsIndependent checks that lists carved from shared storage
// do not alias: appending to one leaves its neighbours alone.
func TestDecodeListsIndependent(t *testing.T) {
	req, err := DecodeLogs([]byte(`{"resourceLogs":[{"resource":{"attributes":[{"key":"a"},{"key":"b"}]},"scopeLogs":[{"scope":{"attributes":[{"key":"c"}]},"logRecords":[{"attributes":[{"key":"d"},{"key":"e","value":{"kvlistValue":{"values":[{"key":"f"},{"key":"g","value":{"kvlistValue":{"values":[{"key":"h"}]}}}]}}}]}]}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	ra := req.ResourceLogs[0].Resource.Attributes
	sa := req.ResourceLogs[0].ScopeLogs[0].Scope.Attributes
	la := req.ResourceLogs[0].ScopeLogs[0].LogRecords[0].Attributes
	if len(ra) != 2 || len(sa) != 1 || len(la) != 2 || ra[1].Key != "b" || sa[0].Key != "c" || la[0].Key != "d" {
		t.Fatalf("lists: %v %v %v", ra, sa, la)
	}
	nested := la[1].Value.GetKvlistValue().Values
	if len(nested) != 2 || nested[0].Key != "f" || nested[1].Value.GetKvlistValue().Values[0].Key != "h" {
		t.Fatalf("nested list: %v", nested)
	}
	_ = append(ra, &commonpb.KeyValue{Key: "x"})
	_ = append(nested, &commonpb.KeyValue{Key: "y"})
	if sa[0].Key != "c" || la[0].Key != "d" || la[1].Key != "e" {
		t.Errorf("append clobbered a neighbouring list: %v %v", sa, la)
	}
}

func TestDecodeErrorsNew(t *testing.T) {
	const sp = `{"resourceSpans":[{"scopeSpans":[{"spans":[%s]}]}]}`
	const dp = `{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{},{"sum":{"dataPoints":[%s]}}]}]}]}`
	const attr = `{"resourceLogs":[{"resource":{"attributes":[{"key":"k"},{"key":"k","value":%s}]}}]}`
	cases := []struct {
		format, in string
		path, msg  string // the error must be "otlpwire: decode OTLP/JSON <signal>: <path>: at byte N: <msg...>"
	}{
		{dp, `{"asDouble":"x"}`, "resourceMetrics[0].scopeMetrics[0].metrics[1].sum.dataPoints[0].asDouble", "want a number"},
		{dp, `{"asDouble":true}`, "resourceMetrics[0].scopeMetrics[0].metrics[1].sum.dataPoints[0].asDouble", "want a number"},
		{dp, `{"asDouble":1e400}`, "resourceMetrics[0].scopeMetrics[0].metrics[1].sum.dataPoints[0].asDouble", "range"},
		{dp, `{"asDouble":1,"asInt":"2"}`, "resourceMetrics[0].scopeMetrics[0].metrics[1].sum.dataPoints[0].asInt", "oneof"},
		{dp, `{"timeUnixNano":"1","time_unix_nano":"2"}`, "resourceMetrics[0].scopeMetrics[0].metrics[1].sum.dataPoints[0].timeUnixNano", "duplicate"},
		{dp, `{"timeUnixNano":null,"timeUnixNano":"2"}`, "resourceMetrics[0].scopeMetrics[0].metrics[1].sum.dataPoints[0].timeUnixNano", "duplicate"},
		{dp, `{"timeUnixNano":"-1"}`, "resourceMetrics[0].scopeMetrics[0].metrics[1].sum.dataPoints[0].timeUnixNano", "unsigned 64-bit"},
		{dp, `{"timeUnixNano":"18446744073709551616"}`, "resourceMetrics[0].scopeMetrics[0].metrics[1].sum.dataPoints[0].timeUnixNano", "unsigned 64-bit"},
		{dp, `{"timeUnixNano":" 1"}`, "resourceMetrics[0].scopeMetrics[0].metrics[1].sum.dataPoints[0].timeUnixNano", "unsigned 64-bit"},
		{dp, `{"timeUnixNano":1.5}`, "resourceMetrics[0].scopeMetrics[0].metrics[1].sum.dataPoints[0].timeUnixNano", "unsigned 64-bit"},
		{dp, `{"flags":4294967296}`, "resourceMetrics[0].scopeMetrics[0].metrics[1].sum.dataPoints[0].flags", "unsigned 32-bit"},
		{dp, `{"asInt":"9223372036854775808"}`, "resourceMetrics[0].scopeMetrics[0].metrics[1].sum.dataPoints[0].asInt", "64-bit integer"},
		{dp, `{"attributes":{}}`, "resourceMetrics[0].scopeMetrics[0].metrics[1].sum.dataPoints[0].attributes", "want an array"},
		{dp, `{"attributes":[null]}`, "resourceMetrics[0].scopeMetrics[0].metrics[1].sum.dataPoints[0].attributes[0]", "want an object"},
		{dp, `1`, "resourceMetrics[0].scopeMetrics[0].metrics[1].sum.dataPoints[0]", "want an object"},
		{sp, `{"traceId":"zz"}`, "resourceSpans[0].scopeSpans[0].spans[0].traceId", "not hex"},
		{sp, `{"parentSpanId":"abc"}`, "resourceSpans[0].scopeSpans[0].spans[0].parentSpanId", "odd number of hex digits"},
		{sp, `{"trace_id":"AQID"}`, "resourceSpans[0].scopeSpans[0].spans[0].traceId", "not hex"},
		{sp, `{"spanId":1234}`, "resourceSpans[0].scopeSpans[0].spans[0].spanId", "want a hex string"},
		{sp, `{"kind":"SPAN_KIND_CLIENT","kind":1}`, "resourceSpans[0].scopeSpans[0].spans[0].kind", "duplicate"},
		{sp, `{"kind":2147483648}`, "resourceSpans[0].scopeSpans[0].spans[0].kind", "32-bit"},
		{sp, `{"kind":true}`, "resourceSpans[0].scopeSpans[0].spans[0].kind", "enum"},
		{sp, `{"kind":"SPAN_KIND_NOPE"}`, "resourceSpans[0].scopeSpans[0].spans[0].kind", "unknown enum name"},
		{sp, `{"kind":"2"}`, "resourceSpans[0].scopeSpans[0].spans[0].kind", "unknown enum name"},
		{sp, `{"status":{"code":"STATUS_CODE_NOPE"}}`, "resourceSpans[0].scopeSpans[0].spans[0].status.code", "unknown enum name"},
		{`{"resourceLogs":[{"scopeLogs":[{"logRecords":[%s]}]}]}`, `{"severityNumber":"SEVERITY_NUMBER_LOUD"}`, "resourceLogs[0].scopeLogs[0].logRecords[0].severityNumber", "unknown enum name"},
		{`{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"sum":{%s}}]}]}]}`, `"aggregationTemporality":"AGGREGATION_TEMPORALITY_SOMETIMES"`, "resourceMetrics[0].scopeMetrics[0].metrics[0].sum.aggregationTemporality", "unknown enum name"},
		{sp, `{"name":1}`, "resourceSpans[0].scopeSpans[0].spans[0].name", "want a string"},
		{sp, `{"name":"a` + "\x01" + `"}`, "resourceSpans[0].scopeSpans[0].spans[0].name", "control character"},
		{sp, `{"name":"a` + "\xff" + `"}`, "resourceSpans[0].scopeSpans[0].spans[0].name", "invalid UTF-8"},
		{sp, `{"name":"\ud800"}`, "resourceSpans[0].scopeSpans[0].spans[0].name", "escape"},
		{sp, `{"name":"\udc00\ud800"}`, "resourceSpans[0].scopeSpans[0].spans[0].name", "escape"},
		{sp, `{"name":"\x"}`, "resourceSpans[0].scopeSpans[0].spans[0].name", "escape"},
		{sp, `{"events":[{"timeUnixNano":"1"},{"name":[]}]}`, "resourceSpans[0].scopeSpans[0].spans[0].events[1].name", "want a string"},
		{sp, `{"links":[{"attributes":[{"key":"a","value":{"boolValue":"true"}}]}]}`, "resourceSpans[0].scopeSpans[0].spans[0].links[0].attributes[0].value.boolValue", "true or false"},
		{sp, `{"status":{"code":"STATUS_CODE_OK","message":{}}}`, "resourceSpans[0].scopeSpans[0].spans[0].status.message", "want a string"},
		{sp, `{"unknown":[1,2,}`, "resourceSpans[0].scopeSpans[0].spans[0].(unknown field)", "invalid value"},
		{sp, `{"name":"n",}`, "resourceSpans[0].scopeSpans[0].spans[0]", "want a field name"},
		{sp, `{"name" "n"}`, "resourceSpans[0].scopeSpans[0].spans[0]", "':'"},
		{sp, `{"name":"n" "kind":1}`, "resourceSpans[0].scopeSpans[0].spans[0]", "want ',' or '}'"},
		{sp, `{"kind":1x}`, "resourceSpans[0].scopeSpans[0].spans[0].kind", "invalid number"},
		{sp, `{"kind":nul}`, "resourceSpans[0].scopeSpans[0].spans[0].kind", "invalid value"},
		{attr, `{"bytesValue":"A"}`, "resourceLogs[0].resource.attributes[1].value.bytesValue", "not base64"},
		{attr, `{"intValue":"1e19"}`, "resourceLogs[0].resource.attributes[1].value.intValue", "64-bit integer"},
		{attr, `{"stringValue":"a","intValue":"1"}`, "resourceLogs[0].resource.attributes[1].value.intValue", "oneof"},
		{attr, `{"arrayValue":{"values":[{"doubleValue":"1x"}]}}`, "resourceLogs[0].resource.attributes[1].value.arrayValue.values[0].doubleValue", "want a number"},
		{attr, `{"kvlistValue":{"values":[{"key":"a","value":{"stringValue":"s"}},{"key":"b","value":{"stringValue":3}}]}}`, "resourceLogs[0].resource.attributes[1].value.kvlistValue.values[1].value.stringValue", "want a string"},
		{`{"resourceLogs":[{"scopeLogs":[{"logRecords":[%s]}]}]}`, `{"severityNumber":1.5}`, "resourceLogs[0].scopeLogs[0].logRecords[0].severityNumber", "enum"},
		{`{"resourceLogs":[{"scopeLogs":[{"logRecords":[%s]}]}]}`, `{"body":"text"}`, "resourceLogs[0].scopeLogs[0].logRecords[0].body", "want an object"},
	}
	for _, c := range cases {
		in := []byte(fmt.Sprintf(c.format, c.in))
		s := signalFor(t, in)
		_, err := s.decode(in)
		if err == nil {
			t.Errorf("%s: no error", in)
			continue
		}
		if _, perr := s.ref(in); perr == nil {
			t.Errorf("%s: protojson path accepts what the new decoder rejects (%v)", in, err)
		}
		prefix := "otlpwire: decode OTLP/JSON " + s.name + ": " + c.path + ": at byte "
		msg := err.Error()
		if !strings.HasPrefix(msg, prefix) || !strings.Contains(msg[len(prefix):], c.msg) {
			t.Errorf("%s:\n got error %q\nwant %q...%q", in, msg, prefix, c.msg)
		}
		checkOffset(t, in, msg)
	}
}

// checkOffset checks that the byte offset in an error is inside the input.
func checkOffset(t *testing.T, in []byte, msg string) {
	t.Helper()
	i := strings.Index(msg, "at byte ")
	if i < 0 {
		t.Errorf("%q: no byte offset", msg)
		return
	}
	rest := msg[i+len("at byte "):]
	j := strings.IndexByte(rest, ':')
	off, err := strconv.Atoi(rest[:j])
	if err != nil || off < 0 || off > len(in) {
		t.Errorf("%q: bad offset for %d bytes of input", msg, len(in))
	}
}

func TestDecodeSyntaxErrors(t *testing.T) {
	for _, in := range []string{
		``, ` `, `null`, `[]`, `"x"`, `{`, `{"resourceSpans"`, `{"resourceSpans":`, `{"resourceSpans":[`, `{"resourceSpans":[{}`,
		`{"resourceSpans":[{}]`, `{"resourceSpans":[{}],}`, `{"resourceSpans":[{},]}`, `{"resourceSpans":"x`, `{} {}`, `{}x`, `{}]`,
		`{"a":tru}`, `{"a":truex}`, `{"a":01}`, `{"a":1.}`, `{"a":-}`, `{"a":.5}`, `{"a":+1}`, `{"a":"\u12"}`, `{"a":"x` + "\n" + `"}`,
		`{"a":[1 2]}`, `{"a":{"b" 1}}`, `{"a":{1:2}}`, `{'a':1}`, `{"a":NaN}`, `{"a":Infinity}`, "\ufeff{}",
	} {
		_, err := DecodeTraces([]byte(in))
		if err == nil {
			t.Errorf("%q: no error", in)
			continue
		}
		if _, perr := pjDecodeTraces([]byte(in)); perr == nil {
			t.Errorf("%q: protojson path accepts it", in)
		}
		if !strings.HasPrefix(err.Error(), "otlpwire: decode OTLP/JSON traces: ") {
			t.Errorf("%q: %v", in, err)
		}
		checkOffset(t, []byte(in), err.Error())
	}
}

// TestDecodeErrorsHideValues checks that no error quotes the input: values
// are often secrets (tokens in resource attributes).
func TestDecodeErrorsHideValues(t *testing.T) {
	const secret = "s3cr3t-T0KEN"
	inputs := []string{
		`{"resourceSpans":[{"resource":{"attributes":[{"key":"Authorization","value":{"stringValue":"` + secret + `"}}]},"scopeSpans":[{"spans":[{"traceId":"` + secret + `"}]}]}]}`,
		`{"resourceSpans":[{"resource":{"attributes":[{"key":"Authorization","value":{"intValue":"` + secret + `"}}]}}]}`,
		`{"resourceSpans":[{"resource":{"attributes":[{"key":"Authorization","value":{"bytesValue":"` + secret + `!"}}]}}]}`,
		`{"resourceSpans":[{"resource":{"attributes":[{"key":"` + secret + `","value":{"doubleValue":"` + secret + `"}}]}}]}`,
		`{"resourceSpans":[{"` + secret + `":1,"resource":{"attributes":[{"key":"a","value":{"stringValue":"` + secret + "\xff" + `"}}]}}]}`,
		`{"resourceSpans":[{"scopeSpans":[{"spans":[{"kind":"` + secret + `","name":` + secret + `}]}]}]}`,
		`{"` + secret + `":{"` + secret + `":[` + secret + `]}}`,
	}
	for _, in := range inputs {
		_, err := DecodeTraces([]byte(in))
		if err == nil {
			t.Errorf("%s: no error", in)
			continue
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(strings.ToLower(err.Error()), "t0ken") {
			t.Errorf("error quotes the input: %v", err)
		}
	}
}

func TestDecodeDepthLimit(t *testing.T) {
	nested := func(n int) []byte {
		var b bytes.Buffer
		b.WriteString(`{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":`)
		for range n {
			b.WriteString(`{"arrayValue":{"values":[`)
		}
		b.WriteString(`{"intValue":"1"}`)
		for range n {
			b.WriteString(`]}}`)
		}
		b.WriteString(`}]}]}]}`)
		return b.Bytes()
	}
	// Both decoders take nesting up to protojson's recursion limit and
	// refuse it beyond, at the same depth.
	for _, n := range []int{100, 4996, 4997, 4998, 6000} {
		in := nested(n)
		_, err := DecodeLogs(in)
		_, perr := pjDecodeLogs(in)
		if (err == nil) != (perr == nil) {
			t.Errorf("depth %d: new error %v, protojson error %v", n, err, perr)
		}
		if (n <= 4997) != (err == nil) {
			t.Errorf("depth %d: error %v; want the limit between 4997 and 4998", n, err)
		}
		if n == 100 && err != nil {
			t.Errorf("depth %d: %v", n, err)
		}
		if n == 6000 && (err == nil || !strings.Contains(err.Error(), "nesting too deep")) {
			t.Errorf("depth %d: %v", n, err)
		}
	}
	// Skipped values are bounded too.
	deep := `{"x":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`
	if _, err := DecodeLogs([]byte(deep)); err == nil || !strings.Contains(err.Error(), "nesting too deep") {
		t.Errorf("deep unknown value: %v", err)
	}
}

func TestIntegralStringMatchesProtojson(t *testing.T) {
	// protojson's acceptance of integers in odd spellings, as decided by
	// the reference path; the new decoder must agree value for value.
	for _, n := range []string{"0", "-0", "1e0", "1E+2", "1.0", "1.50e1", "15e-1", "150e-1", "0.5e1", "0.05e2", "1e19", "1e20", "18446744073709551615",
		"18446744073709551616", "1.8446744073709551615e19", "-1", "1e-0", "1e+0", "100000000000000000000e-2", "0e99999999999", "1e2147483648", "5e-324"} {
		in := []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"startTimeUnixNano":` + n + `,"endTimeUnixNano":"` + n + `"}]}]}]}`)
		got, err := DecodeTraces(in)
		want, perr := pjDecodeTraces(in)
		if (err == nil) != (perr == nil) {
			t.Errorf("%s: new error %v, protojson error %v", n, err, perr)
			continue
		}
		if err == nil && !proto.Equal(got, want) {
			t.Errorf("%s: %v, protojson %v", n, got, want)
		}
	}
}

func TestDecodeStringsDoNotAliasInput(t *testing.T) {
	in := []byte(`{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"severityText":"Info","body":{"stringValue":"hello"}}]}]}]}`)
	req, err := DecodeLogs(in)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		in[i] = 'x' // the caller reuses its buffer
	}
	lr := req.ResourceLogs[0].ScopeLogs[0].LogRecords[0]
	if lr.SeverityText != "Info" || lr.Body.GetStringValue() != "hello" {
		t.Errorf("decoded strings changed with the input: %q %q", lr.SeverityText, lr.Body.GetStringValue())
	}
}
