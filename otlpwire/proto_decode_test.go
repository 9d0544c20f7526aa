package otlpwire_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/otelstep/otelstep/internal/otlptest"
	"github.com/otelstep/otelstep/otlpwire"
	"github.com/otelstep/otelstep/pipeline"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Tests of the reflection-free protobuf decoder (proto_decode.go) against
// proto.Unmarshal, the reference.

// newRequest is an empty export request of signal s.
func newRequest(s pipeline.Signal) proto.Message {
	switch s {
	case pipeline.Traces:
		return &coltracepb.ExportTraceServiceRequest{}
	case pipeline.Logs:
		return &collogspb.ExportLogsServiceRequest{}
	}
	return &colmetricspb.ExportMetricsServiceRequest{}
}

// reference decodes data with proto.Unmarshal, dropping unknown fields as
// the decoder does, and then refuses it as pdata does when an id is neither
// empty nor 16 (trace) or 8 (span) bytes long (hasBadID).
func reference(s pipeline.Signal, data []byte) (proto.Message, error) {
	m := newRequest(s)
	err := proto.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(data, m)
	if err == nil && hasBadID(m.ProtoReflect().Descriptor(), data) {
		err = errBadID
	}
	return m, err
}

var errBadID = errors.New("an id of a length pdata refuses")

// hasBadID reports whether data, a message of descriptor md that
// proto.Unmarshal accepts, holds a trace_id or span_id or parent_span_id
// (of a span, link, log record or exemplar) that is neither empty nor 16
// (trace) or 8 (span) bytes long, in any occurrence: pdata checks each id
// as it reads it, where proto.Unmarshal keeps the last. A known field of
// another wire type is an unknown field to proto.Unmarshal, so no id.
func hasBadID(md protoreflect.MessageDescriptor, data []byte) bool {
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			return false
		}
		m := protowire.ConsumeFieldValue(num, typ, data[n:])
		if m < 0 {
			return false
		}
		v, _ := protowire.ConsumeBytes(data[n : n+m])
		data = data[n+m:]
		fd := md.Fields().ByNumber(num)
		if fd == nil || typ != protowire.BytesType {
			continue
		}
		switch fd.Kind() {
		case protoreflect.MessageKind:
			if hasBadID(fd.Message(), v) {
				return true
			}
		case protoreflect.BytesKind:
			size := 0
			switch fd.Name() {
			case "trace_id":
				size = 16
			case "span_id", "parent_span_id":
				size = 8
			}
			if size > 0 && len(v) != 0 && len(v) != size {
				return true
			}
		}
	}
	return false
}

// compare decodes data with the decoder, strict (UnmarshalRequest) and
// lenient, and with reference (proto.Unmarshal and pdata's id rule).
// Lenient must agree with the reference exactly: both fail, or both
// succeed with proto.Equal results. Strict must too, except that it fails
// on a known field with an unexpected wire type, which proto.Unmarshal
// keeps as an unknown field (the documented difference besides ids). It
// returns the strict error.
func compare(t testing.TB, s pipeline.Signal, data []byte) error {
	t.Helper()
	want, werr := reference(s, data)
	lax, lerr := otlpwire.DecodeLenient(s, data)
	if (lerr == nil) != (werr == nil) {
		t.Fatalf("lenient decoder: error %v, proto.Unmarshal: error %v\ninput %x", lerr, werr, data)
	}
	if werr == nil && !proto.Equal(otlptest.RequestOf(lax), want) {
		t.Fatalf("lenient decoder and proto.Unmarshal differ\ninput %x\ngot  %v\nwant %v", data, otlptest.RequestOf(lax), want)
	}
	got, gerr := otlpwire.UnmarshalRequest(s, data)
	switch {
	case gerr != nil && werr == nil && !otlpwire.IsWireTypeError(gerr):
		t.Fatalf("decoder: %v; proto.Unmarshal succeeded\ninput %x", gerr, data)
	case gerr == nil && werr != nil:
		t.Fatalf("decoder succeeded; proto.Unmarshal: %v\ninput %x", werr, data)
	case gerr == nil && !proto.Equal(otlptest.RequestOf(got), want):
		t.Fatalf("decoder and proto.Unmarshal differ\ninput %x\ngot  %v\nwant %v", data, otlptest.RequestOf(got), want)
	}
	if gerr == nil {
		checkItemDecoders(t, got, data)
	}
	if gerr != nil && !strings.HasPrefix(gerr.Error(), s.String()+" export request: ") {
		t.Fatalf("error %q lacks the %q prefix", gerr, s.String()+" export request: ")
	}
	return gerr
}

// checkItemDecoders decodes every span and log record record of b with a
// SpanDecoder or LogRecordDecoder (as the OTLP/JSON encoder does, one after
// another with one decoder) and checks each against proto.Unmarshal of the
// same record.
func checkItemDecoders(t testing.TB, b *pipeline.Batch, data []byte) {
	t.Helper()
	var sd otlpwire.SpanDecoder
	for _, rs := range b.Traces {
		for _, ss := range rs.ScopeSpans {
			checkRecords(t, ss.Records, new(tracepb.Span), func(rec []byte) (proto.Message, error) { return sd.Decode(rec) }, data)
		}
	}
	var ld otlpwire.LogRecordDecoder
	for _, rl := range b.Logs {
		for _, sl := range rl.ScopeLogs {
			checkRecords(t, sl.Records, new(logspb.LogRecord), func(rec []byte) (proto.Message, error) { return ld.Decode(rec) }, data)
		}
	}
}

func checkRecords(t testing.TB, records []byte, want proto.Message, decode func([]byte) (proto.Message, error), data []byte) {
	t.Helper()
	for rec := range pipeline.Records(records).All() {
		proto.Reset(want)
		if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(rec, want); err != nil {
			t.Fatalf("a kept record does not unmarshal: %v\ninput %x", err, data)
		}
		got, err := decode(rec)
		if err != nil {
			t.Fatalf("item decoder: %v; proto.Unmarshal succeeded\ninput %x", err, data)
		}
		if !proto.Equal(got, want) {
			t.Fatalf("item decoder and proto.Unmarshal differ\ninput %x\ngot  %v\nwant %v", data, got, want)
		}
	}
}

