package otlpwire

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// spanRecords returns the fixtures' spans and generated ones as records,
// with records whose scalar fields, status and attributes come twice.
func spanRecords(t testing.TB) [][]byte {
	var recs [][]byte
	add := func(rss []*tracepb.ResourceSpans) {
		for _, rs := range rss {
			for _, ss := range rs.GetScopeSpans() {
				for _, sp := range ss.GetSpans() {
					b, err := proto.Marshal(sp)
					if err != nil {
						t.Fatal(err)
					}
					recs = append(recs, b)
				}
			}
		}
	}
	for _, rss := range traceFixtures(t) {
		add(rss)
	}
	g := gen{rand.New(rand.NewPCG(7, 3))}
	for range 20 {
		add(g.traces())
	}
	n := len(recs)
	for i := 1; i < n; i++ {
		recs = append(recs, append(bytes.Clone(recs[i-1]), recs[i]...))
	}
	return recs
}

// checkScanSpan holds ScanSpan to proto.Unmarshal: whatever it decodes as
// a Span, ScanSpan reads, with the same name, kind, times and status code,
// and for each key the value of the first attribute with it. It asks for
// the keys of the span's first attributes and one no attribute has.
func checkScanSpan(t *testing.T, rec []byte) {
	var s SpanSummary
	probe := []string{"no such key"}
	vals := make([][]byte, 4)
	scanned := ScanSpan(rec, &s, probe, vals)
	sp := new(tracepb.Span)
	if err := proto.Unmarshal(rec, sp); err != nil {
		return // anything else it may refuse, or read
	}
	if !scanned {
		t.Fatalf("ScanSpan refused a span proto.Unmarshal decodes: %v", sp)
	}
	if string(s.Name) != sp.GetName() || s.Kind != sp.GetKind() || s.StatusCode != sp.GetStatus().GetCode() ||
		s.Start != sp.GetStartTimeUnixNano() || s.End != sp.GetEndTimeUnixNano() {
		t.Fatalf("ScanSpan read %+v of %v", s, sp)
	}
	if vals[0] != nil {
		t.Fatalf("a key no attribute has: read %x", vals[0])
	}
	keys := []string{"no such key"}
	for _, kv := range sp.GetAttributes() {
		if len(keys) == cap(vals) {
			break
		}
		keys = append(keys, kv.GetKey())
	}
	if !ScanSpan(rec, &s, keys, vals) {
		t.Fatalf("ScanSpan refused with keys %q", keys)
	}
	if mergedValues(rec) {
		return // the one way ScanSpan departs from protobuf (scanAttr)
	}
	for i, k := range keys[1:] {
		var want *commonpb.AnyValue
		for _, kv := range sp.GetAttributes() {
			if kv.GetKey() == k {
				want = kv.GetValue()
				break
			}
		}
		if want == nil {
			want = &commonpb.AnyValue{}
		}
		v := vals[i+1]
		got := new(commonpb.AnyValue)
		if v == nil || proto.Unmarshal(v, got) != nil || !proto.Equal(got, want) {
			t.Fatalf("key %q: read %x (%v), want %v", k, v, got, want)
		}
	}
}

// mergedValues reports whether an attribute of the span record rec has
// two value fields, which protobuf merges and ScanSpan does not.
func mergedValues(rec []byte) bool {
	for len(rec) > 0 {
		num, typ, n := protowire.ConsumeField(rec)
		if n < 0 {
			return false
		}
		if num == 9 && typ == protowire.BytesType {
			kv, _ := protowire.ConsumeBytes(rec[protowire.SizeTag(num):])
			values := 0
			for len(kv) > 0 {
				num, _, m := protowire.ConsumeField(kv)
				if m < 0 {
					break
				}
				if num == 2 {
					values++
				}
				kv = kv[m:]
			}
			if values > 1 {
				return true
			}
		}
		rec = rec[n:]
	}
	return false
}

