package otlpwire

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/otelstep/otelstep/pipeline"
)

// checkSpanRecords compares, for every span record the receiver's decoder
// kept from body, appendSpanRecord with appendSpan of the decoded span. It
// returns how many records took the direct path and how many there were.
func checkSpanRecords(t *testing.T, body []byte) (direct, all int) {
	t.Helper()
	rss, err := DecodeTracesOwned(bytes.Clone(body))
	if err != nil {
		return 0, 0
	}
	var d SpanDecoder
	for _, rs := range rss {
		for _, ss := range rs.ScopeSpans {
			n, k := checkRecords(t, ss.Records, d.Decode, appendSpan, appendSpanRecord)
			direct, all = direct+n, all+k
		}
	}
	return direct, all
}

// checkLogRecords is checkSpanRecords for log records.
func checkLogRecords(t *testing.T, body []byte) (direct, all int) {
	t.Helper()
	rls, err := DecodeLogsOwned(bytes.Clone(body))
	if err != nil {
		return 0, 0
	}
	var d LogRecordDecoder
	for _, rl := range rls {
		for _, sl := range rl.ScopeLogs {
			n, k := checkRecords(t, sl.Records, d.Decode, appendLogRecord, appendLogRecordRecord)
			direct, all = direct+n, all+k
		}
	}
	return direct, all
}

// checkRecords compares direct with fn of the decoded item for each of
// records.
func checkRecords[T any](t *testing.T, records []byte, decode func([]byte) (*T, error), fn func([]byte, *T) []byte, direct func(b, rec []byte) ([]byte, bool)) (took, all int) {
	t.Helper()
	for rec := range pipeline.Records(records).All() {
		all++
		m, err := decode(rec)
		if err != nil {
			t.Fatalf("a kept record does not decode: %v", err)
		}
		want := fn(nil, m)
		got, ok := direct([]byte("prefix"), rec)
		if !ok {
			continue
		}
		took++
		if !bytes.HasPrefix(got, []byte("prefix")) || !bytes.Equal(got[len("prefix"):], want) {
			t.Fatalf("JSON from the record differs from the decoded item's\nrecord:  %s\ndecoded: %s\nitem: %v", got, want, m)
		}
	}
	return took, all
}

// Every span and log record proto.Marshal writes (the form every SDK sends)
// takes the direct path and writes what the decoded item writes.
func TestItemRecordJSONMatchesDecoded(t *testing.T) {
	g := gen{rand.New(rand.NewPCG(3, 11))}
	n := 3000
	if testing.Short() {
		n = 300
	}
	var direct, all [2]int
	for range n {
		body, err := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: g.traces()})
		if err != nil {
			t.Fatal(err)
		}
		d, a := checkSpanRecords(t, body)
		direct[0], all[0] = direct[0]+d, all[0]+a
		if body, err = proto.Marshal(&collogspb.ExportLogsServiceRequest{ResourceLogs: g.logs()}); err != nil {
			t.Fatal(err)
		}
		d, a = checkLogRecords(t, body)
		direct[1], all[1] = direct[1]+d, all[1]+a
	}
	for i, kind := range []string{"span", "log"} {
		if all[i] < n || direct[i] != all[i] {
			t.Errorf("%d of %d %s records took the direct path, want all (and at least %d)", direct[i], all[i], kind, n)
		}
	}
}