// fixture is one collector-written OTLP/JSON line as an export request.
type fixture struct {
	name string
	sig  pipeline.Signal
	msg  proto.Message
	data []byte // proto.Marshal(msg)
}

// fixtures reads every JSONL fixture in testdata: OTLP/JSON lines written
// by the OpenTelemetry Collector (see testdata/README.md).
func fixtures(t testing.TB) []fixture {
	t.Helper()
	var files []string
	for _, dir := range []string{"testdata"} {
		m, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 5 {
		t.Fatalf("only %d fixture files", len(files))
	}
	var out []fixture
	seen := map[pipeline.Signal]int{}
	dup := map[string]bool{}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 16<<20)
		for line := 1; sc.Scan(); line++ {
			text := bytes.TrimSpace(sc.Bytes())
			if len(text) == 0 {
				continue
			}
			var msg proto.Message
			var sig pipeline.Signal
			switch {
			case bytes.Contains(text[:min(len(text), 40)], []byte("resourceSpans")):
				sig = pipeline.Traces
				msg, err = otlpwire.DecodeTraces(text)
			case bytes.Contains(text[:min(len(text), 40)], []byte("resourceLogs")):
				sig = pipeline.Logs
				msg, err = otlpwire.DecodeLogs(text)
			default:
				sig = pipeline.Metrics
				msg, err = otlpwire.DecodeMetrics(text)
			}
			if err != nil {
				t.Fatalf("%s:%d: %v", f, line, err)
			}
			data, err := proto.Marshal(msg)
			if err != nil {
				t.Fatal(err)
			}
			if dup[string(data)] { // a request may repeat in another fixture
				continue
			}
			dup[string(data)] = true
			out = append(out, fixture{fmt.Sprintf("%s:%d", filepath.Base(f), line), sig, msg, data})
			seen[sig]++
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []pipeline.Signal{pipeline.Traces, pipeline.Logs, pipeline.Metrics} {
		if seen[s] == 0 {
			t.Fatalf("no %s fixture", s)
		}
	}
	return out
}

func TestDecodeFixtures(t *testing.T) {
	for _, f := range fixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			buf := bytes.Clone(f.data)
			b, err := otlpwire.UnmarshalRequest(f.sig, buf)
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(otlptest.RequestOf(b), f.msg) {
				t.Fatalf("round trip differs\ngot  %v\nwant %v", otlptest.RequestOf(b), f.msg)
			}
			compare(t, f.sig, f.data)
			// The result must not alias the input: callers reuse buffers.
			for i := range buf {
				buf[i] = 0xAA
			}
			if !proto.Equal(otlptest.RequestOf(b), f.msg) {
				t.Fatal("result changed when the input buffer was overwritten")
			}
		})
	}
}

// counter hands out distinct non-zero values so that a field decoded into
// the wrong field (a wrong field number) makes the results differ.
type counter struct{ n uint64 }

func (c *counter) u64() uint64 { c.n++; return c.n*0x100000001 + 7 }
func (c *counter) u32() uint32 { c.n++; return uint32(c.n*65537 + 3) }
func (c *counter) i32() int32  { c.n++; return int32(c.n) }
func (c *counter) i64() int64  { c.n++; return -int64(c.n * 1e10) }
func (c *counter) f64() float64 {
	c.n++
	return float64(c.n) + 0.25
}
func (c *counter) str(prefix string) string { c.n++; return fmt.Sprintf("%s-%d-ü", prefix, c.n) }
func (c *counter) id(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		c.n++
		b[i] = byte(c.n)
	}
	return b
}
func (c *counter) fp() *float64 { v := c.f64(); return &v }

// attrs returns KeyValues holding every kind of AnyValue (nested arrays
// and kvlists included) and key_strindex.
func (c *counter) attrs() []*commonpb.KeyValue {
	sv := func() *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: c.str("v")}}
	}
	return []*commonpb.KeyValue{
		{Key: c.str("k"), Value: sv()},
		{Key: c.str("k"), Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: true}}},
		{Key: c.str("k"), Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: c.i64()}}},
		{Key: c.str("k"), Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: c.f64()}}},
		{Key: c.str("k"), Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: c.id(5)}}},
		{Key: c.str("k"), Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValueStrindex{StringValueStrindex: c.i32()}}},
		{KeyStrindex: c.i32(), Value: sv()},
		{Key: c.str("k"), Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{
			sv(), {Value: &commonpb.AnyValue_IntValue{IntValue: c.i64()}},
			{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{sv()}}}},
		}}}}},
		{Key: c.str("k"), Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: []*commonpb.KeyValue{
			{Key: c.str("k"), Value: sv()},
			{Key: c.str("k"), Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: []*commonpb.KeyValue{{Key: c.str("k"), Value: sv()}}}}}},
		}}}}},
	}
}

func (c *counter) resource() *resourcepb.Resource {
	return &resourcepb.Resource{Attributes: c.attrs(), DroppedAttributesCount: c.u32(), EntityRefs: []*commonpb.EntityRef{
		{SchemaUrl: c.str("url"), Type: c.str("type"), IdKeys: []string{c.str("id"), c.str("id")}, DescriptionKeys: []string{c.str("desc"), c.str("desc")}},
		{Type: c.str("type")},
	}}
}

func (c *counter) scope() *commonpb.InstrumentationScope {
	return &commonpb.InstrumentationScope{Name: c.str("scope"), Version: c.str("ver"), Attributes: c.attrs()[:3], DroppedAttributesCount: c.u32()}
}

