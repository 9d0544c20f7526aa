package scraper

import (
	"bytes"
	"testing"
	"time"

	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// fuzzConvert converts page twice with one Converter (the second scrape
// hits the per-series cache and the staleness paths), once more with a
// trimmed page (series disappear), then fails the target (Down). Nothing
// may panic or hang, and what comes out must be valid protobuf.
func fuzzConvert(t *testing.T, page []byte, ct string) {
	c := NewConverter(fixtureTarget("fuzz"))
	ts := time.Unix(1_800_000_000, 0)
	check := func(rm *metricspb.ResourceMetrics, err error) {
		if err != nil {
			return
		}
		if _, err := proto.Marshal(rm); err != nil {
			t.Fatalf("output does not marshal: %v", err)
		}
	}
	check(c.Convert(page, ct, ts))
	check(c.Convert(page, ct, ts.Add(time.Second)))
	check(c.Convert(page[:len(page)/2], ct, ts.Add(2*time.Second)))
	check(c.Down(ts.Add(3*time.Second), time.Millisecond), nil)
	check(c.Convert(page, ct, ts.Add(4*time.Second)))
}

// seed adds each fixture page whole, and cut at metric family boundaries
// into chunks of about 2 KiB: mutating (and minimising) a 100 KiB page
// costs so much per exec that the fuzzer would spend its time on a handful
// of inputs, while the chunks keep every construct of the pages.
func seed(f *testing.F, files ...string) {
	for _, name := range files {
		page := read(f, name)
		f.Add(page)
		var chunk []byte
		for _, line := range bytes.SplitAfter(page, []byte("\n")) {
			if bytes.HasPrefix(line, []byte("# HELP")) && len(chunk) > 2048 {
				f.Add(chunk)
				chunk = nil
			}
			chunk = append(chunk, line...)
		}
		if len(chunk) > 0 && len(chunk) < len(page) {
			f.Add(chunk)
		}
	}
}

func FuzzConvertText(f *testing.F) {
	seed(f, "vllm.txt", "node.txt", "dcgm.txt", "edge.txt")
	f.Add([]byte("# TYPE c counter\nc_total 1\nc_created 2\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_count 1\n"))
	f.Fuzz(func(t *testing.T, page []byte) { fuzzConvert(t, page, ctText) })
}

func FuzzConvertOpenMetrics(f *testing.F) {
	seed(f, "openmetrics.om")
	f.Add([]byte("# TYPE c counter\nc_total 1 # {trace_id=\"00\"} 1\nc_created 2\n# EOF\n"))
	f.Fuzz(func(t *testing.T, page []byte) { fuzzConvert(t, page, ctOM) })
}
