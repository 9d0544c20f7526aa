package otlpwire

import (
	"testing"

	"github.com/otelstep/otelstep/pipeline"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// The encoders against the references. The decoders have theirs:
// FuzzDecode{Metrics,Traces,Logs} (protobuf, against proto.Unmarshal) and
// FuzzJSONDecode{Metrics,Traces,Logs} (OTLP/JSON, against protojson).

// FuzzEncode holds both encoders to the reference on every request
// proto.Unmarshal accepts: data[0] selects the signal (modulo 3: metrics,
// traces, logs), the rest is a protobuf export request. The request is
// encoded as proto.Unmarshal decodes it (everything as messages) and as the
// protobuf decoder keeps it (spans and log records as their records); each
// must come back proto.Equal to what proto.Unmarshal made, through
// proto.Unmarshal from the protobuf encoder's bytes and through protojson
// (ids hex to base64 first, as the OTLP/JSON reference does) from the
// OTLP/JSON encoder's.
func FuzzEncode(f *testing.F) {
	for _, fl := range fixtureLines(f) {
		for i, s := range signals {
			msg, err := s.decode(fl.data)
			if err != nil {
				continue
			}
			if pb, err := proto.Marshal(msg); err == nil && len(pb) <= 4<<10 {
				f.Add(append([]byte{byte(i)}, pb...))
			}
		}
	}
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		sig := []pipeline.Signal{pipeline.Metrics, pipeline.Traces, pipeline.Logs}[data[0]%3]
		body := data[1:]
		want := newRequestOf(sig)
		if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(body, want); err != nil {
			return
		}
		checkEncoders(t, "messages", batchOfRequest(sig, want), want)
		if kept, err := UnmarshalRequest(sig, body); err == nil {
			checkEncoders(t, "records", kept, want)
		}
	})
}

// checkEncoders encodes b both ways and compares what the references make
// of the bytes with want.
func checkEncoders(t *testing.T, what string, b *pipeline.Batch, want proto.Message) {
	t.Helper()
	var enc ProtoEncoder
	var pb, js []byte
	switch b.Signal {
	case pipeline.Metrics:
		pb, js = enc.AppendMetricsRequest(nil, b.Metrics), AppendMetrics(nil, b.Metrics)
	case pipeline.Traces:
		pb, js = enc.AppendTracesRequest(nil, b.Traces), AppendTraces(nil, b.Traces)
	case pipeline.Logs:
		pb, js = enc.AppendLogsRequest(nil, b.Logs), AppendLogs(nil, b.Logs)
	}
	got := newRequestOf(b.Signal)
	if err := proto.Unmarshal(pb, got); err != nil {
		t.Fatalf("%s %s: proto.Unmarshal of the protobuf encoder's bytes: %v", b.Signal, what, err)
	}
	if !proto.Equal(got, want) {
		t.Fatalf("%s %s: protobuf encoding differs\nwant %v\ngot  %v", b.Signal, what, want, got)
	}
	// OTLP/JSON has no encoding for an id the collector refuses; the
	// reference refuses the request, and so does the decoder.
	if pjCheckIDs(want.ProtoReflect()) != nil {
		return
	}
	got = newRequestOf(b.Signal)
	if err := pjDecode(js, got); err != nil {
		t.Fatalf("%s %s: protojson refuses the OTLP/JSON encoder's line: %v\n%s", b.Signal, what, err, js)
	}
	if !proto.Equal(got, want) {
		t.Fatalf("%s %s: OTLP/JSON encoding differs\nwant %v\ngot  %v\n%s", b.Signal, what, want, got, js)
	}
}

func newRequestOf(s pipeline.Signal) proto.Message {
	switch s {
	case pipeline.Traces:
		return &coltracepb.ExportTraceServiceRequest{}
	case pipeline.Logs:
		return &collogspb.ExportLogsServiceRequest{}
	}
	return &colmetricspb.ExportMetricsServiceRequest{}
}

// batchOfRequest is the batch of an export request's messages.
func batchOfRequest(s pipeline.Signal, m proto.Message) *pipeline.Batch {
	b := &pipeline.Batch{Signal: s}
	switch r := m.(type) {
	case *colmetricspb.ExportMetricsServiceRequest:
		b.Metrics = r.ResourceMetrics
	case *coltracepb.ExportTraceServiceRequest:
		b.Traces = pipeline.TracesFromProto(r.ResourceSpans)
	case *collogspb.ExportLogsServiceRequest:
		b.Logs = pipeline.LogsFromProto(r.ResourceLogs)
	}
	return b
}
