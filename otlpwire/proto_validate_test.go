package otlpwire_test

import (
	"testing"

	"github.com/otelstep/otelstep/otlpwire"
	"github.com/otelstep/otelstep/pipeline"
)

// itemRecords returns the span (Traces) or log record (Logs) records the
// decoder keeps from the every-field requests and the small fixtures.
func itemRecords(t testing.TB, s pipeline.Signal) [][]byte {
	var bodies [][]byte
	for _, tc := range full() {
		if tc.sig == s {
			bodies = append(bodies, marshal(tc.msg))
		}
	}
	for _, fx := range fixtures(t) {
		if fx.sig == s {
			bodies = append(bodies, fx.data)
		}
	}
	var recs [][]byte
	for _, body := range bodies {
		b, err := otlpwire.UnmarshalRequest(s, body)
		if err != nil {
			t.Fatal(err)
		}
		var all [][]byte
		for _, rs := range b.Traces {
			for _, ss := range rs.ScopeSpans {
				all = append(all, ss.Records)
			}
		}
		for _, rl := range b.Logs {
			for _, sl := range rl.ScopeLogs {
				all = append(all, sl.Records)
			}
		}
		for _, records := range all {
			for rec := range pipeline.Records(records).All() {
				recs = append(recs, rec)
			}
		}
	}
	if len(recs) == 0 {
		t.Fatalf("no %v records", s)
	}
	return recs
}

// checkValid fails when the validator and decoding into scratch disagree
// on rec, in either mode.
func checkValid(t *testing.T, s pipeline.Signal, rec []byte) {
	t.Helper()
	for _, lenient := range []bool{false, true} {
		if valid, decodes := otlpwire.CheckItem(s, rec, lenient); valid != decodes {
			t.Fatalf("signal %v, lenient %v: validator says %v, decoding %v\nrecord %x", s, lenient, valid, decodes, rec)
		}
	}
}

// The validator accepts every record the encoders write (so the decoder
// takes its short way), and agrees with decoding on each of them cut
// short or with a byte changed.
func TestValidItemsAgree(t *testing.T) {
	for _, s := range []pipeline.Signal{pipeline.Traces, pipeline.Logs} {
		for _, rec := range itemRecords(t, s) {
			if valid, _ := otlpwire.CheckItem(s, rec, false); !valid {
				t.Fatalf("signal %v: the validator refuses a record proto.Marshal wrote: %x", s, rec)
			}
			for n := range len(rec) {
				checkValid(t, s, rec[:n])
			}
			for i := range rec {
				for _, c := range []byte{0x00, 0x07, 0x80, 0xc3, 0xff, rec[i] ^ 0x01, rec[i] + 0x40} {
					bad := append([]byte(nil), rec...)
					bad[i] = c
					checkValid(t, s, bad)
				}
			}
		}
	}
}

func FuzzValidSpan(f *testing.F) {
	for _, rec := range itemRecords(f, pipeline.Traces) {
		f.Add(rec)
	}
	f.Fuzz(func(t *testing.T, rec []byte) { checkValid(t, pipeline.Traces, rec) })
}

func FuzzValidLogRecord(f *testing.F) {
	for _, rec := range itemRecords(f, pipeline.Logs) {
		f.Add(rec)
	}
	f.Fuzz(func(t *testing.T, rec []byte) { checkValid(t, pipeline.Logs, rec) })
}