// fullTraces sets every field of every message of a trace request.
func fullTraces() *coltracepb.ExportTraceServiceRequest {
	c := &counter{}
	span := func() *tracepb.Span {
		return &tracepb.Span{
			TraceId: c.id(16), SpanId: c.id(8), TraceState: c.str("ts"), ParentSpanId: c.id(8), Flags: c.u32(),
			Name: c.str("span"), Kind: tracepb.Span_SPAN_KIND_CONSUMER, StartTimeUnixNano: c.u64(), EndTimeUnixNano: c.u64(),
			Attributes: c.attrs(), DroppedAttributesCount: c.u32(),
			Events: []*tracepb.Span_Event{
				{TimeUnixNano: c.u64(), Name: c.str("ev"), Attributes: c.attrs()[:2], DroppedAttributesCount: c.u32()},
				{Name: c.str("ev")},
			},
			DroppedEventsCount: c.u32(),
			Links: []*tracepb.Span_Link{
				{TraceId: c.id(16), SpanId: c.id(8), TraceState: c.str("ts"), Attributes: c.attrs()[:2], DroppedAttributesCount: c.u32(), Flags: c.u32()},
				{SpanId: c.id(8)},
			},
			DroppedLinksCount: c.u32(),
			Status:            &tracepb.Status{Message: c.str("msg"), Code: tracepb.Status_STATUS_CODE_ERROR},
		}
	}
	return &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{
		{Resource: c.resource(), SchemaUrl: c.str("url"), ScopeSpans: []*tracepb.ScopeSpans{
			{Scope: c.scope(), SchemaUrl: c.str("url"), Spans: []*tracepb.Span{span(), span(), {}}},
			{Spans: []*tracepb.Span{span()}},
		}},
		{Resource: c.resource(), ScopeSpans: []*tracepb.ScopeSpans{{Scope: c.scope(), Spans: []*tracepb.Span{span()}}}},
		{},
	}}
}

// fullLogs sets every field of every message of a logs request.
func fullLogs() *collogspb.ExportLogsServiceRequest {
	c := &counter{}
	rec := func() *logspb.LogRecord {
		return &logspb.LogRecord{
			TimeUnixNano: c.u64(), ObservedTimeUnixNano: c.u64(), SeverityNumber: logspb.SeverityNumber_SEVERITY_NUMBER_WARN2,
			SeverityText: c.str("sev"), Body: c.attrs()[7].Value, Attributes: c.attrs(), DroppedAttributesCount: c.u32(),
			Flags: c.u32(), TraceId: c.id(16), SpanId: c.id(8), EventName: c.str("event"),
		}
	}
	return &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{
		{Resource: c.resource(), SchemaUrl: c.str("url"), ScopeLogs: []*logspb.ScopeLogs{
			{Scope: c.scope(), SchemaUrl: c.str("url"), LogRecords: []*logspb.LogRecord{rec(), rec(), {}}},
			{LogRecords: []*logspb.LogRecord{{Body: c.attrs()[8].Value}, {Body: &commonpb.AnyValue{}}}},
		}},
		{},
	}}
}

// fullMetrics sets every field of every message of a metrics request.
func fullMetrics() *colmetricspb.ExportMetricsServiceRequest {
	c := &counter{}
	exemplars := func() []*metricspb.Exemplar {
		return []*metricspb.Exemplar{
			{FilteredAttributes: c.attrs()[:2], TimeUnixNano: c.u64(), Value: &metricspb.Exemplar_AsDouble{AsDouble: c.f64()}, SpanId: c.id(8), TraceId: c.id(16)},
			{TimeUnixNano: c.u64(), Value: &metricspb.Exemplar_AsInt{AsInt: c.i64()}},
		}
	}
	numbers := func() []*metricspb.NumberDataPoint {
		return []*metricspb.NumberDataPoint{
			{Attributes: c.attrs(), StartTimeUnixNano: c.u64(), TimeUnixNano: c.u64(), Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: c.f64()}, Exemplars: exemplars(), Flags: c.u32()},
			{StartTimeUnixNano: c.u64(), TimeUnixNano: c.u64(), Value: &metricspb.NumberDataPoint_AsInt{AsInt: c.i64()}},
			{Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: math.Inf(-1)}},
			{},
		}
	}
	buckets := func() *metricspb.ExponentialHistogramDataPoint_Buckets {
		return &metricspb.ExponentialHistogramDataPoint_Buckets{Offset: -c.i32(), BucketCounts: []uint64{c.u64(), 0, 1, c.u64(), math.MaxUint64}}
	}
	metrics := []*metricspb.Metric{
		{Name: c.str("gauge"), Description: c.str("desc"), Unit: c.str("unit"), Metadata: c.attrs()[:3],
			Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: numbers()}}},
		{Name: c.str("sum"), Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{DataPoints: numbers(),
			AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA, IsMonotonic: true}}},
		{Name: c.str("hist"), Data: &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{
			AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE,
			DataPoints: []*metricspb.HistogramDataPoint{
				{Attributes: c.attrs(), StartTimeUnixNano: c.u64(), TimeUnixNano: c.u64(), Count: c.u64(), Sum: c.fp(),
					BucketCounts: []uint64{c.u64(), c.u64(), 0, c.u64()}, ExplicitBounds: []float64{c.f64(), math.NaN(), c.f64()},
					Exemplars: exemplars(), Flags: c.u32(), Min: c.fp(), Max: c.fp()},
				{Sum: new(float64), Min: new(float64), Max: new(float64)},
				{},
			}}}},
		{Name: c.str("exphist"), Data: &metricspb.Metric_ExponentialHistogram{ExponentialHistogram: &metricspb.ExponentialHistogram{
			AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA,
			DataPoints: []*metricspb.ExponentialHistogramDataPoint{
				{Attributes: c.attrs(), StartTimeUnixNano: c.u64(), TimeUnixNano: c.u64(), Count: c.u64(), Sum: c.fp(), Scale: -c.i32(),
					ZeroCount: c.u64(), Positive: buckets(), Negative: buckets(), Flags: c.u32(), Exemplars: exemplars(),
					Min: c.fp(), Max: c.fp(), ZeroThreshold: c.f64()},
				{Scale: c.i32(), Positive: &metricspb.ExponentialHistogramDataPoint_Buckets{}},
				{},
			}}}},
		{Name: c.str("summary"), Data: &metricspb.Metric_Summary{Summary: &metricspb.Summary{DataPoints: []*metricspb.SummaryDataPoint{
			{Attributes: c.attrs(), StartTimeUnixNano: c.u64(), TimeUnixNano: c.u64(), Count: c.u64(), Sum: c.f64(),
				QuantileValues: []*metricspb.SummaryDataPoint_ValueAtQuantile{{Quantile: 0.5, Value: c.f64()}, {Quantile: 0.99, Value: c.f64()}, {}},
				Flags:          c.u32()},
			{},
		}}}},
		{Name: c.str("empty")},
	}
	return &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{
		{Resource: c.resource(), SchemaUrl: c.str("url"), ScopeMetrics: []*metricspb.ScopeMetrics{
			{Scope: c.scope(), SchemaUrl: c.str("url"), Metrics: metrics},
			{Metrics: []*metricspb.Metric{{Name: c.str("x"), Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{}}}}},
		}},
		{},
	}}
}

