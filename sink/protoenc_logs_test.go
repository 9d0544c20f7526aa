package sink

import (
	"bytes"
	"testing"

	"github.com/otelstep/otelstep/otlpjson"
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
		req, err := otlpjson.DecodeLogs(l)
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
	var enc MetricsProtoEncoder
	for i, rls := range cases {
		want := &collogspb.ExportLogsServiceRequest{ResourceLogs: rls}
		got := enc.AppendLogsRequest(nil, rls)
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

// Received log records go out as the bytes they came in (pipeline.Records),
// their JSONL is the JSONL of the same log records as messages, and a batch
// split inside a ScopeLogs still encodes each half's own log records.
func TestLogsEncoderForwardsReceivedRecords(t *testing.T) {
	var enc MetricsProtoEncoder
	rls := logsFixture(t)
	for len(rls) < 3 {
		rls = append(rls, logsFixture(t)...)
	}
	want := &collogspb.ExportLogsServiceRequest{ResourceLogs: rls}
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	b, err := pipeline.UnmarshalRequest(pipeline.Logs, data)
	if err != nil {
		t.Fatal(err)
	}
	kept := 0
	for _, rl := range b.Logs {
		for _, sl := range rl.ScopeLogs {
			if len(sl.LogRecords) != 0 {
				t.Fatal("log records decoded as messages, want them kept as records")
			}
			if len(pipeline.Records(sl)) > 0 {
				kept++
			}
		}
	}
	if kept == 0 {
		t.Fatal("no log records kept as records")
	}
	if js, wantJS := otlpjson.AppendLogs(nil, b.Logs), otlpjson.AppendLogs(nil, rls); !bytes.Equal(js, wantJS) {
		t.Errorf("JSON of the received log records differs\ngot  %.300s\nwant %.300s", js, wantJS)
	}
	if got := enc.AppendLogsRequest(nil, b.Logs); !bytes.Equal(got, data) {
		t.Errorf("re-encoding differs from the %d bytes received (%d)", len(data), len(got))
	}
	total := b.Items()
	if total < 2 {
		t.Fatalf("fixture has %d log records", total)
	}
	var wantRecs []*logspb.LogRecord
	for _, rl := range rls {
		for _, sl := range rl.ScopeLogs {
			wantRecs = append(wantRecs, sl.LogRecords...)
		}
	}
	for k := 1; k < total; k++ {
		head, rest := splitBatch(b, k)
		if head.Items() != k || rest.Items() != total-k {
			t.Fatalf("split at %d: %d + %d log records", k, head.Items(), rest.Items())
		}
		var gotRecs []*logspb.LogRecord
		for _, part := range []*pipeline.Batch{head, rest} {
			var req collogspb.ExportLogsServiceRequest
			if err := proto.Unmarshal(enc.AppendLogsRequest(nil, part.Logs), &req); err != nil {
				t.Fatal(err)
			}
			js, err := otlpjson.DecodeLogs(otlpjson.AppendLogs(nil, part.Logs))
			if err != nil {
				t.Fatal(err)
			}
			if n := (&pipeline.Batch{Signal: pipeline.Logs, Logs: js.ResourceLogs}).Items(); n != part.Items() {
				t.Fatalf("split at %d: a part of %d log records has %d in its JSON", k, part.Items(), n)
			}
			for _, rl := range req.ResourceLogs {
				for _, sl := range rl.ScopeLogs {
					gotRecs = append(gotRecs, sl.LogRecords...)
				}
			}
		}
		if len(gotRecs) != len(wantRecs) {
			t.Fatalf("split at %d: %d log records, want %d", k, len(gotRecs), len(wantRecs))
		}
		for j := range wantRecs {
			if !proto.Equal(gotRecs[j], wantRecs[j]) {
				t.Fatalf("split at %d: log record %d differs", k, j)
			}
		}
	}
}
