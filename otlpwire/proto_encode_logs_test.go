package otlpwire

import (
	"bytes"
	"testing"

	"github.com/otelstep/otelstep/pipeline"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"
)

func TestLogsEncoderMatchesProtoMarshal(t *testing.T) {
	var cases [][]*logspb.ResourceLogs
	forLines(t, "testdata/logs.peer.jsonl", func(l []byte) {
		req, err := DecodeLogs(l)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, req.ResourceLogs)
	})
	kv := func(k string, v *commonpb.AnyValue) *commonpb.KeyValue { return &commonpb.KeyValue{Key: k, Value: v} }
	full := &logspb.LogRecord{
		TimeUnixNano: 1, ObservedTimeUnixNano: 1<<63 + 1, SeverityNumber: logspb.SeverityNumber_SEVERITY_NUMBER_FATAL4, SeverityText: "FATAL",
		Body: &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: []*commonpb.KeyValue{
			kv("nested", &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: 2.5}})}}}},
		Attributes:             []*commonpb.KeyValue{kv("b", &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte{0, 1}}}), {Key: "nil"}},
		DroppedAttributesCount: 2, Flags: 1, TraceId: bytes.Repeat([]byte{7}, 16), SpanId: bytes.Repeat([]byte{8}, 8), EventName: "ev",
	}
	cases = append(cases, []*logspb.ResourceLogs{
		{Resource: &resourcepb.Resource{}, SchemaUrl: "s", ScopeLogs: []*logspb.ScopeLogs{
			{Scope: &commonpb.InstrumentationScope{Name: "n"}, SchemaUrl: "t", LogRecords: []*logspb.LogRecord{full, {}, {Body: &commonpb.AnyValue{}}, {SeverityNumber: -3}}},
			{},
		}},
		{},
	}, nil)
	var enc ProtoEncoder
	for i, rls := range cases {
		want := &collogspb.ExportLogsServiceRequest{ResourceLogs: rls}
		got := enc.AppendLogsRequest(nil, pipeline.LogsFromProto(rls))
		if len(got) != proto.Size(want) {
			t.Errorf("case %d: %d bytes, proto.Size says %d", i, len(got), proto.Size(want))
		}
		var back collogspb.ExportLogsServiceRequest
		if err := proto.Unmarshal(got, &back); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if !proto.Equal(&back, want) {
			t.Errorf("case %d: decodes to another message", i)
		}
	}
}
