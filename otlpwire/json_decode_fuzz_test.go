package otlpwire

import (
	"bytes"
	"testing"

	"github.com/otelstep/otelstep/pipeline"
	"google.golang.org/protobuf/proto"
)

func FuzzJSONDecodeMetrics(f *testing.F) { fuzzDecode(f, pipeline.Metrics) }
func FuzzJSONDecodeTraces(f *testing.F)  { fuzzDecode(f, pipeline.Traces) }
func FuzzJSONDecodeLogs(f *testing.F)    { fuzzDecode(f, pipeline.Logs) }

// maxJSONSeed bounds a seed as maxEncodeSeed does the encoders', for the
// same reason: the minimizer's work grows with the square of an input's
// size. TestDecodeMatchesProtojsonOnFixtures checks the fixtures whole.
const maxJSONSeed = maxEncodeSeed

// fuzzDecode checks, for any input, that the decoder does not panic, that
// it accepts everything the protojson path accepts with an equal result,
// and that what it accepts survives re-encoding with the package's encoder.
func fuzzDecode(f *testing.F, sig pipeline.Signal) {
	s := signals[sig]
	for _, js := range jsonSeeds(f, sig) {
		f.Add(js)
	}
	for _, seed := range []string{
		`{}`, `{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"gauge":{"dataPoints":[{"asDouble":"NaN","asInt":null}]}}]}]}]}`,
		`{"resource_spans":[{"scope_spans":[{"spans":[{"trace_id":"0A0B0C0D0E0F0A0B0C0D0E0F0A0B0C0D","kind":"SPAN_KIND_SERVER","status":{"code":2},"start_time_unix_nano":1e3}]}]}]}`,
		`{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":{"kvlistValue":{"values":[{"key":"k","value":{"arrayValue":{"values":[{"bytesValue":"AQ=="},{"doubleValue":"-Infinity"}]}}}]}},"severityNumber":"SEVERITY_NUMBER_WARN"}]}]}]}`,
		`{"resourceLogs":[{"resource":{"attributes":[{"key":"\u00e9\ud83d\ude00","value":{"stringValue":"a\"b\\c"}}],"entityRefs":[{"idKeys":["a"]}]}}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := s.decode(data)
		want, perr := s.ref(data)
		if perr == nil {
			if err != nil {
				t.Fatalf("protojson path accepts the input, new decoder: %v", err)
			}
			if !proto.Equal(got, want) {
				t.Fatalf("decoders differ\nprotojson: %v\nnew:       %v", want, got)
			}
		}
		if err != nil {
			checkOffset(t, data, err.Error())
			return
		}
		enc := s.encode(got)
		again, err := s.decode(enc)
		if err != nil {
			t.Fatalf("decoding the re-encoded request: %v\n%s", err, enc)
		}
		if !proto.Equal(got, again) {
			t.Fatalf("re-encoding is not stable\nfirst:  %v\nsecond: %v\n%s", got, again, enc)
		}
	})
}

// jsonSeeds is the fixtures' requests as OTLP/JSON cut to maxJSONSeed (see
// fixtureSeeds): sig's lines and items, then the other signals' lines,
// which exercise unknown fields.
func jsonSeeds(t testing.TB, sig pipeline.Signal) [][]byte {
	var own, others [][]byte
	for i, s := range signals {
		lines, items := fixtureSeeds(t, pipeline.Signal(i), func(m proto.Message) bool { return len(s.encode(m)) <= maxJSONSeed })
		if pipeline.Signal(i) != sig {
			for _, m := range lines {
				others = append(others, s.encode(m))
			}
			continue
		}
		for _, m := range append(lines, items...) {
			own = append(own, s.encode(m))
		}
	}
	return append(own, others...)
}

// Every signal's OTLP/JSON decoder fuzz target starts from seeds of its
// fixtures, none over maxJSONSeed: a fixture file renamed or cut, or a
// seed bound too low, would leave it fuzzing from nothing.
func TestJSONSeedsFromFixtures(t *testing.T) {
	for _, sig := range []pipeline.Signal{pipeline.Metrics, pipeline.Traces, pipeline.Logs} {
		n, items := 0, 0
		for _, js := range jsonSeeds(t, sig) {
			if len(js) > maxJSONSeed {
				t.Errorf("%s: a seed of %d bytes, over maxJSONSeed", sig, len(js))
			}
			if !bytes.HasPrefix(js, []byte(signals[sig].prefix)) {
				continue
			}
			m, err := signals[sig].decode(js)
			if err != nil {
				t.Fatalf("%s: a seed the decoder refuses: %v\n%s", sig, err, js)
			}
			pb, err := proto.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			b, err := UnmarshalRequest(sig, pb)
			if err != nil {
				t.Fatal(err)
			}
			n++
			items += b.Items
		}
		if n < 2 || items == 0 {
			t.Errorf("%s: %d seeds of the signal holding %d items from the fixtures", sig, n, items)
		}
		t.Logf("%s: %d seeds of the signal, %d items", sig, n, items)
	}
}
