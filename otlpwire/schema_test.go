package otlpwire

import (
	"fmt"
	"testing"

	"github.com/otelstep/otelstep/pipeline"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The OTLP schema against the codecs. The codecs are written field by
// field, so a field the schema gains (a new go.opentelemetry.io/proto/otlp)
// would be skipped by the decoders and vanish from the encoders' output
// without a word. These tests walk the schema itself (the protoreflect
// descriptors of every message under the three export requests) and fail
// on a field some codec does not handle.

// decoderFields is, for every message the protobuf decoder reads, its list
// of the fields it handles (by number, the field's name), which it also
// uses to name a field in its errors.
var decoderFields = map[protoreflect.FullName][]string{
	name(&colmetricspb.ExportMetricsServiceRequest{}):        resourceMetricsRequestFields,
	name(&coltracepb.ExportTraceServiceRequest{}):            resourceSpansRequestFields,
	name(&collogspb.ExportLogsServiceRequest{}):              resourceLogsRequestFields,
	name(&resourcepb.Resource{}):                             resourceFields,
	name(&commonpb.InstrumentationScope{}):                   scopeFields,
	name(&commonpb.KeyValue{}):                               keyValueFields,
	name(&commonpb.AnyValue{}):                               anyValueFields,
	name(&commonpb.ArrayValue{}):                             valuesFields,
	name(&commonpb.KeyValueList{}):                           valuesFields,
	name(&commonpb.EntityRef{}):                              entityRefFields,
	name(&metricspb.ResourceMetrics{}):                       resourceMetricsFields,
	name(&metricspb.ScopeMetrics{}):                          scopeMetricsFields,
	name(&metricspb.Metric{}):                                metricFields,
	name(&metricspb.Gauge{}):                                 gaugeFields,
	name(&metricspb.Sum{}):                                   sumFields,
	name(&metricspb.Histogram{}):                             histogramFields,
	name(&metricspb.ExponentialHistogram{}):                  histogramFields,
	name(&metricspb.Summary{}):                               summaryFields,
	name(&metricspb.NumberDataPoint{}):                       numberPointFields,
	name(&metricspb.HistogramDataPoint{}):                    histogramPointFields,
	name(&metricspb.ExponentialHistogramDataPoint{}):         expHistogramPointFields,
	name(&metricspb.ExponentialHistogramDataPoint_Buckets{}): bucketsFields,
	name(&metricspb.SummaryDataPoint{}):                      summaryPointFields,
	name(&metricspb.SummaryDataPoint_ValueAtQuantile{}):      quantileFields,
	name(&metricspb.Exemplar{}):                              exemplarFields,
	name(&tracepb.ResourceSpans{}):                           resourceSpansFields,
	name(&tracepb.ScopeSpans{}):                              scopeSpansFields,
	name(&tracepb.Span{}):                                    spanFields,
	name(&tracepb.Span_Event{}):                              eventFields,
	name(&tracepb.Span_Link{}):                               linkFields,
	name(&tracepb.Status{}):                                  statusFields,
	name(&logspb.ResourceLogs{}):                             resourceLogsFields,
	name(&logspb.ScopeLogs{}):                                scopeLogsFields,
	name(&logspb.LogRecord{}):                                logRecordFields,
}

func name(m proto.Message) protoreflect.FullName { return m.ProtoReflect().Descriptor().FullName() }

var requests = []proto.Message{
	&colmetricspb.ExportMetricsServiceRequest{}, &coltracepb.ExportTraceServiceRequest{}, &collogspb.ExportLogsServiceRequest{},
}

// schemaMessages calls fn with every message type under the export
// requests, once each.
func schemaMessages(fn func(protoreflect.MessageDescriptor)) {
	seen := map[protoreflect.FullName]bool{}
	var walk func(md protoreflect.MessageDescriptor)
	walk = func(md protoreflect.MessageDescriptor) {
		if seen[md.FullName()] {
			return
		}
		seen[md.FullName()] = true
		fn(md)
		for i := range md.Fields().Len() {
			if sub := md.Fields().Get(i).Message(); sub != nil {
				walk(sub)
			}
		}
	}
	for _, r := range requests {
		walk(r.ProtoReflect().Descriptor())
	}
}

// Every field of every message, and nothing else, is in the protobuf
// decoder's list for its message.
func TestSchemaDecoderFields(t *testing.T) {
	n := 0
	schemaMessages(func(md protoreflect.MessageDescriptor) {
		n++
		list, ok := decoderFields[md.FullName()]
		if !ok {
			t.Errorf("%s: a message of the schema the decoder has no field list for", md.FullName())
			return
		}
		fields := md.Fields()
		for i := range fields.Len() {
			fd := fields.Get(i)
			if int(fd.Number()) >= len(list) || list[fd.Number()] != string(fd.Name()) {
				t.Errorf("%s: field %d %s is not in the decoder's list", md.FullName(), fd.Number(), fd.Name())
			}
		}
		for num, nm := range list {
			if nm != "" && fields.ByNumber(protoreflect.FieldNumber(num)) == nil {
				t.Errorf("%s: the decoder lists field %d %s, which the schema does not have", md.FullName(), num, nm)
			}
		}
	})
	if n < len(decoderFields)-1 { // ArrayValue and KeyValueList share a list
		t.Errorf("walked %d messages, want at least %d", n, len(decoderFields)-1)
	}
}

// Requests with every field of the schema set round-trip through every
// codec: the protobuf and OTLP/JSON encoders (checked by proto.Unmarshal
// and protojson), both decoders, the decoders of spans and log records kept
// as records (SpanDecoder, LogRecordDecoder), and the encoders again on
// those records. A field some codec drops or misreads fails it,
// named by the message that differs. The members of a oneof are set one
// per variant.
func TestSchemaEveryFieldRoundTrips(t *testing.T) {
	variants := 1
	schemaMessages(func(md protoreflect.MessageDescriptor) {
		for i := range md.Oneofs().Len() {
			variants = max(variants, md.Oneofs().Get(i).Fields().Len())
		}
	})
	for v := range variants {
		for i, r := range requests {
			sig := []pipeline.Signal{pipeline.Metrics, pipeline.Traces, pipeline.Logs}[i]
			t.Run(fmt.Sprintf("%s/variant%d", sig, v), func(t *testing.T) {
				want := r.ProtoReflect().New()
				populate(want, v, 0)
				msg := want.Interface()
				checkSet(t, msg.ProtoReflect())
				checkEncoders(t, "messages", batchOfRequest(sig, msg), msg)
				pb, err := proto.Marshal(msg)
				if err != nil {
					t.Fatal(err)
				}
				kept, err := UnmarshalRequest(sig, pb)
				if err != nil {
					t.Fatalf("protobuf decoder: %v", err)
				}
				if got := expandedRequest(t, kept); !proto.Equal(got, msg) {
					t.Fatalf("protobuf decoder differs\nwant %v\ngot  %v", msg, got)
				}
				if got := itemsDecoded(t, kept); !proto.Equal(got, msg) {
					t.Fatalf("SpanDecoder or LogRecordDecoder differs\nwant %v\ngot  %v", msg, got)
				}
				checkEncoders(t, "records", kept, msg)
				js := signals[i].encode(msg)
				got, err := signals[i].decode(js)
				if err != nil {
					t.Fatalf("OTLP/JSON decoder: %v\n%s", err, js)
				}
				if !proto.Equal(got, msg) {
					t.Fatalf("OTLP/JSON decoder differs\nwant %v\ngot  %v", msg, got)
				}
			})
		}
	}
}

// maxPopulateDepth bounds the recursion of AnyValue (arrays and kvlists of
// AnyValues): deep enough for every message type to be reached.
const maxPopulateDepth = 9

// populate sets every field of m: scalars to a non-zero value, lists to
// one element (scalars two), messages recursively; of a oneof, member
// variant (modulo their number).
func populate(m protoreflect.Message, variant, depth int) {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() && od.Fields().Get(variant%od.Fields().Len()) != fd {
			continue
		}
		switch {
		case fd.IsList() && fd.Message() != nil:
			if depth < maxPopulateDepth {
				populate(m.Mutable(fd).List().AppendMutable().Message(), variant, depth+1)
			}
		case fd.IsList():
			l := m.Mutable(fd).List()
			l.Append(scalar(fd, 1))
			l.Append(scalar(fd, 2))
		case fd.Message() != nil:
			if depth < maxPopulateDepth {
				populate(m.Mutable(fd).Message(), variant, depth+1)
			}
		default:
			m.Set(fd, scalar(fd, 1))
		}
	}
}

