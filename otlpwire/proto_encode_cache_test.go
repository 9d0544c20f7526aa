package otlpwire

import (
	"bytes"
	"runtime"
	"testing"

	"github.com/otelstep/otelstep/internal/otlptest"
	"github.com/otelstep/otelstep/pipeline"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// checkCached encodes rms with e and with an encoder without sets: the
// bytes must be identical, of proto.Size's length, and decode to rms.
func checkCached(t *testing.T, e *ProtoEncoder, rms []*metricspb.ResourceMetrics) {
	t.Helper()
	var plain ProtoEncoder
	want := plain.AppendMetricsRequest(nil, rms)
	got := e.AppendMetricsRequest(nil, rms)
	if !bytes.Equal(got, want) {
		t.Fatalf("with stored encodings differs from without (%d vs %d bytes)", len(got), len(want))
	}
	req := &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: rms}
	if n := proto.Size(req); len(got) != n {
		t.Fatalf("encoded %d bytes, proto.Size says %d", len(got), n)
	}
	var dec colmetricspb.ExportMetricsServiceRequest
	if err := proto.Unmarshal(got, &dec); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(&dec, req) {
		t.Fatal("decoded request differs from the encoded one")
	}
}

func TestProtoEncoderSharedScrapes(t *testing.T) {
	sim := otlptest.NewScrapeSim(60, nil)
	e := ProtoEncoder{Shared: sim.Shared}
	for n := range 6 {
		checkCached(t, &e, sim.Batch(n))
	}
	// Point attributes' sets keep their encoding: field 7 for gauge, sum
	// and summary points, 9 for histograms (gauge[2]'s set holds both).
	// The summary's suffix of gauge[1] is no set's, exponential histograms
	// go through proto.Marshal, and the resource, scope and exemplar sets
	// are not point attributes. The metadata's set keeps its field 12.
	has := func(kvs []*commonpb.KeyValue, n int32) bool {
		a := sim.Shared.Find(kvs)
		return a != nil && a.Proto(n) != nil
	}
	if !has(sim.Meta, 12) {
		t.Error("the metadata's set has no stored encoding")
	}
	for i, a := range sim.Gauge {
		if !has(a, 7) {
			t.Errorf("gauge series %d has no stored encoding", i)
		}
	}
	if !has(sim.Gauge[2], 9) {
		t.Error("the set used under fields 7 and 9 has no field 9")
	}
	for i, a := range sim.Hist[:len(sim.Hist)-1] {
		if !has(a, 9) || has(a, 7) {
			t.Errorf("histogram series %d: fields 9 %v, 7 %v", i, has(a, 9), has(a, 7))
		}
	}
	for i, a := range sim.Summ[:len(sim.Summ)-1] {
		if !has(a, 7) {
			t.Errorf("summary series %d has no stored encoding", i)
		}
	}
	for _, a := range append(sim.Exp, sim.ExemplarAttrs) {
		if has(a, 1) || has(a, 7) || has(a, 9) {
			t.Error("a set that is not a number, histogram or summary point's has an encoding")
		}
	}
}

// Corrupting a stored encoding shows up in the output: the second request
// is served from it.
func TestProtoEncoderServesStoredBytes(t *testing.T) {
	shared := pipeline.NewSharedAttrs()
	set := shared.Share([]*commonpb.KeyValue{sv("k", "v")})
	rms := gaugeOf(set.KeyValues())
	e := ProtoEncoder{Shared: shared}
	first := e.AppendMetricsRequest(nil, rms)
	stored := set.Encodings().Proto(7)
	if stored == nil {
		t.Fatal("not stored")
	}
	stored[len(stored)-1] = 'X' // the last byte of the value "v"
	second := e.AppendMetricsRequest(nil, rms)
	if bytes.Equal(first, second) || !bytes.Contains(second, []byte("X")) {
		t.Fatal("second encoding not served from the stored bytes")
	}
	var plain ProtoEncoder
	if !bytes.Equal(plain.AppendMetricsRequest(nil, rms), first) {
		t.Fatal("an encoder without Shared used the stored bytes")
	}
	runtime.KeepAlive(set)
}

// A slice that is not the set's is encoded afresh, however it was made
// from the set's, even while the set's stored bytes are wrong.
func TestProtoEncoderOtherSlicesNotServed(t *testing.T) {
	shared := pipeline.NewSharedAttrs()
	set := shared.Share([]*commonpb.KeyValue{sv("a", "1"), sv("b", "2")})
	e := ProtoEncoder{Shared: shared}
	e.AppendMetricsRequest(nil, gaugeOf(set.KeyValues()))
	stored := set.Encodings().Proto(7)
	if stored == nil {
		t.Fatal("nothing stored")
	}
	stored[len(stored)-1] = 'X' // served, this would show
	for name, a := range otherSlices(set) {
		t.Run(name, func(t *testing.T) { checkCached(t, &e, gaugeOf(a)) })
	}
	runtime.KeepAlive(set)
}

// Slices that are no set's may be mutated in place between batches
// (processors may do that): they are encoded afresh every time.
func TestProtoEncoderUnsharedMutatedInPlace(t *testing.T) {
	attrs := make([]*commonpb.KeyValue, 1, 4)
	attrs[0] = sv("k", "before")
	rms := gaugeOf(attrs)
	e := ProtoEncoder{Shared: pipeline.NewSharedAttrs()}
	checkCached(t, &e, rms)
	attrs[0] = sv("k", "after")
	checkCached(t, &e, rms)
}

// BenchmarkProtoEncoderShared is the HTTP sink's steady state: the same
// 1000 series every request with new values. "uncached" is an encoder
// without the sets.
func BenchmarkProtoEncoderShared(b *testing.B) {
	shared := pipeline.NewSharedAttrs()
	rms, sets := sharedBatch1000(shared)
	for _, c := range []struct {
		name string
		enc  ProtoEncoder
	}{{"uncached", ProtoEncoder{}}, {"cached", ProtoEncoder{Shared: shared}}} {
		b.Run(c.name, func(b *testing.B) {
			e := c.enc
			buf := e.AppendMetricsRequest(nil, rms)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				buf = e.AppendMetricsRequest(buf[:0], rms)
			}
			b.ReportMetric(1000*float64(b.N)/b.Elapsed().Seconds(), "points/s")
		})
	}
	runtime.KeepAlive(sets)
}