// Records in a form the direct path leaves to decoding still write what
// the decoded span writes, through fieldItems.
func TestSpanRecordJSONFallsBack(t *testing.T) {
	span := &tracepb.Span{TraceId: bytes.Repeat([]byte{1}, 16), SpanId: bytes.Repeat([]byte{2}, 8), Name: "op",
		Attributes: []*commonpb.KeyValue{{Key: "k", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "v"}}}},
		Status:     &tracepb.Status{Message: "m"}}
	rec, err := proto.Marshal(span)
	if err != nil {
		t.Fatal(err)
	}
	kv := func(value []byte) []byte {
		b := protowire.AppendTag(nil, 1, protowire.BytesType)
		b = protowire.AppendString(b, "k")
		return append(b, value...)
	}
	value := func(members ...[]byte) []byte {
		var av []byte
		for _, m := range members {
			av = append(av, m...)
		}
		return protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), av)
	}
	strMember := func(s string) []byte {
		return protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), s)
	}
	intMember := protowire.AppendVarint(protowire.AppendTag(nil, 3, protowire.VarintType), 7)
	attr := func(kvRec []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, 9, protowire.BytesType), kvRec)
	}
	deep := &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "bottom"}}
	for range maxRecordDepth + 5 {
		deep = &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{deep}}}}
	}
	deepRec, err := proto.Marshal(&tracepb.Span{Name: "deep", Attributes: []*commonpb.KeyValue{{Key: "k", Value: deep}}})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		rec  []byte
	}{
		// nested deeper than the direct path follows
		{"deep", deepRec},
		// status twice: proto.Unmarshal merges the two
		{"status repeated", append(bytes.Clone(rec), protowire.AppendBytes(protowire.AppendTag(nil, 15, protowire.BytesType),
			protowire.AppendVarint(protowire.AppendTag(nil, 3, protowire.VarintType), 2))...)},
		// an AnyValue with two members: the last wins
		{"two members", append(bytes.Clone(rec), attr(kv(value(strMember("a"), intMember)))...)},
		// a KeyValue's value twice: merged
		{"value repeated", append(bytes.Clone(rec), attr(kv(append(value(strMember("a")), value(intMember)...)))...)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := appendSpanRecord(nil, tc.rec); ok {
				t.Fatal("the direct path took a record it should leave to decoding")
			}
			ss := &pipeline.ScopeSpans{}
			records := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), rec)
			records = protowire.AppendBytes(protowire.AppendTag(records, 2, protowire.BytesType), tc.rec)
			records = protowire.AppendBytes(protowire.AppendTag(records, 2, protowire.BytesType), rec)
			ss.Records = records
			spans, err := ss.Messages()
			if err != nil {
				t.Fatal(err)
			}
			got := appendScopeSpans(nil, ss)
			want := appendScopeSpans(nil, &pipeline.ScopeSpans{Spans: spans})
			if !bytes.Equal(got, want) {
				t.Fatalf("fieldItems with a fallback record\ngot:  %s\nwant: %s", got, want)
			}
		})
	}
}

// FuzzSpanRecordJSON checks the direct path against decoding on whatever
// request bodies the receiver's decoder accepts.
func FuzzSpanRecordJSON(f *testing.F) {
	g := gen{rand.New(rand.NewPCG(5, 8))}
	for range 20 {
		body, _ := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: g.traces()})
		f.Add(body)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkSpanRecords(t, body)
	})
}

// FuzzLogRecordJSON is FuzzSpanRecordJSON for log records.
func FuzzLogRecordJSON(f *testing.F) {
	g := gen{rand.New(rand.NewPCG(5, 9))}
	for range 20 {
		body, _ := proto.Marshal(&collogspb.ExportLogsServiceRequest{ResourceLogs: g.logs()})
		f.Add(body)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkLogRecords(t, body)
	})
}

// A log record whose body comes twice (proto.Unmarshal merges the two) is
// left to decoding, and written as the decoded record.
func TestLogRecordJSONFallsBack(t *testing.T) {
	rec, err := proto.Marshal(&logspb.LogRecord{TimeUnixNano: 5, SeverityText: "WARN",
		Body: &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{
			Values: []*commonpb.KeyValue{{Key: "a", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: 1}}}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	body2, _ := proto.Marshal(&logspb.LogRecord{Body: &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{
		Values: []*commonpb.KeyValue{{Key: "b", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: true}}}}}}}})
	twice := append(bytes.Clone(rec), body2...)
	if _, ok := appendLogRecordRecord(nil, twice); ok {
		t.Fatal("the direct path took a record whose body comes twice")
	}
	sl := &pipeline.ScopeLogs{}
	records := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), rec)
	records = protowire.AppendBytes(protowire.AppendTag(records, 2, protowire.BytesType), twice)
	sl.Records = records
	items, err := sl.Messages()
	if err != nil {
		t.Fatal(err)
	}
	if len(items[1].Body.GetKvlistValue().GetValues()) != 2 {
		t.Fatalf("decoding did not merge the bodies: %v", items[1].Body)
	}
	got := appendScopeLogs(nil, sl)
	want := appendScopeLogs(nil, &pipeline.ScopeLogs{LogRecords: items})
	if !bytes.Equal(got, want) {
		t.Fatalf("fieldItems with a fallback record\ngot:  %s\nwant: %s", got, want)
	}
}

