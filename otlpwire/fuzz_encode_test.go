package otlpwire

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"

	"github.com/otelstep/otelstep/internal/otlptest"
	"github.com/otelstep/otelstep/pipeline"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// The encoders against the references, per signal. The decoders have
// theirs: FuzzDecode{Metrics,Traces,Logs} (protobuf, against
// proto.Unmarshal) and FuzzJSONDecode{Metrics,Traces,Logs} (OTLP/JSON,
// against protojson).

// FuzzEncode{Metrics,Traces,Logs} hold both encoders to the reference on
// every request of their signal that proto.Unmarshal accepts. The request
// is encoded as proto.Unmarshal decodes it (everything as messages) and as
// the protobuf decoder keeps it (spans and log records as their records);
// each must come back proto.Equal to what proto.Unmarshal made, through
// proto.Unmarshal from the protobuf encoder's bytes and through protojson
// (ids hex to base64 first, as the OTLP/JSON reference does) from the
// OTLP/JSON encoder's. A metrics request is also encoded with its point
// attributes and metadata made shared sets (checkStoredEncodings).
func FuzzEncodeMetrics(f *testing.F) { fuzzEncode(f, pipeline.Metrics) }
func FuzzEncodeTraces(f *testing.F)  { fuzzEncode(f, pipeline.Traces) }
func FuzzEncodeLogs(f *testing.F)    { fuzzEncode(f, pipeline.Logs) }

func fuzzEncode(f *testing.F, sig pipeline.Signal) {
	for _, pb := range encodeSeeds(f, sig) {
		f.Add(pb)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, body []byte) { checkEncodeBody(t, sig, body) })
}

// checkEncodeBody is the encoders' check of a protobuf request body of sig
// (see FuzzEncodeMetrics); one proto.Unmarshal refuses is no check.
func checkEncodeBody(t *testing.T, sig pipeline.Signal, body []byte) {
	t.Helper()
	want := newRequestOf(sig)
	if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(body, want); err != nil {
		return
	}
	checkEncoders(t, "messages", batchOfRequest(sig, want), want)
	if sig == pipeline.Metrics {
		checkStoredEncodings(t, want.(*colmetricspb.ExportMetricsServiceRequest))
	}
	if kept, err := UnmarshalRequest(sig, body); err == nil {
		checkEncoders(t, "records", kept, want)
	}
}

// The encoders' check on every fixture line whole, the large ones the
// fuzz targets' seeds leave out included.
func TestEncodeFixtures(t *testing.T) {
	n := 0
	for _, fl := range fixtureLines(t) {
		for i, s := range signals {
			if !bytes.HasPrefix(fl.data, []byte(s.prefix)) {
				continue
			}
			msg, err := s.decode(fl.data)
			if err != nil {
				t.Fatalf("%s:%d: %v", fl.file, fl.n, err)
			}
			pb, err := proto.Marshal(msg)
			if err != nil {
				t.Fatal(err)
			}
			t.Run(fmt.Sprintf("%s:%d", fl.file, fl.n), func(t *testing.T) { checkEncodeBody(t, pipeline.Signal(i), pb) })
			n++
		}
	}
	if n == 0 {
		t.Fatal("no fixture line of any signal")
	}
}

// maxEncodeSeed bounds a seed. An input that brings new coverage is
// minimized before the fuzzer goes on, and Go's minimizer tries cutting
// out every range of it: some n²/2 runs of the target for n bytes. A
// mutation of a whole fixture line takes longer than -fuzzminimizetime (a
// minute) to minimize; meanwhile a single worker fuzzes nothing, and the
// runs of a minimization cut short are not counted. At this bound a
// minimization ends within the time. Seeds over it are cut to fit
// (fixtureSeeds); TestEncodeFixtures checks the fixtures whole.
const maxEncodeSeed = 768

// encodeSeeds is the fixtures' requests of sig as protobuf, cut to
// maxEncodeSeed (see fixtureSeeds).
func encodeSeeds(t testing.TB, sig pipeline.Signal) [][]byte {
	lines, items := fixtureSeeds(t, sig, fitsEncodeSeed)
	var out [][]byte
	for _, m := range append(lines, items...) {
		pb, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, pb)
	}
	return out
}

func fitsEncodeSeed(m proto.Message) bool { return proto.Size(m) <= maxEncodeSeed }