// full is every signal's every-field request.
func full() []struct {
	sig pipeline.Signal
	msg proto.Message
} {
	return []struct {
		sig pipeline.Signal
		msg proto.Message
	}{{pipeline.Traces, fullTraces()}, {pipeline.Logs, fullLogs()}, {pipeline.Metrics, fullMetrics()}}
}

// uncovered lists the fields (and oneof members) of every message type
// reachable from m's type that no message in m sets to a non-default
// value: a new field in the generated code shows up here until the
// decoder and the table learn it.
func uncovered(m proto.Message) []string {
	set := map[protoreflect.FullName]bool{}
	var walk func(protoreflect.Message)
	walk = func(m protoreflect.Message) {
		m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			set[fd.FullName()] = true
			switch {
			case fd.IsList() && fd.Message() != nil:
				for i := range v.List().Len() {
					walk(v.List().Get(i).Message())
				}
			case fd.IsList():
				if v.List().Len() < 2 {
					set[fd.FullName()] = false // packed encoding needs two values to mean anything
				}
			case fd.Message() != nil:
				walk(v.Message())
			}
			return true
		})
	}
	walk(m.ProtoReflect())
	var missing []string
	seen := map[protoreflect.FullName]bool{}
	var all func(protoreflect.MessageDescriptor)
	all = func(md protoreflect.MessageDescriptor) {
		if seen[md.FullName()] {
			return
		}
		seen[md.FullName()] = true
		for i := range md.Fields().Len() {
			fd := md.Fields().Get(i)
			if !set[fd.FullName()] {
				missing = append(missing, string(fd.FullName()))
			}
			if fd.Message() != nil {
				all(fd.Message())
			}
		}
	}
	all(m.ProtoReflect().Descriptor())
	return missing
}

func TestDecodeEveryField(t *testing.T) {
	for _, tc := range full() {
		t.Run(tc.sig.String(), func(t *testing.T) {
			if missing := uncovered(tc.msg); len(missing) > 0 {
				t.Fatalf("the table sets no value for %v", missing)
			}
			data, err := proto.Marshal(tc.msg)
			if err != nil {
				t.Fatal(err)
			}
			b, err := otlpwire.UnmarshalRequest(tc.sig, data)
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(otlptest.RequestOf(b), tc.msg) {
				t.Fatalf("differs\ngot  %v\nwant %v", otlptest.RequestOf(b), tc.msg)
			}
			compare(t, tc.sig, data)
		})
	}
}

// Every repeated field comes back with capacity equal to length: an append
// by a consumer reallocates rather than overwriting a neighbour's elements,
// and so do the span records: appending to them cannot write into the body
// after them.
func TestDecodeExactCapacity(t *testing.T) {
	data, _ := proto.Marshal(fullTraces())
	b, err := otlpwire.UnmarshalRequest(pipeline.Traces, data)
	if err != nil {
		t.Fatal(err)
	}
	if cap(b.Traces) != len(b.Traces) {
		t.Errorf("resource spans: len %d cap %d", len(b.Traces), cap(b.Traces))
	}
	checked := 0
	for _, rs := range b.Traces {
		if kvs := rs.Resource.GetAttributes(); cap(kvs) != len(kvs) {
			t.Errorf("resource attributes: len %d cap %d", len(kvs), cap(kvs))
		}
		if cap(rs.ScopeSpans) != len(rs.ScopeSpans) {
			t.Errorf("scope spans: len %d cap %d", len(rs.ScopeSpans), cap(rs.ScopeSpans))
		}
		for _, ss := range rs.ScopeSpans {
			if len(ss.Spans) != 0 {
				t.Errorf("%d spans decoded as messages, want them kept as records", len(ss.Spans))
			}
			if recs := ss.Records; len(recs) > 0 {
				if cap(recs) != len(recs) {
					t.Errorf("span records: len %d cap %d", len(recs), cap(recs))
				}
				checked++
			}
		}
	}
	if checked == 0 {
		t.Fatal("no span records")
	}
}

// Wire-format builders for inputs proto.Marshal does not write.
func tag(num int, wt protowire.Type) []byte {
	return protowire.AppendTag(nil, protowire.Number(num), wt)
}

func field(num int, payload []byte) []byte {
	return protowire.AppendBytes(tag(num, protowire.BytesType), payload)
}

func cat(bs ...[]byte) []byte { return bytes.Join(bs, nil) }

