package otlpwire_test

import (
	"testing"

	"github.com/otelstep/otelstep/pipeline"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
)

// The fuzz tests compare the decoder with proto.Unmarshal on arbitrary
// input (see compare): both fail, or both succeed with proto.Equal
// results; the strict decoder may also fail on a known field with an
// unexpected wire type, and an id of a length pdata refuses counts as
// proto.Unmarshal failing (reference). The corpus starts from the collector-written
// fixtures (the small ones) and the every-field requests.

func fuzzSeeds(f *testing.F, s pipeline.Signal) {
	for _, fx := range fixtures(f) {
		// Large seeds slow the fuzzer down (every new input is minimized,
		// for up to a minute); they are covered by TestDecodeFixtures.
		if fx.sig == s && len(fx.data) <= 2<<10 {
			f.Add(fx.data)
		}
	}
	for _, tc := range full() {
		if tc.sig == s && s != pipeline.Metrics {
			f.Add(marshal(tc.msg))
		}
	}
	if s == pipeline.Metrics {
		// The every-field metrics request, one metric a seed: small seeds
		// keep the fuzzer fast.
		rm := fullMetrics().ResourceMetrics[0]
		for _, m := range rm.ScopeMetrics[0].Metrics {
			f.Add(marshal(&colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{
				{ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{m}}}}}}))
		}
		f.Add(marshal(&colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{
			{Resource: rm.Resource, SchemaUrl: rm.SchemaUrl, ScopeMetrics: []*metricspb.ScopeMetrics{{Scope: rm.ScopeMetrics[0].Scope, SchemaUrl: "u"}}}}}))
	}
	f.Add([]byte{})
}

func FuzzDecodeTraces(f *testing.F) {
	fuzzSeeds(f, pipeline.Traces)
	f.Fuzz(func(t *testing.T, data []byte) { compare(t, pipeline.Traces, data) })
}

func FuzzDecodeLogs(f *testing.F) {
	fuzzSeeds(f, pipeline.Logs)
	f.Fuzz(func(t *testing.T, data []byte) { compare(t, pipeline.Logs, data) })
}

func FuzzDecodeMetrics(f *testing.F) {
	fuzzSeeds(f, pipeline.Metrics)
	f.Fuzz(func(t *testing.T, data []byte) { compare(t, pipeline.Metrics, data) })
}
