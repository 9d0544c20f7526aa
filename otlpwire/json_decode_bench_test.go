package otlpwire

import (
	"bytes"
	"testing"
)

// fixtureKind returns the fixture lines whose top-level key is prefix.
func fixtureKind(b *testing.B, prefix string) ([][]byte, int64) {
	var lines [][]byte
	var n int64
	for _, fl := range fixtureLines(b) {
		if bytes.HasPrefix(fl.data, []byte(prefix)) {
			lines = append(lines, fl.data)
			n += int64(len(fl.data))
		}
	}
	if len(lines) == 0 {
		b.Fatalf("no %s fixtures", prefix)
	}
	return lines, n
}

// benchDecode decodes every fixture line of one signal per iteration and
// reports throughput over the JSON input.
func benchDecode(b *testing.B, prefix string, decode func([]byte) error) {
	lines, n := fixtureKind(b, prefix)
	b.SetBytes(n)
	b.ReportAllocs()
	for b.Loop() {
		for _, l := range lines {
			if err := decode(l); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkJSONDecodeMetrics(b *testing.B) { benchDecode(b, `{"resourceMetrics"`, decM) }
func BenchmarkJSONDecodeTraces(b *testing.B)  { benchDecode(b, `{"resourceSpans"`, decT) }
func BenchmarkJSONDecodeLogs(b *testing.B)    { benchDecode(b, `{"resourceLogs"`, decL) }

// The protojson path, for comparison.
func BenchmarkDecodeMetricsProtojson(b *testing.B) {
	benchDecode(b, `{"resourceMetrics"`, func(l []byte) error { _, err := pjDecodeMetrics(l); return err })
}
func BenchmarkDecodeTracesProtojson(b *testing.B) {
	benchDecode(b, `{"resourceSpans"`, func(l []byte) error { _, err := pjDecodeTraces(l); return err })
}
func BenchmarkDecodeLogsProtojson(b *testing.B) {
	benchDecode(b, `{"resourceLogs"`, func(l []byte) error { _, err := pjDecodeLogs(l); return err })
}