func marshal(m proto.Message) []byte {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// inSpan wraps an encoded Span into a trace request.
func inSpan(span []byte) []byte { return field(1, field(2, field(2, span))) }

// inHistPoint wraps an encoded HistogramDataPoint into a metrics request.
func inHistPoint(dp []byte) []byte {
	return field(1, field(2, field(2, cat(field(1, []byte("h")), field(9, field(1, dp))))))
}

func fixed64s(num int, vs ...uint64) []byte {
	var b []byte
	for _, v := range vs {
		b = protowire.AppendFixed64(append(b, tag(num, protowire.Fixed64Type)...), v)
	}
	return b
}

func packed64(num int, vs ...uint64) []byte {
	var p []byte
	for _, v := range vs {
		p = protowire.AppendFixed64(p, v)
	}
	return field(num, p)
}

func TestDecodePackedAndUnpacked(t *testing.T) {
	f := math.Float64bits
	cases := map[string][]byte{
		"histogram unpacked":     inHistPoint(cat(fixed64s(6, 1, 2, 3), fixed64s(7, f(0.5), f(1.5)))),
		"histogram mixed":        inHistPoint(cat(packed64(6, 1, 2), fixed64s(6, 3), packed64(6, 4, 5), fixed64s(7, f(0.5)), packed64(7, f(1.5), f(2.5)))),
		"histogram empty packed": inHistPoint(cat(field(6, nil), field(7, nil), packed64(6, 9), field(6, nil))),
	}
	expHist := func(buckets []byte) []byte {
		return field(1, field(2, field(2, cat(field(1, []byte("e")), field(10, field(1, field(8, buckets)))))))
	}
	var packedVarints []byte
	for _, v := range []uint64{0, 1, 300, math.MaxUint64} {
		packedVarints = protowire.AppendVarint(packedVarints, v)
	}
	unpacked := cat(tag(2, protowire.VarintType), protowire.AppendVarint(nil, 7), tag(2, protowire.VarintType), protowire.AppendVarint(nil, 1<<40))
	cases["exponential buckets packed"] = expHist(field(2, packedVarints))
	cases["exponential buckets unpacked"] = expHist(unpacked)
	cases["exponential buckets mixed"] = expHist(cat(unpacked, field(2, packedVarints), unpacked))
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			if err := compare(t, pipeline.Metrics, data); err != nil {
				t.Fatal(err)
			}
		})
	}
	// And the values are what was written, in order.
	b, err := otlpwire.UnmarshalRequest(pipeline.Metrics, cases["histogram mixed"])
	if err != nil {
		t.Fatal(err)
	}
	dp := b.Metrics[0].ScopeMetrics[0].Metrics[0].GetHistogram().DataPoints[0]
	if fmt.Sprint(dp.BucketCounts, dp.ExplicitBounds) != "[1 2 3 4 5] [0.5 1.5 2.5]" {
		t.Fatalf("got %v %v", dp.BucketCounts, dp.ExplicitBounds)
	}
	b, err = otlpwire.UnmarshalRequest(pipeline.Metrics, cases["exponential buckets mixed"])
	if err != nil {
		t.Fatal(err)
	}
	got := b.Metrics[0].ScopeMetrics[0].Metrics[0].GetExponentialHistogram().DataPoints[0].Positive.BucketCounts
	if fmt.Sprint(got) != fmt.Sprint([]uint64{7, 1 << 40, 0, 1, 300, math.MaxUint64, 7, 1 << 40}) {
		t.Fatalf("got %v", got)
	}
	// Malformed packed payloads fail, as in proto.Unmarshal.
	for name, data := range map[string][]byte{
		"fixed64 length not a multiple of 8": inHistPoint(field(6, make([]byte, 12))),
		"double length not a multiple of 8":  inHistPoint(field(7, make([]byte, 7))),
		"truncated varint":                   expHist(field(2, []byte{1, 0x80})),
		"overlong varint":                    expHist(field(2, bytes.Repeat([]byte{0xff}, 11))),
	} {
		if err := compare(t, pipeline.Metrics, data); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// Repeated occurrences of a singular message field merge, as in
// proto.Unmarshal; scalars are last-one-wins; a oneof member replaces
// another and merges into itself.
func TestDecodeMerge(t *testing.T) {
	kv := func(k, v string) []byte {
		return marshal(&commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}})
	}
	res1 := cat(field(1, kv("a", "1")), tag(2, protowire.VarintType), []byte{5}, field(3, marshal(&commonpb.EntityRef{Type: "t1"})))
	res2 := cat(field(1, kv("b", "2")), field(3, marshal(&commonpb.EntityRef{Type: "t2"})))
	scope1 := marshal(&commonpb.InstrumentationScope{Name: "n", Version: "v1", DroppedAttributesCount: 3})
	scope2 := cat(marshal(&commonpb.InstrumentationScope{Version: "v2"}), field(3, kv("c", "3")))
	status1 := marshal(&tracepb.Status{Message: "first", Code: tracepb.Status_STATUS_CODE_OK})
	status2 := marshal(&tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR})
	kvlist := func(k, v string) []byte { return field(6, field(1, kv(k, v))) }
	array := func(v string) []byte { return field(5, field(1, field(1, []byte(v)))) }
	value := func(av []byte) []byte { return field(9, cat(field(1, []byte("key")), field(2, av))) }
	span := cat(
		field(5, []byte("old name")), field(15, status1), field(5, []byte("new name")), field(15, status2),
		value(kvlist("x", "1")), value(cat(kvlist("y", "2"), kvlist("z", "3"))), // same member: merged
		value(cat(array("a"), field(1, []byte("s")))), // another member: replaced
		value(cat(field(1, []byte("s")), array("a"), array("b"))),
		value(cat(kvlist("x", "1"))), value(array("c")), // across KeyValue.value occurrences
		field(9, cat(field(1, []byte("k")), field(2, kvlist("p", "1")), field(2, kvlist("q", "2")))),
	)
	traces := cat(
		field(1, cat(field(1, res1), field(2, cat(field(1, scope1), field(2, span), field(1, scope2))), field(1, res2), field(3, []byte("u1")), field(3, []byte("u2")))),
	)
	if err := compare(t, pipeline.Traces, traces); err != nil {
		t.Fatal(err)
	}
	b, _ := otlpwire.UnmarshalRequest(pipeline.Traces, traces)
	rs := b.Traces[0]
	if len(rs.Resource.Attributes) != 2 || len(rs.Resource.EntityRefs) != 2 || rs.Resource.DroppedAttributesCount != 5 || rs.SchemaURL != "u2" {
		t.Fatalf("resource not merged: %v", rs)
	}
	ss := rs.ScopeSpans[0]
	if ss.Scope.Name != "n" || ss.Scope.Version != "v2" || ss.Scope.DroppedAttributesCount != 3 || len(ss.Scope.Attributes) != 1 {
		t.Fatalf("scope not merged: %v", ss.Scope)
	}
	// The span is kept as its record: merged when the encoders decode it.
	rec, ok := firstRecord(ss.Records)
	if !ok {
		t.Fatal("no span record")
	}
	var dec otlpwire.SpanDecoder
	s, err := dec.Decode(rec)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "new name" || s.Status.Message != "first" || s.Status.Code != tracepb.Status_STATUS_CODE_ERROR {
		t.Fatalf("span: %v", s)
	}
	if n := len(s.Attributes[1].Value.GetKvlistValue().Values); n != 2 {
		t.Fatalf("kvlist not merged: %d values", n)
	}
	if s.Attributes[2].Value.GetStringValue() != "s" || len(s.Attributes[3].Value.GetArrayValue().Values) != 2 {
		t.Fatalf("oneof: %v", s.Attributes[2:4])
	}

	// A metric's data: the same member merges, another replaces; buckets merge.
	gauge := func(v float64) []byte {
		return field(5, field(1, marshal(&metricspb.NumberDataPoint{Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: v}})))
	}
	sum := field(7, marshal(&metricspb.Sum{IsMonotonic: true}))
	buckets := cat(field(8, marshal(&metricspb.ExponentialHistogramDataPoint_Buckets{Offset: 3, BucketCounts: []uint64{1}})),
		field(8, marshal(&metricspb.ExponentialHistogramDataPoint_Buckets{BucketCounts: []uint64{2}})))
	metrics := field(1, field(2, cat(
		field(2, cat(field(1, []byte("g")), gauge(1), gauge(2))),
		field(2, cat(gauge(1), sum)),
		field(2, cat(sum, gauge(3))),
		field(2, field(10, field(1, buckets))),
	)))
	if err := compare(t, pipeline.Metrics, metrics); err != nil {
		t.Fatal(err)
	}
	b, _ = otlpwire.UnmarshalRequest(pipeline.Metrics, metrics)
	ms := b.Metrics[0].ScopeMetrics[0].Metrics
	if len(ms[0].GetGauge().DataPoints) != 2 || ms[1].GetSum() == nil || len(ms[2].GetGauge().DataPoints) != 1 {
		t.Fatalf("metric data: %v", ms)
	}
	if pos := ms[3].GetExponentialHistogram().DataPoints[0].Positive; pos.Offset != 3 || len(pos.BucketCounts) != 2 {
		t.Fatalf("buckets: %v", pos)
	}

	// A log body merges too.
	logs := field(1, field(2, field(2, cat(field(5, kvlist("a", "1")), field(5, kvlist("b", "2"))))))
	if err := compare(t, pipeline.Logs, logs); err != nil {
		t.Fatal(err)
	}
}

