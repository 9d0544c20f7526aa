package otlpwire

import (
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/otelstep/otelstep/pipeline"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
)

// The writers of each message (generated_json_encode.go) write fields in
// .proto declaration order, as protojson does, omit proto3 zero values, nil
// messages and empty lists, and always write the member of a oneof that is
// set (even when it holds a zero value); the entry points of each signal
// are generated too (generated_api.go). What is written by hand: the
// writer's state (pointWriter), the field helpers and primitives
// (json_encode_values.go), and the primitives of the items kept as records
// (json_encode_records.go; their writers are generated too,
// generated_json_records.go).
//
// Every helper appends to b and returns the extended slice. Commas are
// handled with a "first" flag per object: field helpers write a leading comma
// unless they are the first field written.

// MetricsEncoder is AppendMetrics reusing the OTLP/JSON of data-point
// attributes (and metrics' metadata) that are a shared set's
// (pipeline.AttrSet, whose pipeline.AttrEncodings Shared finds): the
// scraper sends every series again with its set's slice each scrape, and
// re-encoding them each time would be much of the scrape path's work. The first encoder to meet
// a set stores its JSON with the set; every encoder after writes the
// stored bytes. The output is byte-identical to AppendMetrics'. Other
// slices are encoded as usual.
//
// The zero value is ready to use (and reuses nothing), and it is safe for
// concurrent use as long as its fields are not changed meanwhile.
type MetricsEncoder struct {
	// Shared finds the sets whose stored encodings are used and filled;
	// nil: none.
	Shared *pipeline.SharedAttrs
	// Flush, when set, is called between two data points (and two metrics)
	// once the buffer holds FlushAt bytes or more. It takes the buffer,
	// writes out what it can, and returns the buffer to go on appending to,
	// holding the bytes it did not write out. Nothing appended before is
	// looked at again, so a line can go out in pieces while one resource of
	// it is being encoded: a resource of 20,000 series is megabytes of
	// JSON, which held whole grew the JSONL sink's buffer at every scrape.
	Flush   func(b []byte) []byte
	FlushAt int
}

// pointWriter returns a pointWriter using e's sets and Flush.
func (e *MetricsEncoder) pointWriter() *pointWriter {
	return &pointWriter{shared: e.Shared, flush: e.Flush, flushAt: e.FlushAt}
}

// pointWriter is what the data-point writers of one call carry: the sets
// whose stored attribute encodings they use (nil: none), the digits of
// the last start and time written (a scrape's points share its time and
// mostly one start, the first scrape's, whose 19-digit decimals are so
// formatted once), and the text of the last list of doubles written (a
// histogram point's explicit bounds: a family's points share them).
type pointWriter struct {
	shared  *pipeline.SharedAttrs
	last    [2]timeDigits // start, time
	doubles lastDoubles
	// flush and flushAt are MetricsEncoder's Flush and FlushAt.
	flush   func(b []byte) []byte
	flushAt int
}

// maybeFlush hands b to pw.flush once it holds pw.flushAt bytes. It is
// called only between two points or two metrics.
func (pw *pointWriter) maybeFlush(b []byte) []byte {
	if pw.flush != nil && len(b) >= pw.flushAt {
		return pw.flush(b)
	}
	return b
}

type timeDigits struct {
	v uint64
	n uint8
	d [20]byte
}

// append writes v as a quoted decimal, from the last digits if v is the
// last value.
func (t *timeDigits) append(b []byte, v uint64) []byte {
	if v != t.v || t.n == 0 {
		t.v, t.n = v, uint8(len(strconv.AppendUint(t.d[:0], v, 10)))
	}
	b = append(b, '"')
	b = append(b, t.d[:t.n]...)
	return append(b, '"')
}

// lastDoubles is the list of doubles written last and its JSON array, to
// write again when the next list holds the same values. It keeps a copy of
// the values, compared bit for bit (0 and -0 are written differently), not
// the slice: a list changed in place since is formatted afresh. Its room is
// fixed, so the writer allocates nothing; a longer list is formatted every
// time.
type lastDoubles struct {
	n    int // values held; 0: none
	vs   [maxLastDoubles]float64
	tn   int
	text [maxLastDoubles*maxFloatText + 2]byte
}

const (
	// maxLastDoubles is the longest list kept: room for the bounds of
	// the histograms exporters serve (vLLM's longest have 22).
	maxLastDoubles = 32
	// maxFloatText is the longest appendFloat writes a finite value in
	// ("-2.2250738585072014e-308"), with the comma before it.
	maxFloatText = 25
)