// fixtureSeeds is the fixtures' requests of sig that fit, as fits says,
// in two kinds, so that every fixture gives seeds and some seeds hold
// several items of a scope and several points of a metric. lines has each
// line whole or, when it does not fit, each scope's first two items. items
// has one request per metric, span or log record, with its resource and
// scope; a metric that does not fit is cut to its first data points that
// fit. A request that still does not fit is tried without its resource
// (with a metric's first point), and left out if it still does not.
func fixtureSeeds(t testing.TB, sig pipeline.Signal, fits func(proto.Message) bool) (lines, items []proto.Message) {
	// add adds to *out the first of ms that fits and says whether one did.
	add := func(out *[]proto.Message, ms ...proto.Message) bool {
		for _, m := range ms {
			if fits(m) {
				*out = append(*out, m)
				return true
			}
		}
		return false
	}
	// addFirst adds to *out the request of the first n of total items,
	// mk(n), for the largest n that fits, and says whether one did.
	addFirst := func(out *[]proto.Message, total int, mk func(n int) proto.Message) bool {
		for n := total; n >= 1; n-- {
			if add(out, mk(n)) {
				return true
			}
		}
		return false
	}
	for _, fl := range fixtureLines(t) {
		msg, err := signals[sig].decode(fl.data)
		if err != nil || !bytes.HasPrefix(fl.data, []byte(signals[sig].prefix)) {
			continue
		}
		whole := add(&lines, msg)
		switch r := msg.(type) {
		case *colmetricspb.ExportMetricsServiceRequest:
			for _, rm := range r.ResourceMetrics {
				for _, sm := range rm.ScopeMetrics {
					req := func(res *resourcepb.Resource, ms ...*metricspb.Metric) proto.Message {
						return &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{{
							Resource: res, SchemaUrl: rm.SchemaUrl, ScopeMetrics: []*metricspb.ScopeMetrics{{
								Scope: sm.Scope, SchemaUrl: sm.SchemaUrl, Metrics: ms}}}}}
					}
					if !whole && len(sm.Metrics) >= 2 {
						add(&lines, req(rm.Resource, sm.Metrics[:2]...), req(nil, sm.Metrics[:2]...))
					}
					for _, m := range sm.Metrics {
						if !addFirst(&items, max(numPoints(m), 1), func(n int) proto.Message { return req(rm.Resource, firstPoints(m, n)) }) {
							add(&items, req(nil, firstPoints(m, 1)))
						}
					}
				}
			}
		case *coltracepb.ExportTraceServiceRequest:
			for _, rs := range r.ResourceSpans {
				for _, ss := range rs.ScopeSpans {
					req := func(res *resourcepb.Resource, sps ...*tracepb.Span) proto.Message {
						return &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
							Resource: res, SchemaUrl: rs.SchemaUrl, ScopeSpans: []*tracepb.ScopeSpans{{
								Scope: ss.Scope, SchemaUrl: ss.SchemaUrl, Spans: sps}}}}}
					}
					if !whole && len(ss.Spans) >= 2 {
						add(&lines, req(rs.Resource, ss.Spans[:2]...), req(nil, ss.Spans[:2]...))
					}
					for _, sp := range ss.Spans {
						add(&items, req(rs.Resource, sp), req(nil, sp))
					}
				}
			}
		case *collogspb.ExportLogsServiceRequest:
			for _, rl := range r.ResourceLogs {
				for _, sl := range rl.ScopeLogs {
					req := func(res *resourcepb.Resource, lrs ...*logspb.LogRecord) proto.Message {
						return &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{
							Resource: res, SchemaUrl: rl.SchemaUrl, ScopeLogs: []*logspb.ScopeLogs{{
								Scope: sl.Scope, SchemaUrl: sl.SchemaUrl, LogRecords: lrs}}}}}
					}
					if !whole && len(sl.LogRecords) >= 2 {
						add(&lines, req(rl.Resource, sl.LogRecords[:2]...), req(nil, sl.LogRecords[:2]...))
					}
					for _, lr := range sl.LogRecords {
						add(&items, req(rl.Resource, lr), req(nil, lr))
					}
				}
			}
		}
	}
	return lines, items
}

// numPoints is the number of m's data points, whichever its type.
func numPoints(m *metricspb.Metric) int {
	r := m.ProtoReflect()
	fd := r.WhichOneof(r.Descriptor().Oneofs().ByName("data"))
	if fd == nil {
		return 0
	}
	data := r.Get(fd).Message()
	return data.Get(data.Descriptor().Fields().ByName("data_points")).List().Len()
}