// Unknown fields of every wire type, groups included, and reserved field
// numbers are skipped at every level.
func TestDecodeUnknownFields(t *testing.T) {
	unknown := cat(
		tag(1000, protowire.VarintType), protowire.AppendVarint(nil, 1<<50),
		tag(1001, protowire.Fixed64Type), protowire.AppendFixed64(nil, 1),
		tag(1002, protowire.Fixed32Type), protowire.AppendFixed32(nil, 1),
		field(1003, []byte("\xff not UTF-8 is fine in an unknown field")),
		tag(1004, protowire.StartGroupType), tag(1, protowire.VarintType), []byte{1},
		tag(2, protowire.StartGroupType), tag(2, protowire.EndGroupType), tag(1004, protowire.EndGroupType),
		tag(int(protowire.MaxValidNumber), protowire.VarintType), []byte{0},
	)
	status := cat(tag(1, protowire.VarintType), []byte{2}, unknown, field(2, []byte("m"))) // field 1 is reserved
	kv := cat(field(1, []byte("k")), unknown, field(2, cat(unknown, field(1, []byte("v")), unknown)))
	span := cat(unknown, field(5, []byte("name")), unknown, field(9, kv), field(15, status), field(17, []byte("x")))
	traces := cat(unknown, field(1, cat(unknown, field(1, cat(unknown, field(1, kv))), field(2, cat(unknown, field(1, unknown), field(2, span))))), unknown)
	if err := compare(t, pipeline.Traces, traces); err != nil {
		t.Fatal(err)
	}
	b, _ := otlpwire.UnmarshalRequest(pipeline.Traces, traces)
	rec, _ := firstRecord(b.Traces[0].ScopeSpans[0].Records)
	var dec otlpwire.SpanDecoder
	s, err := dec.Decode(rec)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "name" || s.Status.Message != "m" || s.Attributes[0].Value.GetStringValue() != "v" {
		t.Fatalf("span: %v", s)
	}
	dp := cat(tag(1, protowire.BytesType), []byte{0}, unknown, fixed64s(4, 9)) // field 1 is reserved
	if err := compare(t, pipeline.Metrics, inHistPoint(dp)); err != nil {
		t.Fatal(err)
	}
	logs := field(1, field(2, field(2, cat(tag(4, protowire.VarintType), []byte{1}, unknown, field(12, []byte("ev"))))))
	if err := compare(t, pipeline.Logs, logs); err != nil {
		t.Fatal(err)
	}
}

func decodeError(t *testing.T, err error) *otlpwire.DecodeError {
	t.Helper()
	var e *otlpwire.DecodeError
	if !errors.As(err, &e) {
		t.Fatalf("not a *otlpwire.DecodeError: %v", err)
	}
	return e
}

