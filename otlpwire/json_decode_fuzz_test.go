package otlpwire

import (
	"testing"

	"github.com/otelstep/otelstep/pipeline"
	"google.golang.org/protobuf/proto"
)

func FuzzJSONDecodeMetrics(f *testing.F) { fuzzDecode(f, pipeline.Metrics) }
func FuzzJSONDecodeTraces(f *testing.F)  { fuzzDecode(f, pipeline.Traces) }
func FuzzJSONDecodeLogs(f *testing.F)    { fuzzDecode(f, pipeline.Logs) }

// maxJSONSeed bounds a seed: with the fixtures' 50 KB lines as seeds the
// fuzzer spent its two minutes minimizing one (every new input is, for up
// to a minute) and ran some 20 inputs. TestDecodeMatchesProtojsonOnFixtures
// checks the fixtures whole.
const maxJSONSeed = 4 << 10

// fuzzDecode checks, for any input, that the decoder does not panic, that
// it accepts everything the protojson path accepts with an equal result,
// and that what it accepts survives re-encoding with the package's encoder.
func fuzzDecode(f *testing.F, sig pipeline.Signal) {
	s := signals[sig]
	for _, fl := range fixtureLines(f) {
		if len(fl.data) <= maxJSONSeed {
			f.Add(fl.data) // every signal's lines: the others exercise unknown fields
		}
	}
	// The signal's fixtures cut into one request per metric, span or log
	// record, as OTLP/JSON.
	for _, pb := range encodeSeeds(f, sig) {
		m := newRequestOf(sig)
		if err := proto.Unmarshal(pb, m); err != nil {
			f.Fatal(err)
		}
		if js := s.encode(m); len(js) <= maxJSONSeed {
			f.Add(js)
		}
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
