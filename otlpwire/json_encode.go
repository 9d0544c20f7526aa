package otlpwire

import (
	"encoding/base64"
	"strconv"
	"strings"
	"sync"

	"github.com/otelstep/otelstep/pipeline"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
)

// The encoders write fields in .proto declaration order, as protojson does,
// omit proto3 zero values, nil messages and empty lists, and always write the
// member of a oneof that is set (even when it holds a zero value).
//
// Every helper appends to b and returns the extended slice. Commas are
// handled with a "first" flag per object: field helpers write a leading comma
// unless they are the first field written.

// AppendMetrics appends the OTLP/JSON encoding of an ExportMetricsServiceRequest holding rms to dst (no trailing newline).
// Resource attributes whose key equals any of skipResourceKeys are left out (used to keep the Authorization token off disk).
func AppendMetrics(dst []byte, rms []*metricspb.ResourceMetrics, skipResourceKeys ...string) []byte {
	return appendMetricsRequest(dst, rms, skipResourceKeys, &pointWriter{})
}

// MetricsEncoder is AppendMetrics reusing the OTLP/JSON of data-point
// attributes (and metrics' metadata) that are a shared set's
// (pipeline.AttrSet, whose pipeline.AttrEncodings Shared finds): the
// scraper sends every series again with its set's slice each scrape, and
// encoding them was ~8% of the scrape path's CPU. The first encoder to meet
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

// AppendMetrics appends the OTLP/JSON encoding of an
// ExportMetricsServiceRequest holding rms to dst, as the package-level
// AppendMetrics does.
func (e *MetricsEncoder) AppendMetrics(dst []byte, rms []*metricspb.ResourceMetrics, skipResourceKeys ...string) []byte {
	return appendMetricsRequest(dst, rms, skipResourceKeys, e.pointWriter())
}

// pointWriter returns a pointWriter using e's sets and Flush.
func (e *MetricsEncoder) pointWriter() *pointWriter {
	return &pointWriter{shared: e.Shared, flush: e.Flush, flushAt: e.FlushAt}
}

// appendMetricsRequest is AppendMetrics through pw.
func appendMetricsRequest(dst []byte, rms []*metricspb.ResourceMetrics, skip []string, pw *pointWriter) []byte {
	return appendRequest(dst, pipeline.Metrics, rms, func(b []byte, r *metricspb.ResourceMetrics) []byte {
		return appendResourceMetrics(b, r, skip, pw)
	})
}