// Errors name the field path and the byte offset.
func TestDecodeErrors(t *testing.T) {
	req := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{
		{Spans: []*tracepb.Span{{Name: "a"}}},
		{Spans: []*tracepb.Span{{Name: "b"}, {Name: "c"}, {Name: "d"}, {Name: "BAD-\xff", Attributes: []*commonpb.KeyValue{{Key: "k"}}}}},
	}}}}
	if _, err := proto.Marshal(req); err == nil {
		t.Fatal("proto.Marshal accepted invalid UTF-8")
	}
	// The same request built by hand.
	span := func(name string) []byte { return field(5, []byte(name)) }
	data := field(1, cat(
		field(2, field(2, span("a"))),
		field(2, cat(field(2, span("b")), field(2, span("c")), field(2, span("d")), field(2, cat(span("BAD-\xff"), field(9, field(1, []byte("k"))))))),
	))
	err := compare(t, pipeline.Traces, data)
	bad := bytes.IndexByte(data, 0xff)
	want := fmt.Sprintf("traces export request: resource_spans[0].scope_spans[1].spans[3].name: invalid UTF-8 at byte %d", bad)
	if err == nil || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
	if e := decodeError(t, err); e.Offset != bad || e.Path != "resource_spans[0].scope_spans[1].spans[3].name" {
		t.Fatalf("%+v", e)
	}

	at := func(sub string, delta int) func([]byte) int {
		return func(data []byte) int { return bytes.Index(data, []byte(sub)) + delta }
	}
	fixed := func(off int) func([]byte) int { return func([]byte) int { return off } }
	for _, tc := range []struct {
		name string
		sig  pipeline.Signal
		data []byte
		want string           // the error after "<signal> export request: ", with %d for the offset
		at   func([]byte) int // the offset
	}{
		{"invalid UTF-8 in an attribute value", pipeline.Traces,
			inSpan(cat(span("ok"), field(9, cat(field(1, []byte("k")), field(2, field(6, field(1, cat(field(1, []byte("k2")), field(2, field(1, []byte("x\xfe"))))))))))),
			"resource_spans[0].scope_spans[0].spans[0].attributes[0].value.kvlist_value.values[0].value.string_value: invalid UTF-8 at byte %d", at("\xfe", 0)},
		{"length past the enclosing message", pipeline.Traces,
			field(1, field(2, cat(field(2, span("a")), []byte{0x12, 0x7f}))),
			"resource_spans[0].scope_spans[0].spans[1]: length 127 exceeds the 0 bytes left at byte %d", fixed(10)},
		{"truncated fixed64", pipeline.Logs,
			field(1, field(2, field(2, cat(tag(1, protowire.Fixed64Type), []byte("@1234"))))),
			"resource_logs[0].scope_logs[0].log_records[0].time_unix_nano: truncated fixed64: 5 bytes left at byte %d", at("@", 0)},
		{"overlong varint", pipeline.Metrics,
			field(1, field(2, field(2, cat(field(1, []byte("m")), field(7, cat(tag(2, protowire.VarintType), bytes.Repeat([]byte{0xff}, 10))))))),
			"resource_metrics[0].scope_metrics[0].metrics[0].sum.aggregation_temporality: malformed varint: variable length integer overflow at byte %d", at("\xff", 0)},
		{"field number 0", pipeline.Traces, cat(field(1, nil), []byte{0, 0}),
			"invalid field number 0 at byte %d", fixed(2)},
		{"end-group tag", pipeline.Traces, inSpan(cat(span("a"), tag(7, protowire.EndGroupType))),
			"resource_spans[0].scope_spans[0].spans[0]: unexpected end-group tag for field 7 at byte %d", fixed(9)},
		{"reserved wire type", pipeline.Logs, tag(9, 6),
			"malformed unknown field 9 (wire type 6): cannot parse reserved wire type at byte %d", fixed(0)},
		{"truncated tag", pipeline.Traces, []byte{0x0a, 0x01, 0x80},
			"resource_spans[0]: malformed tag: unexpected EOF at byte %d", fixed(2)},
		{"wrong wire type", pipeline.Traces, inSpan(cat(span("a"), tag(5, protowire.VarintType), []byte{1})),
			"resource_spans[0].scope_spans[0].spans[0].name: unexpected wire type varint at byte %d", fixed(9)},
		{"wrong wire type of a packed field", pipeline.Metrics, inHistPoint(cat(tag(6, protowire.Fixed32Type), []byte("@123"))),
			"resource_metrics[0].scope_metrics[0].metrics[0].histogram.data_points[0].bucket_counts: unexpected wire type fixed32 at byte %d", at("@", -1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := compare(t, tc.sig, tc.data)
			if err == nil {
				t.Fatal("no error")
			}
			want := fmt.Sprintf(tc.want, tc.at(tc.data))
			if got := strings.TrimPrefix(err.Error(), tc.sig.String()+" export request: "); got != want {
				t.Fatalf("got  %s\nwant %s", got, want)
			}
			if e := decodeError(t, err); e.Offset != tc.at(tc.data) {
				t.Fatalf("offset %d", e.Offset)
			}
		})
	}
	// The documented difference: proto.Unmarshal keeps a known field with an
	// unexpected wire type as an unknown field.
	data = inSpan(cat(span("a"), tag(5, protowire.VarintType), []byte{1}))
	if _, err := reference(pipeline.Traces, data); err != nil {
		t.Fatalf("proto.Unmarshal: %v", err)
	}
	if err := compare(t, pipeline.Traces, data); !otlpwire.IsWireTypeError(err) {
		t.Fatalf("not a wire-type error: %v", err)
	}
}

// Nesting deeper than proto.Unmarshal's limit is an error exactly where it
// is one for proto.Unmarshal, in all three signals' AnyValues.
func TestDecodeDepth(t *testing.T) {
	// A span attribute's AnyValue is at depth 6 (request 1, ResourceSpans 2,
	// ScopeSpans 3, Span 4, KeyValue 5); each array adds 2 levels, each
	// kvlist 3 (KeyValueList, KeyValue, AnyValue).
	// kvFirst puts the leaf in a kvlist's KeyValue rather than an array, so
	// the deepest KeyValue is one of a string (the validator's short path).
	kvFirst := 0
	nested := func(arrays int) *commonpb.AnyValue {
		v := &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "leaf"}}
		for i := range arrays {
			if (i+kvFirst)%2 == 0 {
				v = &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{v}}}}
			} else {
				v = &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: []*commonpb.KeyValue{{Key: "k", Value: v}}}}}
			}
		}
		return v
	}
	// The leaf's depth with n wrappers around an AnyValue at depth base.
	depth := func(base, n int) int {
		if kvFirst == 1 {
			return base + 3*((n+1)/2) + 2*(n/2)
		}
		return base + 2*((n+1)/2) + 3*(n/2)
	}
	for run := range 2 {
		kvFirst = run
		testDecodeDepth(t, nested, depth)
	}
}

func testDecodeDepth(t *testing.T, nested func(int) *commonpb.AnyValue, depth func(base, n int) int) {
	t.Helper()
	for _, tc := range []struct {
		sig  pipeline.Signal
		base int // the depth of the outermost AnyValue
		msg  func(*commonpb.AnyValue) proto.Message
	}{
		{pipeline.Traces, 6, func(v *commonpb.AnyValue) proto.Message {
			return &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{Attributes: []*commonpb.KeyValue{{Key: "a", Value: v}}}}}}}}}
		}},
		{pipeline.Logs, 5, func(v *commonpb.AnyValue) proto.Message {
			return &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{ScopeLogs: []*logspb.ScopeLogs{{LogRecords: []*logspb.LogRecord{{Body: v}}}}}}}
		}},
		{pipeline.Metrics, 9, func(v *commonpb.AnyValue) proto.Message {
			return &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{{ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{{Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: []*metricspb.NumberDataPoint{{Exemplars: []*metricspb.Exemplar{{FilteredAttributes: []*commonpb.KeyValue{{Key: "a", Value: v}}}}}}}}}}}}}}}
		}},
	} {
		n := 0
		for depth(tc.base, n+1) <= otlpwire.MaxDepth {
			n++
		}
		// n wrappers are the most that fit: the leaf is at MaxDepth or one
		// level above it.
		for _, k := range []int{n, n + 1} {
			data, err := proto.Marshal(tc.msg(nested(k)))
			if err != nil {
				t.Fatal(err)
			}
			err = compare(t, tc.sig, data) // agrees with proto.Unmarshal
			if k == n && err != nil {
				t.Errorf("%s: depth %d: %v", tc.sig, depth(tc.base, k), err)
			}
			if k > n && (err == nil || !strings.Contains(err.Error(), "nesting deeper than 10000 messages")) {
				t.Errorf("%s: depth %d: %v", tc.sig, depth(tc.base, k), err)
			}
			if k > n && (len(err.Error()) > 2000 || !strings.Contains(err.Error(), " more).")) {
				t.Errorf("%s: the path of a deep error is not shortened: %d bytes", tc.sig, len(err.Error()))
			}
		}
	}
}