// scalar is a non-zero value of fd's kind; bytes fields named like ids have
// the length the collector requires.
func scalar(fd protoreflect.FieldDescriptor, k int) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	case protoreflect.EnumKind:
		return protoreflect.ValueOfEnum(protoreflect.EnumNumber(k))
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(-3 * k))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(int64(-5 * k))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(7 * k))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(uint64(1_700_000_000_000_000_000 + k))
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(float32(k) + 0.5)
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(float64(k) + 0.25)
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(fmt.Sprintf("%s-%d", fd.Name(), k))
	case protoreflect.BytesKind:
		n := 3
		switch fd.Name() {
		case "trace_id":
			n = TraceIDSize
		case "span_id", "parent_span_id":
			n = SpanIDSize
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(k + i)
		}
		return protoreflect.ValueOfBytes(b)
	}
	panic(fmt.Sprintf("%s: kind %s", fd.FullName(), fd.Kind()))
}

// checkSet fails if populate left a field of a message unset that it meant
// to set (outside oneofs and below the depth bound): a test of the test.
func checkSet(t *testing.T, m protoreflect.Message) {
	t.Helper()
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
			continue
		}
		if !m.Has(fd) && fd.Message() == nil {
			t.Fatalf("%s: not set", fd.FullName())
		}
	}
}

