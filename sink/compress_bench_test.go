package sink

import (
	"bytes"
	"testing"
)

// BenchmarkExportBody is the HTTP sink's encoding of one batch per signal,
// at the exporter's default compression, with the encoder kept as a
// worker keeps it: items a second and the bytes the backend receives per
// item. The batches are the reference requests of TestGzipSizeAsCollectors
// and the synthetic load's spans.
func BenchmarkExportBody(b *testing.B) {
	batches := referenceRequests(b)
	batches = append(batches, namedBatch{"random-1000-spans", randomSpans(1000)}, namedBatch{"metrics-1000-points", bench1000()})
	for _, bt := range batches {
		b.Run(bt.name, func(b *testing.B) {
			var re requestEncoder
			var out bytes.Buffer
			for b.Loop() {
				if err := re.encode(bt.b, DefaultCompression, &out); err != nil {
					b.Fatal(err)
				}
			}
			n := float64(bt.b.Items)
			b.ReportMetric(n*float64(b.N)/b.Elapsed().Seconds(), "items/s")
			b.ReportMetric(float64(out.Len())/n, "wire-bytes/item")
		})
	}
}