// firstPoints is a copy of m holding its first n data points.
func firstPoints(m *metricspb.Metric, n int) *metricspb.Metric {
	c := proto.Clone(m).(*metricspb.Metric)
	r := c.ProtoReflect()
	if fd := r.WhichOneof(r.Descriptor().Oneofs().ByName("data")); fd != nil {
		data := r.Mutable(fd).Message()
		if pts := data.Mutable(data.Descriptor().Fields().ByName("data_points")).List(); pts.Len() > n {
			pts.Truncate(n)
		}
	}
	return c
}

// Every signal's encoder fuzz target starts from seeds of the fixtures,
// none over maxEncodeSeed, some holding several items: a fixture file
// renamed or cut, or a seed bound too low, would leave it fuzzing from
// nothing or from lone items only.
func TestEncodeSeedsFromFixtures(t *testing.T) {
	for _, sig := range []pipeline.Signal{pipeline.Metrics, pipeline.Traces, pipeline.Logs} {
		seeds := encodeSeeds(t, sig)
		items, most := 0, 0
		for _, pb := range seeds {
			if len(pb) > maxEncodeSeed {
				t.Errorf("%s: a seed of %d bytes, over maxEncodeSeed", sig, len(pb))
			}
			b, err := UnmarshalRequest(sig, pb)
			if err != nil {
				t.Fatalf("%s: a seed the decoder refuses: %v", sig, err)
			}
			items += b.Items
			most = max(most, b.Items)
		}
		if len(seeds) < 2 || items == 0 || most < 2 {
			t.Errorf("%s: %d seeds holding %d items from the fixtures, at most %d in one", sig, len(seeds), items, most)
		}
		t.Logf("%s: %d seeds, %d items", sig, len(seeds), items)
	}
}

// The metrics fixtures' lines are all over maxEncodeSeed, and some of
// their metrics are: cut to fit, every metric still gives a seed, and
// seeds hold several metrics of a scope and a metric's several data
// points.
func TestEncodeSeedsCutToFit(t *testing.T) {
	_, all := fixtureSeeds(t, pipeline.Metrics, func(proto.Message) bool { return true })
	if _, items := fixtureSeeds(t, pipeline.Metrics, fitsEncodeSeed); len(items) != len(all) {
		t.Errorf("%d of the fixtures' %d metrics give a seed", len(items), len(all))
	}
	metrics, points := 0, 0
	for _, pb := range encodeSeeds(t, pipeline.Metrics) {
		req := &colmetricspb.ExportMetricsServiceRequest{}
		if err := proto.Unmarshal(pb, req); err != nil {
			t.Fatal(err)
		}
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				metrics = max(metrics, len(sm.Metrics))
				for _, m := range sm.Metrics {
					points = max(points, numPoints(m))
				}
			}
		}
	}
	if metrics < 2 || points < 2 {
		t.Errorf("the metrics seeds hold at most %d metrics of a scope and %d points of a metric, want several of each", metrics, points)
	}
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
	// Spans and log records kept as records are copied as received, with
	// any unknown fields inside them (see proto_decode.go), which the
	// reference, decoded with DiscardUnknown, does not hold.
	records := what == "records"
	if err := (proto.UnmarshalOptions{DiscardUnknown: records}).Unmarshal(pb, got); err != nil {
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

// checkStoredEncodings makes every data point's attributes and metric's
// metadata of a copy of req a shared set's, encodes it twice with encoders
// given the sets (the first stores the sets' encodings, the second is
// served from them) and requires the bytes of encoders without them.
func checkStoredEncodings(t *testing.T, req *colmetricspb.ExportMetricsServiceRequest) {
	t.Helper()
	rms := proto.Clone(req).(*colmetricspb.ExportMetricsServiceRequest).ResourceMetrics
	var plain ProtoEncoder
	wantPB, wantJS := plain.AppendMetricsRequest(nil, rms), AppendMetrics(nil, rms)
	shared := pipeline.NewSharedAttrs()
	sets := otlptest.ShareAll(shared, rms)
	pe, je := ProtoEncoder{Shared: shared}, MetricsEncoder{Shared: shared}
	for pass := range 2 {
		if got := pe.AppendMetricsRequest(nil, rms); !bytes.Equal(got, wantPB) {
			t.Fatalf("metrics, pass %d with %d shared sets: protobuf encoding differs from the one without", pass, len(sets))
		}
		if got := je.AppendMetrics(nil, rms); !bytes.Equal(got, wantJS) {
			t.Fatalf("metrics, pass %d with %d shared sets: OTLP/JSON differs from the one without\ngot  %s\nwant %s", pass, len(sets), got, wantJS)
		}
	}
	runtime.KeepAlive(sets)
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