// BenchmarkSpanRecordJSON writes the JSON of received spans shaped like
// the bench's load (8 attributes of 16 random characters), from their
// records directly and by decoding each.
func BenchmarkSpanRecordJSON(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	str := func() string { return randString(r, "abcdefghijklmnopqrstuvwxyz0123456789", 16) }
	id := func(n int) []byte { return randBytes(r, n) }
	ss := &tracepb.ScopeSpans{}
	for i := range 100 {
		s := &tracepb.Span{TraceId: id(16), SpanId: id(8), ParentSpanId: id(8), Name: "op-" + strconv.Itoa(i%7),
			Kind: tracepb.Span_SPAN_KIND_SERVER, StartTimeUnixNano: 1_780_000_000_000_000_000 + uint64(i), EndTimeUnixNano: 1_780_000_000_100_000_000,
			Status: &tracepb.Status{}}
		for j := range 8 {
			s.Attributes = append(s.Attributes, &commonpb.KeyValue{Key: "attr." + strconv.Itoa(j), Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: str()}}})
		}
		ss.Spans = append(ss.Spans, s)
	}
	body, _ := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{ss}}}})
	kept, err := DecodeTracesOwned(body)
	if err != nil {
		b.Fatal(err)
	}
	benchRecordsJSON(b, "spans", kept[0].ScopeSpans[0].Records, appendSpanRecord, &spanDecoders, appendSpan, "ns/span")
}

// BenchmarkLogRecordJSON is BenchmarkSpanRecordJSON for log records: a
// string body, five attributes (one an int), ids, times and severity.
func BenchmarkLogRecordJSON(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	str := func(n int) string { return randString(r, "abcdefghijklmnopqrstuvwxyz0123456789 ", n) }
	id := func(n int) []byte { return randBytes(r, n) }
	sl := &logspb.ScopeLogs{}
	for i := range 100 {
		lr := &logspb.LogRecord{TimeUnixNano: 1_780_000_000_000_000_000 + uint64(i), ObservedTimeUnixNano: 1_780_000_000_100_000_000,
			SeverityNumber: logspb.SeverityNumber_SEVERITY_NUMBER_INFO, SeverityText: "INFO", TraceId: id(16), SpanId: id(8),
			Body: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: str(48)}}}
		for j := range 4 {
			lr.Attributes = append(lr.Attributes, &commonpb.KeyValue{Key: "attr." + strconv.Itoa(j), Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: str(16)}}})
		}
		lr.Attributes = append(lr.Attributes, &commonpb.KeyValue{Key: "thread.id", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: int64(i % 16)}}})
		sl.LogRecords = append(sl.LogRecords, lr)
	}
	body, _ := proto.Marshal(&collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{ScopeLogs: []*logspb.ScopeLogs{sl}}}})
	kept, err := DecodeLogsOwned(body)
	if err != nil {
		b.Fatal(err)
	}
	benchRecordsJSON(b, "logRecords", kept[0].ScopeLogs[0].Records, appendLogRecordRecord, &logRecordDecoders, appendLogRecord, "ns/record")
}

// benchRecordsJSON writes the JSON of 100 records as field name, from the
// records (direct) and by decoding each, reporting unit per record.
func benchRecordsJSON[T any](b *testing.B, name string, records pipeline.Records, direct func(b, rec []byte) ([]byte, bool), decoders *sync.Pool, fn func([]byte, *T) []byte, unit string) {
	for _, bc := range []struct {
		name   string
		direct func(b, rec []byte) ([]byte, bool)
	}{{"direct", direct}, {"decoded", nil}} {
		b.Run(bc.name, func(b *testing.B) {
			var out []byte
			for b.Loop() {
				out = fieldItems(out[:0], new(bool), name, nil, records, bc.direct, decoders, fn)
			}
			b.SetBytes(int64(len(out)))
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, unit)
		})
	}
}

