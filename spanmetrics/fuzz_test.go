package spanmetrics

import (
	"slices"
	"testing"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// FuzzScanSpan: whatever protobuf decodes as a Span, scanSpan reads as
// fromSpan reads the decoded Span; anything else it may refuse, never
// panic on.
func FuzzScanSpan(f *testing.F) {
	b := recordBatch(f, goldenRequest(f))
	for _, rs := range b.Traces {
		for _, ss := range rs.ScopeSpans {
			for rec := range ss.Records.All() {
				f.Add(rec)
			}
		}
	}
	lb := recordBatch(f, loadRequest(2))
	for rec := range lb.Traces[0].ScopeSpans[0].Records.All() {
		f.Add(rec)
		break
	}
	c := newConnector(f, Config{Dimensions: []Dimension{{Name: "service.name.override"}, {Name: "nemo.gym.sandbox.provider"}, {Name: "attr.3"}}}, &recorder{})
	f.Fuzz(func(t *testing.T, rec []byte) {
		var scanned spanFields
		ok := c.scanSpan(rec, &scanned)
		scanKeys, scanVals := hitsOf(c)
		// Unknown fields dropped, as the receiver's decoder drops them.
		sp := new(tracepb.Span)
		if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(rec, sp); err != nil {
			return
		}
		if !ok {
			t.Fatalf("scanSpan refused a span protobuf decodes: %v", sp)
		}
		var decoded spanFields
		c.fromSpan(sp, &decoded)
		keys, vals := hitsOf(c)
		if !sameFields(scanned, decoded) || !slices.Equal(scanKeys, keys) {
			t.Fatalf("scanned %+v %q, decoded %+v %q", scanned, scanKeys, decoded, keys)
		}
		for i := range vals {
			if !proto.Equal(scanVals[i], vals[i]) {
				t.Fatalf("dimension %d: scanned %v, decoded %v", i, scanVals[i], vals[i])
			}
		}
	})
}