// expandedRequest is the export request of a decoded batch, its spans
// and log records as messages.
func expandedRequest(t *testing.T, b *pipeline.Batch) proto.Message {
	t.Helper()
	switch b.Signal {
	case pipeline.Traces:
		rss, err := pipeline.TracesProto(b.Traces)
		if err != nil {
			t.Fatal(err)
		}
		return &coltracepb.ExportTraceServiceRequest{ResourceSpans: rss}
	case pipeline.Logs:
		rls, err := pipeline.LogsProto(b.Logs)
		if err != nil {
			t.Fatal(err)
		}
		return &collogspb.ExportLogsServiceRequest{ResourceLogs: rls}
	}
	return &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: b.Metrics}
}

// itemsDecoded is expandedRequest with the spans and log records kept as
// records decoded by SpanDecoder and LogRecordDecoder rather than by
// proto.Unmarshal: the protobuf decoder's span and log record code, which
// the request's decoding only runs on a record it refuses.
func itemsDecoded(t *testing.T, b *pipeline.Batch) proto.Message {
	t.Helper()
	switch b.Signal {
	case pipeline.Traces:
		var sd SpanDecoder
		req := &coltracepb.ExportTraceServiceRequest{}
		for _, rs := range b.Traces {
			c := &tracepb.ResourceSpans{Resource: rs.Resource, SchemaUrl: rs.SchemaURL}
			for _, ss := range rs.ScopeSpans {
				cs := &tracepb.ScopeSpans{Scope: ss.Scope, SchemaUrl: ss.SchemaURL, Spans: append([]*tracepb.Span(nil), ss.Spans...)}
				for rec := range ss.Records.All() {
					sp, err := sd.Decode(rec)
					if err != nil {
						t.Fatalf("SpanDecoder: %v", err)
					}
					cs.Spans = append(cs.Spans, proto.Clone(sp).(*tracepb.Span))
				}
				c.ScopeSpans = append(c.ScopeSpans, cs)
			}
			req.ResourceSpans = append(req.ResourceSpans, c)
		}
		return req
	case pipeline.Logs:
		var ld LogRecordDecoder
		req := &collogspb.ExportLogsServiceRequest{}
		for _, rl := range b.Logs {
			c := &logspb.ResourceLogs{Resource: rl.Resource, SchemaUrl: rl.SchemaURL}
			for _, sl := range rl.ScopeLogs {
				cl := &logspb.ScopeLogs{Scope: sl.Scope, SchemaUrl: sl.SchemaURL, LogRecords: append([]*logspb.LogRecord(nil), sl.LogRecords...)}
				for rec := range sl.Records.All() {
					lr, err := ld.Decode(rec)
					if err != nil {
						t.Fatalf("LogRecordDecoder: %v", err)
					}
					cl.LogRecords = append(cl.LogRecords, proto.Clone(lr).(*logspb.LogRecord))
				}
				c.ScopeLogs = append(c.ScopeLogs, cl)
			}
			req.ResourceLogs = append(req.ResourceLogs, c)
		}
		return req
	}
	return &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: b.Metrics}
}