// field writes vs as field name (nothing when it is empty), from the last
// list's text when vs holds the same values.
func (d *lastDoubles) field(b []byte, first *bool, name string, vs []float64) []byte {
	if len(vs) == 0 {
		return b
	}
	b = key(b, first, name)
	if d.holds(vs) {
		return append(b, d.text[:d.tn]...)
	}
	start := len(b)
	b = appendDoubles(b, vs)
	d.n = 0
	if text := b[start:]; len(vs) <= maxLastDoubles && len(text) <= len(d.text) {
		d.n, d.tn = copy(d.vs[:], vs), copy(d.text[:], text)
	}
	return b
}

// holds reports whether vs are the values d holds, bit for bit.
func (d *lastDoubles) holds(vs []float64) bool {
	if len(vs) != d.n {
		return false
	}
	for i, v := range vs {
		if math.Float64bits(v) != math.Float64bits(d.vs[i]) {
			return false
		}
	}
	return true
}

// A request piece by piece: the OTLP/JSON of an export request with at least
// one resource is RequestStart(signal), then each resource's encoding
// (AppendResourceMetrics, AppendResourceSpans, AppendResourceLogs) with ','
// between them, then RequestEnd: byte for byte what AppendMetrics,
// AppendTraces and AppendLogs write. A writer can so emit a batch of many
// megabytes through a buffer of a few hundred kilobytes. (A request with no
// resources is "{}".)

// RequestEnd is how the OTLP/JSON of a non-empty export request ends.
const RequestEnd = "]}"

// ---- common ----

// skipped compares without regard to case: the token must stay off disk
// whether a sender spelled the key Authorization or authorization.
func skipped(k string, skip []string) bool {
	for _, s := range skip {
		if strings.EqualFold(k, s) {
			return true
		}
	}
	return false
}

// fieldSkipAttrs writes the field name of KeyValues kvs, leaving out keys
// in skip; not at all when none is left.
func fieldSkipAttrs(b []byte, first *bool, name string, kvs []*commonpb.KeyValue, skip []string) []byte {
	kept := len(kvs)
	if kept > 0 && len(skip) > 0 {
		kept = 0
		for _, kv := range kvs {
			if kv == nil || !skipped(kv.Key, skip) {
				kept++
			}
		}
	}
	if kept == 0 {
		return b
	}
	b = key(b, first, name)
	return appendKeyValues(b, kvs, skip)
}

// appendKeyValues writes a JSON array of KeyValue, leaving out keys in skip.
func appendKeyValues(b []byte, kvs []*commonpb.KeyValue, skip []string) []byte {
	b = append(b, '[')
	n := 0
	for _, kv := range kvs {
		if len(skip) > 0 && kv != nil && skipped(kv.Key, skip) {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = appendKeyValue(b, kv)
	}
	return append(b, ']')
}

// Decoders of received items (pipeline.Records), pooled: each decodes one
// item at a time into scratch, so encoding them keeps nothing decoded.
var (
	spanDecoders      = sync.Pool{New: func() any { return new(SpanDecoder) }}
	logRecordDecoders = sync.Pool{New: func() any { return new(LogRecordDecoder) }}
)

// itemDecoder is a SpanDecoder or LogRecordDecoder.
type itemDecoder[T any] interface {
	Decode(rec []byte) (*T, error)
	Reset()
}

// fieldItems writes the list of a scope message's items: msgs (items built
// as messages), then the items among records (received); an empty list is
// left out, as proto3 JSON does. Each record is written by direct (if not
// nil) from its bytes, or else decoded by a decoder from pool and written
// with fn, as msgs are. A record that does not decode is left out; the
// decoder checked every record it kept, so none does.
func fieldItems[T any](b []byte, first *bool, name string, msgs []*T, records pipeline.Records, direct func(b, rec []byte) ([]byte, bool), pool *sync.Pool, fn func([]byte, *T) []byte) []byte {
	if len(msgs) == 0 && records.Empty() {
		return b
	}
	b = key(b, first, name)
	b = append(b, '[')
	for i, m := range msgs {
		if i > 0 {
			b = append(b, ',')
		}
		b = fn(b, m)
	}
	comma := len(msgs) > 0
	var d itemDecoder[T]
	for rec := range records.All() {
		if direct != nil {
			at := len(b)
			if comma {
				b = append(b, ',')
			}
			var done bool
			if b, done = direct(b, rec); done {
				comma = true
				continue
			}
			b = b[:at]
		}
		if d == nil {
			d = pool.Get().(itemDecoder[T])
		}
		m, err := d.Decode(rec)
		if err != nil {
			continue
		}
		if comma {
			b = append(b, ',')
		}
		comma = true
		b = fn(b, m)
	}
	if d != nil {
		d.Reset()
		pool.Put(d)
	}
	return append(b, ']')
}