// Every prefix of a real request decodes exactly when proto.Unmarshal
// decodes it (a prefix ending between two fields is a valid, smaller
// message), to the same result; and never panics.
func TestDecodeTruncated(t *testing.T) {
	var fs []fixture
	for _, f := range fixtures(t) {
		if strings.HasPrefix(f.name, "traces.") || strings.HasPrefix(f.name, "logs.") || strings.HasPrefix(f.name, "edge.") {
			fs = append(fs, f)
		}
	}
	for _, tc := range full() {
		fs = append(fs, fixture{"full " + tc.sig.String(), tc.sig, tc.msg, marshal(tc.msg)})
	}
	for _, f := range fs {
		t.Run(f.name, func(t *testing.T) {
			step := 1
			if testing.Short() || raceEnabled {
				step = 1 + len(f.data)/500
			}
			var errs int
			for k := 0; k < len(f.data); k += step {
				if compare(t, f.sig, f.data[:k]) != nil {
					errs++
				}
			}
			if errs == 0 {
				t.Fatal("no prefix failed")
			}
		})
	}
}

// Every single-byte corruption of a real request is decoded as
// proto.Unmarshal decodes it (bar the documented wire-type difference).
func TestDecodeCorrupted(t *testing.T) {
	var fs []fixture
	for _, f := range fixtures(t) {
		if strings.HasPrefix(f.name, "traces.") || strings.HasPrefix(f.name, "logs.") {
			fs = append(fs, f)
		}
	}
	fs = append(fs, fixture{"full metrics", pipeline.Metrics, nil, marshal(fullMetrics())})
	for _, f := range fs {
		t.Run(f.name, func(t *testing.T) {
			step := 1
			if testing.Short() || raceEnabled {
				step = 1 + len(f.data)/300
			}
			buf := bytes.Clone(f.data)
			for i := 0; i < len(buf); i += step {
				orig := buf[i]
				for _, c := range []byte{0, 0xff, 0x80, 0x7f, orig ^ 1, orig ^ 7, orig + 8, orig - 8} {
					buf[i] = c
					compare(t, f.sig, buf)
				}
				buf[i] = orig
			}
		})
	}
}

// Decoders are pooled: results of earlier requests, good or failed, must
// not change with later ones, also when decoded concurrently.
func TestDecodePooledConcurrent(t *testing.T) {
	fs := fixtures(t)
	for _, tc := range full() {
		fs = append(fs, fixture{"full " + tc.sig.String(), tc.sig, tc.msg, marshal(tc.msg)})
	}
	done := make(chan error)
	for w := range 4 {
		go func() {
			var kept []*pipeline.Batch
			for i := range 50 {
				f := fs[(i+w)%len(fs)]
				b, err := otlpwire.UnmarshalRequest(f.sig, f.data)
				if err != nil {
					done <- err
					return
				}
				kept = append(kept, b)
				_, _ = otlpwire.UnmarshalRequest(f.sig, f.data[:len(f.data)-1]) // mostly a failure, leaving a decoder's stacks dirty
			}
			for i, b := range kept {
				if f := fs[(i+w)%len(fs)]; !proto.Equal(otlptest.RequestOf(b), f.msg) {
					done <- fmt.Errorf("%s changed after later decodes", f.name)
					return
				}
			}
			done <- nil
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// A short string's bytes are checked in one load with what follows it in
// the body masked off: an ASCII name of 1 to 7 bytes followed by bytes
// above 0x7f passes, and one with a byte above 0x7f that is not UTF-8, at
// any position, is refused.
func TestShortStringUTF8(t *testing.T) {
	body := func(name string) []byte {
		var span []byte
		span = protowire.AppendTag(span, 5, protowire.BytesType)
		span = protowire.AppendString(span, name)
		// flags: field 16, whose tag's first byte is 0x85
		span = protowire.AppendTag(span, 16, protowire.Fixed32Type)
		span = protowire.AppendFixed32(span, 0xffffffff)
		span = protowire.AppendTag(span, 1, protowire.BytesType)
		span = protowire.AppendBytes(span, bytes.Repeat([]byte{0xff}, 16))
		ss := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), span)
		rs := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), ss)
		return protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), rs)
	}
	for n := 1; n <= 9; n++ {
		name := strings.Repeat("a", n)
		rss, err := otlpwire.DecodeTracesOwned(body(name))
		if err != nil {
			t.Fatalf("ASCII name of %d bytes: %v", n, err)
		}
		if spans, err := rss[0].ScopeSpans[0].Messages(); err != nil || spans[0].Name != name {
			t.Fatalf("ASCII name of %d bytes read as %v, %v", n, spans, err)
		}
		for k := range n {
			bad := []byte(name)
			bad[k] = 0xff
			if _, err := otlpwire.DecodeTracesOwned(body(string(bad))); err == nil || !strings.Contains(err.Error(), "invalid UTF-8") {
				t.Fatalf("name %q: err %v, want invalid UTF-8", bad, err)
			}
			ok := []byte(name)
			copy(ok[k:], "é")
			if k+2 <= n {
				if _, err := otlpwire.DecodeTracesOwned(body(string(ok))); err != nil {
					t.Fatalf("name %q: %v", ok, err)
				}
			}
		}
	}
}

// firstRecord is the first item of r.
func firstRecord(r pipeline.Records) ([]byte, bool) {
	for rec := range r.All() {
		return rec, true
	}
	return nil, false
}