// pointWriter is what the data-point writers of one call carry: the sets
// whose stored attribute encodings they use (nil: none), and the digits of
// the last start and time written. A scrape's points share its time and
// mostly one start (the first scrape's), and formatting the two 19-digit
// decimals of each point was a twentieth of the scrape path's
// instructions.
type pointWriter struct {
	shared *pipeline.SharedAttrs
	last   [2]timeDigits // start, time
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

// times writes a point's startTimeUnixNano and timeUnixNano fields, as
// fieldUint64 does.
func (pw *pointWriter) times(b []byte, first *bool, start, time uint64) []byte {
	if start != 0 {
		b = key(b, first, "startTimeUnixNano")
		b = pw.last[0].append(b, start)
	}
	if time != 0 {
		b = key(b, first, "timeUnixNano")
		b = pw.last[1].append(b, time)
	}
	return b
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

// appendRequest appends the export request of signal s holding xs, each
// encoded by fn, framed as RequestStart describes: the whole-request
// encoders and a writer emitting a request piece by piece share one framing.
func appendRequest[T any](dst []byte, s pipeline.Signal, xs []T, fn func([]byte, T) []byte) []byte {
	if len(xs) == 0 {
		return append(dst, "{}"...)
	}
	dst = append(dst, RequestStart(s)...)
	for i, x := range xs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = fn(dst, x)
	}
	return append(dst, RequestEnd...)
}

// A request piece by piece: the OTLP/JSON of an export request with at least
// one resource is RequestStart(signal), then each resource's encoding
// (AppendResourceMetrics, AppendResourceSpans, AppendResourceLogs) with ','
// between them, then RequestEnd: byte for byte what AppendMetrics,
// AppendTraces and AppendLogs write. A writer can so emit a batch of many
// megabytes through a buffer of a few hundred kilobytes. (A request with no
// resources is "{}".)

// RequestStart returns how the OTLP/JSON of a non-empty export request of
// signal s begins, or "" for an unknown signal.
func RequestStart(s pipeline.Signal) string {
	switch s {
	case pipeline.Metrics:
		return `{"resourceMetrics":[`
	case pipeline.Traces:
		return `{"resourceSpans":[`
	case pipeline.Logs:
		return `{"resourceLogs":[`
	}
	return ""
}

// RequestEnd is how the OTLP/JSON of a non-empty export request ends.
const RequestEnd = "]}"

// AppendResourceMetrics appends the OTLP/JSON encoding of one
// ResourceMetrics, as an element of a request's list (see RequestStart),
// reusing the encodings stored with shared sets as e.AppendMetrics does.
func (e *MetricsEncoder) AppendResourceMetrics(dst []byte, rm *metricspb.ResourceMetrics, skipResourceKeys ...string) []byte {
	return appendResourceMetrics(dst, rm, skipResourceKeys, e.pointWriter())
}

// AppendResourceSpans appends the OTLP/JSON encoding of one ResourceSpans,
// as an element of a request's list (see RequestStart).
func AppendResourceSpans(dst []byte, rs *pipeline.ResourceSpans, skipResourceKeys ...string) []byte {
	return appendResourceSpans(dst, rs, skipResourceKeys)
}

// AppendResourceLogs appends the OTLP/JSON encoding of one ResourceLogs, as
// an element of a request's list (see RequestStart).
func AppendResourceLogs(dst []byte, rl *pipeline.ResourceLogs, skipResourceKeys ...string) []byte {
	return appendResourceLogs(dst, rl, skipResourceKeys)
}

// AppendTraces appends the OTLP/JSON encoding of an ExportTraceServiceRequest holding rss to dst (no trailing newline).
// Resource attributes whose key equals any of skipResourceKeys are left out.
func AppendTraces(dst []byte, rss []*pipeline.ResourceSpans, skipResourceKeys ...string) []byte {
	return appendRequest(dst, pipeline.Traces, rss, func(b []byte, r *pipeline.ResourceSpans) []byte { return appendResourceSpans(b, r, skipResourceKeys) })
}

// AppendLogs appends the OTLP/JSON encoding of an ExportLogsServiceRequest holding rls to dst (no trailing newline).
// Resource attributes whose key equals any of skipResourceKeys are left out.
func AppendLogs(dst []byte, rls []*pipeline.ResourceLogs, skipResourceKeys ...string) []byte {
	return appendRequest(dst, pipeline.Logs, rls, func(b []byte, r *pipeline.ResourceLogs) []byte { return appendResourceLogs(b, r, skipResourceKeys) })
}

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

func appendKeyValue(b []byte, kv *commonpb.KeyValue) []byte {
	b = append(b, '{')
	if kv != nil {
		first := true
		b = fieldString(b, &first, "key", kv.Key)
		if kv.Value != nil {
			b = key(b, &first, "value")
			b = appendAnyValue(b, kv.Value)
		}
		b = fieldInt32(b, &first, "keyStrindex", kv.KeyStrindex)
	}
	return append(b, '}')
}

func appendAnyValue(b []byte, v *commonpb.AnyValue) []byte {
	b = append(b, '{')
	switch x := v.Value.(type) {
	case *commonpb.AnyValue_StringValue:
		b = append(b, `"stringValue":`...)
		b = appendString(b, x.StringValue)
	case *commonpb.AnyValue_BoolValue:
		if x.BoolValue {
			b = append(b, `"boolValue":true`...)
		} else {
			b = append(b, `"boolValue":false`...)
		}
	case *commonpb.AnyValue_IntValue:
		b = append(b, `"intValue":"`...)
		b = strconv.AppendInt(b, x.IntValue, 10)
		b = append(b, '"')
	case *commonpb.AnyValue_DoubleValue:
		b = append(b, `"doubleValue":`...)
		b = appendFloat(b, x.DoubleValue)
	case *commonpb.AnyValue_ArrayValue:
		b = append(b, `"arrayValue":{`...)
		if x.ArrayValue != nil && len(x.ArrayValue.Values) > 0 {
			b = append(b, `"values":[`...)
			for i, e := range x.ArrayValue.Values {
				if i > 0 {
					b = append(b, ',')
				}
				if e == nil {
					b = append(b, '{', '}')
					continue
				}
				b = appendAnyValue(b, e)
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	case *commonpb.AnyValue_KvlistValue:
		b = append(b, `"kvlistValue":{`...)
		if x.KvlistValue != nil && len(x.KvlistValue.Values) > 0 {
			b = append(b, `"values":`...)
			b = appendKeyValues(b, x.KvlistValue.Values, nil)
		}
		b = append(b, '}')
	case *commonpb.AnyValue_BytesValue:
		b = append(b, `"bytesValue":"`...)
		b = base64.StdEncoding.AppendEncode(b, x.BytesValue)
		b = append(b, '"')
	case *commonpb.AnyValue_StringValueStrindex:
		b = append(b, `"stringValueStrindex":`...)
		b = strconv.AppendInt(b, int64(x.StringValueStrindex), 10)
	}
	return append(b, '}')
}

func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

func appendResource(b []byte, r *resourcepb.Resource, skip []string) []byte {
	b = append(b, '{')
	first := true
	if len(r.Attributes) > 0 {
		// Only write the field if something survives the skip list.
		kept := len(r.Attributes)
		if len(skip) > 0 {
			kept = 0
			for _, kv := range r.Attributes {
				if kv == nil || !skipped(kv.Key, skip) {
					kept++
				}
			}
		}
		if kept > 0 {
			b = fieldAttrs(b, &first, "attributes", r.Attributes, skip)
		}
	}
	b = fieldUint32(b, &first, "droppedAttributesCount", r.DroppedAttributesCount)
	if len(r.EntityRefs) > 0 {
		b = key(b, &first, "entityRefs")
		b = append(b, '[')
		for i, e := range r.EntityRefs {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '{')
			if e != nil {
				f := true
				b = fieldString(b, &f, "schemaUrl", e.SchemaUrl)
				b = fieldString(b, &f, "type", e.Type)
				if len(e.IdKeys) > 0 {
					b = key(b, &f, "idKeys")
					b = appendStrings(b, e.IdKeys)
				}
				if len(e.DescriptionKeys) > 0 {
					b = key(b, &f, "descriptionKeys")
					b = appendStrings(b, e.DescriptionKeys)
				}
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

func appendScope(b []byte, s *commonpb.InstrumentationScope) []byte {
	b = append(b, '{')
	first := true
	b = fieldString(b, &first, "name", s.Name)
	b = fieldString(b, &first, "version", s.Version)
	b = fieldAttrs(b, &first, "attributes", s.Attributes, nil)
	b = fieldUint32(b, &first, "droppedAttributesCount", s.DroppedAttributesCount)
	return append(b, '}')
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
// as messages), then the items among records (received). Each record is
// written by direct (if not nil) from its bytes, or else decoded by a
// decoder from pool and written with fn, as msgs are. A record that does
// not decode is left out; the decoder checked every record it kept, so none
// does.
func fieldItems[T any](b []byte, first *bool, name string, msgs []*T, records pipeline.Records, direct func(b, rec []byte) ([]byte, bool), pool *sync.Pool, fn func([]byte, *T) []byte) []byte {
	if records.Empty() {
		return fieldList(b, first, name, msgs, fn)
	}
	if len(msgs) > 0 {
		b = fieldList(b, first, name, msgs, fn)
		b = append(b[:len(b)-1], ',') // the list goes on with the records
	} else {
		b = key(b, first, name)
		b = append(b, '[')
	}
	comma := false
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
	if !comma && len(msgs) > 0 {
		b = b[:len(b)-1] // no record decoded: drop the comma
	}
	return append(b, ']')
}

// fieldList writes a repeated message field; an empty list is left out, as
// proto3 JSON does.
func fieldList[T any](b []byte, first *bool, name string, xs []T, fn func([]byte, T) []byte) []byte {
	if len(xs) == 0 {
		return b
	}
	b = key(b, first, name)
	b = append(b, '[')
	for i, x := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		b = fn(b, x)
	}
	return append(b, ']')
}