// randString is n characters drawn from letters by r.
func randString(r *rand.Rand, letters string, n int) string {
	s := make([]byte, n)
	for i := range s {
		s[i] = letters[r.IntN(len(letters))]
	}
	return string(s)
}

// randBytes is n random bytes from r.
func randBytes(r *rand.Rand, n int) []byte {
	s := make([]byte, n)
	for i := range s {
		s[i] = byte(r.Uint32())
	}
	return s
}

// A KeyValue record's JSON is the decoded KeyValue's, for keys and string
// values of every length around the fast path's one-byte lengths, for
// other value kinds, and for records with fields the fast path does not
// expect.
func TestKeyValueRecordJSON(t *testing.T) {
	var kvs []*commonpb.KeyValue
	for _, kl := range []int{0, 1, 7, 8, 125, 126, 127, 128, 200} {
		for _, sl := range []int{0, 1, 9, 121, 122, 123, 125, 126, 127, 128, 300} {
			k := strings.Repeat("k", kl)
			if kl > 3 {
				k = "\"" + k[1:kl-2] + "é" // an escape and a two-byte rune, kl bytes in all
			}
			kvs = append(kvs, &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: strings.Repeat("v\n", sl)[:sl]}}})
		}
	}
	for _, i := range []int64{0, 7, -1, 1 << 62, math.MinInt64} {
		kvs = append(kvs, &commonpb.KeyValue{Key: "i", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: i}}})
	}
	for _, f := range []float64{0, math.Copysign(0, -1), 1.5, math.NaN(), math.Inf(1), math.Inf(-1), 1e300, 5e-324} {
		kvs = append(kvs, &commonpb.KeyValue{Key: "d", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: f}}})
	}
	kvs = append(kvs,
		&commonpb.KeyValue{Key: "b", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: true}}},
		&commonpb.KeyValue{Key: "b", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: false}}},
		&commonpb.KeyValue{Key: "bytes", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte{1, 2}}}},
		&commonpb.KeyValue{Key: "none"},
		&commonpb.KeyValue{Key: "empty", Value: &commonpb.AnyValue{}},
	)
	for _, kv := range kvs {
		rec, err := proto.Marshal(kv)
		if err != nil {
			t.Fatal(err)
		}
		want := appendKeyValue(nil, kv)
		got, ok := appendKeyValueRecord(nil, rec, 0)
		if !ok || !bytes.Equal(got, want) {
			t.Errorf("key %d bytes: record JSON %s (ok %v), decoded %s", len(kv.Key), got, ok, want)
		}
	}
	// a string value followed by a field the fast path does not read, a
	// key written twice (the last one wins), an empty key written out:
	// all left to the generic path
	for _, rec := range [][]byte{
		{0x0a, 0, 0x12, 3, 0x0a, 1, 'v'},
		{0x0a, 1, 'k', 0x12, 6, 0x0a, 2, 'v', 'v', 0x18, 1},         // a value of a string and an int: the int wins
		{0x0a, 1, 'b', 0x12, 2, 0x10, 2},                            // a bool of 2 is true
		{0x0a, 1, 'i', 0x12, 3, 0x18, 0x81, 0x00},                   // an over-long varint
		{0x0a, 1, 'i', 0x12, 4, 0x18, 1, 0x18, 2},                   // two ints: the last wins
		{0x0a, 1, 'd', 0x12, 9, 0x21, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f}, // 1.0
		{0x0a, 1, 'k', 0x12, 4, 0x0a, 2, 'v', 'v', 0x18, 1},
		{0x0a, 1, 'a', 0x0a, 1, 'k', 0x12, 3, 0x0a, 1, 'v'},
	} {
		var kv commonpb.KeyValue
		if err := proto.Unmarshal(rec, &kv); err != nil {
			t.Fatal(err)
		}
		got, ok := appendKeyValueRecord(nil, rec, 0)
		if want := appendKeyValue(nil, &kv); ok && !bytes.Equal(got, want) {
			t.Errorf("record % x: JSON %s, decoded %s", rec, got, want)
		}
	}
}