func TestScanSpan(t *testing.T) {
	for _, rec := range spanRecords(t) {
		checkScanSpan(t, rec)
	}
	// An attribute without a value reads as the empty value, not as no
	// attribute; a truncated record is refused.
	rec, _ := proto.Marshal(&tracepb.Span{Name: "n", Attributes: []*commonpb.KeyValue{{Key: "k"}}})
	var s SpanSummary
	vals := make([][]byte, 1)
	if !ScanSpan(rec, &s, []string{"k"}, vals) || vals[0] == nil || len(vals[0]) != 0 {
		t.Fatalf("attribute without a value: %v %x", vals[0] == nil, vals[0])
	}
	if ScanSpan(rec[:len(rec)-1], &s, []string{"k"}, vals) {
		t.Fatal("a truncated record was read")
	}
}

// ScanSpan allocates nothing.
func TestScanSpanNoAlloc(t *testing.T) {
	recs := spanRecords(t)
	var s SpanSummary
	keys := []string{"a", "service.name", "http.method"}
	vals := make([][]byte, len(keys))
	allocs := testing.AllocsPerRun(10, func() {
		for _, rec := range recs {
			ScanSpan(rec, &s, keys, vals)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations", allocs)
	}
}

func FuzzScanSpan(f *testing.F) {
	for _, rec := range spanRecords(f) {
		f.Add(rec)
	}
	f.Fuzz(checkScanSpan)
}

// checkScanValue holds ScanValue to proto.Unmarshal: whatever it decodes
// as an AnyValue, ScanValue reads as the same member with the same value
// (arrays' and kvlists' the last field's message, which decodes).
func checkScanValue(t *testing.T, b []byte) {
	got := ScanValue(b)
	want := new(commonpb.AnyValue)
	if err := proto.Unmarshal(b, want); err != nil {
		return
	}
	ok := false
	switch x := want.GetValue().(type) {
	case nil:
		ok = got.Kind == ValueEmpty
	case *commonpb.AnyValue_StringValue:
		ok = got.Kind == ValueString && string(got.Bytes) == x.StringValue
	case *commonpb.AnyValue_BoolValue:
		ok = got.Kind == ValueBool && (got.Bits != 0) == x.BoolValue
	case *commonpb.AnyValue_IntValue:
		ok = got.Kind == ValueInt && int64(got.Bits) == x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		ok = got.Kind == ValueDouble && got.Bits == math.Float64bits(x.DoubleValue)
	case *commonpb.AnyValue_BytesValue:
		ok = got.Kind == ValueBytes && bytes.Equal(got.Bytes, x.BytesValue)
	case *commonpb.AnyValue_StringValueStrindex:
		ok = got.Kind == ValueStrindex && int32(got.Bits) == x.StringValueStrindex
	case *commonpb.AnyValue_ArrayValue:
		ok = got.Kind == ValueArray && proto.Unmarshal(got.Bytes, new(commonpb.ArrayValue)) == nil
	case *commonpb.AnyValue_KvlistValue:
		ok = got.Kind == ValueKvlist && proto.Unmarshal(got.Bytes, new(commonpb.KeyValueList)) == nil
	}
	if !ok {
		t.Fatalf("ScanValue read %+v of %v", got, want)
	}
}

func TestScanValue(t *testing.T) {
	for _, rec := range spanRecords(t) {
		sp := new(tracepb.Span)
		if err := proto.Unmarshal(rec, sp); err != nil {
			t.Fatal(err)
		}
		for _, kv := range sp.GetAttributes() {
			b, err := proto.Marshal(kv.GetValue())
			if err != nil {
				t.Fatal(err)
			}
			checkScanValue(t, b)
		}
	}
	// The last member wins.
	b := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "s")
	b = protowire.AppendVarint(protowire.AppendTag(b, 3, protowire.VarintType), 5)
	if v := ScanValue(b); v.Kind != ValueInt || v.Bits != 5 {
		t.Fatalf("string then int: %+v", v)
	}
	checkScanValue(t, b)
}

func FuzzScanValue(f *testing.F) {
	f.Add([]byte{})
	for _, v := range []*commonpb.AnyValue{
		{Value: &commonpb.AnyValue_StringValue{StringValue: "x"}},
		{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: -0.5}},
		{Value: &commonpb.AnyValue_IntValue{IntValue: -3}},
		{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{{}}}}},
	} {
		b, _ := proto.Marshal(v)
		f.Add(b)
	}
	f.Fuzz(checkScanValue)
}
