package otlpwire

import (
	"fmt"
	"strings"
	"testing"
)

// Every id of OTLP/JSON is accepted empty or as 32 (trace) or 16 (span)
// hex digits, and refused with any other length, as the collector refuses
// it, with an error naming the field, where it is and the lengths. The
// item holding the id is the second of the second scope of the second
// resource.
func TestJSONDecodeIDLengths(t *testing.T) {
	const (
		tid = `"0102030405060708090a0b0c0d0e0f10"`
		sid = `"1112131415161718"`
	)
	span := func(fields string) string {
		return `{"resourceSpans":[{"scopeSpans":[{"spans":[{}]}]},{"scopeSpans":[{"spans":[{}]},{"spans":[{"traceId":` + tid + `},{` + fields + `}]}]}]}`
	}
	cases := []struct {
		name, path string
		digits     int
		in         func(id string) string
	}{
		{"span traceId", "resourceSpans[1].scopeSpans[1].spans[1].traceId", 32,
			func(id string) string { return span(`"spanId":` + sid + `,"traceId":` + id) }},
		{"span spanId", "resourceSpans[1].scopeSpans[1].spans[1].spanId", 16,
			func(id string) string { return span(`"traceId":` + tid + `,"spanId":` + id) }},
		{"span parentSpanId", "resourceSpans[1].scopeSpans[1].spans[1].parentSpanId", 16,
			func(id string) string { return span(`"parent_span_id":` + id) }},
		{"link traceId", "resourceSpans[1].scopeSpans[1].spans[1].links[1].traceId", 32,
			func(id string) string {
				return span(`"links":[{"traceId":` + tid + `},{"spanId":` + sid + `,"traceId":` + id + `}]`)
			}},
		{"link spanId", "resourceSpans[1].scopeSpans[1].spans[1].links[1].spanId", 16,
			func(id string) string { return span(`"links":[{},{"span_id":` + id + `}]`) }},
		{"log record traceId", "resourceLogs[1].scopeLogs[1].logRecords[1].traceId", 32,
			func(id string) string {
				return `{"resourceLogs":[{},{"scopeLogs":[{},{"logRecords":[{"traceId":` + tid + `},{"spanId":` + sid + `,"traceId":` + id + `}]}]}]}`
			}},
		{"log record spanId", "resourceLogs[1].scopeLogs[1].logRecords[1].spanId", 16,
			func(id string) string {
				return `{"resourceLogs":[{},{"scopeLogs":[{},{"logRecords":[{},{"spanId":` + id + `}]}]}]}`
			}},
		{"exemplar traceId", "resourceMetrics[1].scopeMetrics[1].metrics[0].sum.dataPoints[1].exemplars[1].traceId", 32,
			func(id string) string {
				return `{"resourceMetrics":[{},{"scopeMetrics":[{},{"metrics":[{"sum":{"dataPoints":[{},{"exemplars":[{"traceId":` + tid + `},{"traceId":` + id + `}]}]}}]}]}]}`
			}},
		{"exemplar spanId", "resourceMetrics[1].scopeMetrics[1].metrics[0].gauge.dataPoints[1].exemplars[1].spanId", 16,
			func(id string) string {
				return `{"resourceMetrics":[{},{"scopeMetrics":[{},{"metrics":[{"gauge":{"dataPoints":[{},{"exemplars":[{},{"span_id":` + id + `}]}]}}]}]}]}`
			}},
	}
	for _, c := range cases {
		for _, n := range []int{0, 2, c.digits - 2, c.digits - 1, c.digits, c.digits + 1, c.digits + 2, 2 * c.digits} {
			in := []byte(c.in(`"` + strings.Repeat("aB", n)[:n] + `"`))
			s := signalFor(t, in)
			_, err := s.decode(in)
			_, perr := s.ref(in)
			if n == 0 || n == c.digits {
				if err != nil || perr != nil {
					t.Errorf("%s of %d hex digits: %v (reference: %v)", c.name, n, err, perr)
				}
				continue
			}
			if perr == nil {
				t.Errorf("%s of %d hex digits: the reference accepts it", c.name, n)
			}
			what := map[int]string{32: "trace id", 16: "span id"}[c.digits]
			odd := ""
			if n%2 != 0 {
				odd = " an odd number of hex digits,"
			}
			msg := fmt.Sprintf("%s of %d hex digits,%s must be %d hex digits (%d bytes) or empty", what, n, odd, c.digits, c.digits/2)
			prefix := "otlpwire: decode OTLP/JSON " + s.name + ": " + c.path + ": at byte "
			if err == nil || !strings.HasPrefix(err.Error(), prefix) || !strings.HasSuffix(err.Error(), ": "+msg) {
				t.Errorf("%s of %d hex digits:\n got %v\nwant %s...: %s", c.name, n, err, prefix, msg)
				continue
			}
			checkOffset(t, in, err.Error())
		}
	}
}
