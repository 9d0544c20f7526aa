package otlpwire

import (
	"encoding/base64"
	"math"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/otelstep/otelstep/pipeline"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
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

// ---- field helpers ----

// key writes the separator (if not first) and "name":. name must not need escaping.
func key(b []byte, first *bool, name string) []byte {
	if *first {
		*first = false
	} else {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, name...)
	return append(b, '"', ':')
}

func fieldString[S string | []byte](b []byte, first *bool, name string, v S) []byte {
	if len(v) == 0 {
		return b
	}
	b = key(b, first, name)
	return appendString(b, v)
}

func fieldUint32(b []byte, first *bool, name string, v uint32) []byte {
	if v == 0 {
		return b
	}
	b = key(b, first, name)
	return strconv.AppendUint(b, uint64(v), 10)
}

func fieldInt32(b []byte, first *bool, name string, v int32) []byte {
	if v == 0 {
		return b
	}
	b = key(b, first, name)
	return strconv.AppendInt(b, int64(v), 10)
}

// fieldUint64 writes a 64-bit integer as a decimal string.
func fieldUint64(b []byte, first *bool, name string, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = key(b, first, name)
	b = append(b, '"')
	b = strconv.AppendUint(b, v, 10)
	return append(b, '"')
}

func fieldBool(b []byte, first *bool, name string, v bool) []byte {
	if !v {
		return b
	}
	b = key(b, first, name)
	return append(b, "true"...)
}

func fieldDouble(b []byte, first *bool, name string, v float64) []byte {
	// proto3 omits +0 only; -0 has a sign bit and is written, like protojson.
	if v == 0 && !math.Signbit(v) {
		return b
	}
	b = key(b, first, name)
	return appendFloat(b, v)
}

func fieldOptDouble(b []byte, first *bool, name string, v *float64) []byte {
	if v == nil {
		return b
	}
	b = key(b, first, name)
	return appendFloat(b, *v)
}

func fieldHex(b []byte, first *bool, name string, id []byte) []byte {
	if len(id) == 0 {
		return b
	}
	b = key(b, first, name)
	return appendHex(b, id)
}

func fieldAttrs(b []byte, first *bool, name string, kvs []*commonpb.KeyValue, skip []string) []byte {
	if len(kvs) == 0 {
		return b
	}
	b = key(b, first, name)
	return appendKeyValues(b, kvs, skip)
}

// fieldPointAttrs writes a data point's "attributes" field, from the
// encoding stored with the slice's set when shared finds one (see
// MetricsEncoder). A set stores the array text only, not the key, since
// the separator before it depends on the position.
func fieldPointAttrs(b []byte, first *bool, kvs []*commonpb.KeyValue, shared *pipeline.SharedAttrs) []byte {
	return fieldSharedAttrs(b, first, "attributes", kvs, shared)
}

// fieldSharedAttrs is fieldPointAttrs for the field name.
func fieldSharedAttrs(b []byte, first *bool, name string, kvs []*commonpb.KeyValue, shared *pipeline.SharedAttrs) []byte {
	if len(kvs) == 0 {
		return b
	}
	b = key(b, first, name)
	set := shared.Find(kvs)
	if set == nil {
		return appendKeyValues(b, kvs, nil)
	}
	if enc := set.JSON(); enc != nil {
		return append(b, enc...)
	}
	start := len(b)
	b = appendKeyValues(b, kvs, nil)
	set.StoreJSON(b[start:])
	return b
}

// ---- primitives ----

const hexDigits = "0123456789abcdef"

func appendHex(b []byte, id []byte) []byte {
	b = append(b, '"')
	for _, c := range id {
		b = append(b, hexDigits[c>>4], hexDigits[c&0xf])
	}
	return append(b, '"')
}

// appendFloat formats like encoding/json and protojson: shortest repr, 'f'
// for exponents in [-6, 21), 'e' otherwise with a two digit minimum exponent
// dropped to one ("1e-07" becomes "1e-7"); non-finite values as strings.
func appendFloat(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(b, `"-Infinity"`...)
	}
	if f > -1<<53 && f < 1<<53 && f == float64(int64(f)) && f != 0 {
		// An integer (most gauges and every counter of whole units): its
		// shortest form is its digits, which AppendInt writes in a fifth
		// of the time. Zero is left to AppendFloat for its sign.
		return strconv.AppendInt(b, int64(f), 10)
	}
	fmt := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		fmt = 'e'
	}
	b = strconv.AppendFloat(b, f, fmt, -1, 64)
	if fmt == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// safe[c] is true for ASCII bytes that need no escaping.
var safe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// load8 is the first 8 bytes of s as a little-endian word: one load. It
// and plainWord are small enough to inline into appendString's loop,
// which a call per 8 bytes had cost a fifth of.
func load8[S string | []byte](s S) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// load4 is the first 4 bytes of s as a little-endian word.
func load4[S string | []byte](s S) uint64 {
	_ = s[3]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24
}

// plainWord reports whether the 8 bytes of v are all ASCII, none below
// 0x20, none '"' or '\\': the bytes safe[] passes. It may say false for
// plain bytes (never true for others); the byte loop then decides.
func plainWord(v uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q := v ^ (ones * '"')
	bs := v ^ (ones * '\\')
	// v has a high bit set in each byte >= 0x80. When there is none, no
	// byte of v, q or bs is either, and then (x - ones) &^ x has one set in
	// (at least) each byte of x that is 0, as v - ones*0x20 has in each
	// byte of v below 0x20 (a borrow may mark the byte above too: false
	// positives, only next to a byte that is special anyway).
	special := v | (v - ones*0x20) | (q-ones)&^q | (bs-ones)&^bs
	return special&highs == 0
}

// appendString writes s as a JSON string. Escaping follows protojson
// (no HTML escaping, \b \f \n \r \t short forms, other control characters as
// \u00xx); invalid UTF-8 is replaced by U+FFFD like encoding/json does.
// s is a message's string or, for records, a payload's bytes.
func appendString[S string | []byte](b []byte, s S) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		// Eight bytes at a time while none needs a look: most values are
		// plain ASCII, and this was a third of the traces' JSON encoding.
		for i+8 <= len(s) && plainWord(load8(s[i:])) {
			i += 8
		}
		// Fewer than 8 bytes left: the last 8 of s (or, in a string of 4
		// to 7, its first and last 4) as one word, which may look at bytes
		// already passed again. Keys and short values are most strings,
		// and the byte loop was most of their cost.
		if n := len(s) - i; n > 0 && n < 8 {
			if len(s) >= 8 {
				if plainWord(load8(s[len(s)-8:])) {
					i = len(s)
				}
			} else if len(s) >= 4 && plainWord(load4(s)|load4(s[len(s)-4:])<<32) {
				i = len(s)
			}
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if safe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := decodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, "\ufffd"...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// decodeRune is utf8.DecodeRuneInString or utf8.DecodeRune, for either.
func decodeRune[S string | []byte](s S) (rune, int) {
	var buf [utf8.UTFMax]byte
	return utf8.DecodeRune(buf[:copy(buf[:], s)])
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

// ---- metrics ----

func appendResourceMetrics(b []byte, rm *metricspb.ResourceMetrics, skip []string, pw *pointWriter) []byte {
	b = append(b, '{')
	if rm == nil {
		return append(b, '}')
	}
	first := true
	if rm.Resource != nil {
		b = key(b, &first, "resource")
		b = appendResource(b, rm.Resource, skip)
	}
	b = fieldList(b, &first, "scopeMetrics", rm.ScopeMetrics, func(b []byte, sm *metricspb.ScopeMetrics) []byte {
		return appendScopeMetrics(b, sm, pw)
	})
	b = fieldString(b, &first, "schemaUrl", rm.SchemaUrl)
	return append(b, '}')
}

func appendScopeMetrics(b []byte, sm *metricspb.ScopeMetrics, pw *pointWriter) []byte {
	b = append(b, '{')
	if sm == nil {
		return append(b, '}')
	}
	first := true
	if sm.Scope != nil {
		b = key(b, &first, "scope")
		b = appendScope(b, sm.Scope)
	}
	b = fieldList(b, &first, "metrics", sm.Metrics, func(b []byte, m *metricspb.Metric) []byte {
		return appendMetric(pw.maybeFlush(b), m, pw)
	})
	b = fieldString(b, &first, "schemaUrl", sm.SchemaUrl)
	return append(b, '}')
}

// appendMetric writes one metric; c (nil for none) caches shared point
// attributes.
func appendMetric(b []byte, m *metricspb.Metric, pw *pointWriter) []byte {
	b = append(b, '{')
	if m == nil {
		return append(b, '}')
	}
	first := true
	b = fieldString(b, &first, "name", m.Name)
	b = fieldString(b, &first, "description", m.Description)
	b = fieldString(b, &first, "unit", m.Unit)
	switch d := m.Data.(type) {
	case *metricspb.Metric_Gauge:
		b = key(b, &first, "gauge")
		b = append(b, '{')
		if d.Gauge != nil && len(d.Gauge.DataPoints) > 0 {
			b = append(b, `"dataPoints":`...)
			b = appendNumberDataPoints(b, d.Gauge.DataPoints, pw)
		}
		b = append(b, '}')
	case *metricspb.Metric_Sum:
		b = key(b, &first, "sum")
		b = append(b, '{')
		if s := d.Sum; s != nil {
			f := true
			if len(s.DataPoints) > 0 {
				b = key(b, &f, "dataPoints")
				b = appendNumberDataPoints(b, s.DataPoints, pw)
			}
			b = fieldInt32(b, &f, "aggregationTemporality", int32(s.AggregationTemporality))
			b = fieldBool(b, &f, "isMonotonic", s.IsMonotonic)
		}
		b = append(b, '}')
	case *metricspb.Metric_Histogram:
		b = key(b, &first, "histogram")
		b = append(b, '{')
		if h := d.Histogram; h != nil {
			f := true
			b = fieldList(b, &f, "dataPoints", h.DataPoints, func(b []byte, p *metricspb.HistogramDataPoint) []byte {
				return appendHistogramDataPoint(b, p, pw)
			})
			b = fieldInt32(b, &f, "aggregationTemporality", int32(h.AggregationTemporality))
		}
		b = append(b, '}')
	case *metricspb.Metric_ExponentialHistogram:
		b = key(b, &first, "exponentialHistogram")
		b = append(b, '{')
		if h := d.ExponentialHistogram; h != nil {
			f := true
			b = fieldList(b, &f, "dataPoints", h.DataPoints, func(b []byte, p *metricspb.ExponentialHistogramDataPoint) []byte {
				return appendExpHistogramDataPoint(b, p, pw)
			})
			b = fieldInt32(b, &f, "aggregationTemporality", int32(h.AggregationTemporality))
		}
		b = append(b, '}')
	case *metricspb.Metric_Summary:
		b = key(b, &first, "summary")
		b = append(b, '{')
		if s := d.Summary; s != nil {
			f := true
			b = fieldList(b, &f, "dataPoints", s.DataPoints, func(b []byte, p *metricspb.SummaryDataPoint) []byte {
				return appendSummaryDataPoint(b, p, pw)
			})
		}
		b = append(b, '}')
	}
	b = fieldSharedAttrs(b, &first, "metadata", m.Metadata, pw.shared)
	return append(b, '}')
}

func appendNumberDataPoints(b []byte, ps []*metricspb.NumberDataPoint, pw *pointWriter) []byte {
	b = append(b, '[')
	for i, p := range ps {
		if i > 0 {
			b = append(pw.maybeFlush(b), ',')
		}
		b = append(b, '{')
		if p != nil {
			first := true
			b = fieldPointAttrs(b, &first, p.Attributes, pw.shared)
			b = pw.times(b, &first, p.StartTimeUnixNano, p.TimeUnixNano)
			switch v := p.Value.(type) {
			case *metricspb.NumberDataPoint_AsDouble:
				b = key(b, &first, "asDouble")
				b = appendFloat(b, v.AsDouble)
			case *metricspb.NumberDataPoint_AsInt:
				b = key(b, &first, "asInt")
				b = append(b, '"')
				b = strconv.AppendInt(b, v.AsInt, 10)
				b = append(b, '"')
			}
			b = appendExemplars(b, &first, p.Exemplars)
			b = fieldUint32(b, &first, "flags", p.Flags)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

func appendExemplars(b []byte, first *bool, es []*metricspb.Exemplar) []byte {
	if len(es) == 0 {
		return b
	}
	b = key(b, first, "exemplars")
	b = append(b, '[')
	for i, e := range es {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		if e != nil {
			f := true
			b = fieldAttrs(b, &f, "filteredAttributes", e.FilteredAttributes, nil)
			b = fieldUint64(b, &f, "timeUnixNano", e.TimeUnixNano)
			switch v := e.Value.(type) {
			case *metricspb.Exemplar_AsDouble:
				b = key(b, &f, "asDouble")
				b = appendFloat(b, v.AsDouble)
			case *metricspb.Exemplar_AsInt:
				b = key(b, &f, "asInt")
				b = append(b, '"')
				b = strconv.AppendInt(b, v.AsInt, 10)
				b = append(b, '"')
			}
			b = fieldHex(b, &f, "spanId", e.SpanId)
			b = fieldHex(b, &f, "traceId", e.TraceId)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

func appendUint64s(b []byte, first *bool, name string, vs []uint64) []byte {
	if len(vs) == 0 {
		return b
	}
	b = key(b, first, name)
	b = append(b, '[')
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = strconv.AppendUint(b, v, 10)
		b = append(b, '"')
	}
	return append(b, ']')
}

func appendDoubles(b []byte, first *bool, name string, vs []float64) []byte {
	if len(vs) == 0 {
		return b
	}
	b = key(b, first, name)
	b = append(b, '[')
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendFloat(b, v)
	}
	return append(b, ']')
}

func appendHistogramDataPoint(b []byte, p *metricspb.HistogramDataPoint, pw *pointWriter) []byte {
	b = pw.maybeFlush(b)
	b = append(b, '{')
	if p == nil {
		return append(b, '}')
	}
	first := true
	b = fieldPointAttrs(b, &first, p.Attributes, pw.shared)
	b = pw.times(b, &first, p.StartTimeUnixNano, p.TimeUnixNano)
	b = fieldUint64(b, &first, "count", p.Count)
	b = fieldOptDouble(b, &first, "sum", p.Sum)
	b = appendUint64s(b, &first, "bucketCounts", p.BucketCounts)
	b = appendDoubles(b, &first, "explicitBounds", p.ExplicitBounds)
	b = appendExemplars(b, &first, p.Exemplars)
	b = fieldUint32(b, &first, "flags", p.Flags)
	b = fieldOptDouble(b, &first, "min", p.Min)
	b = fieldOptDouble(b, &first, "max", p.Max)
	return append(b, '}')
}

func appendBuckets(b []byte, first *bool, name string, bk *metricspb.ExponentialHistogramDataPoint_Buckets) []byte {
	if bk == nil {
		return b
	}
	b = key(b, first, name)
	b = append(b, '{')
	f := true
	b = fieldInt32(b, &f, "offset", bk.Offset)
	b = appendUint64s(b, &f, "bucketCounts", bk.BucketCounts)
	return append(b, '}')
}

func appendExpHistogramDataPoint(b []byte, p *metricspb.ExponentialHistogramDataPoint, pw *pointWriter) []byte {
	b = pw.maybeFlush(b)
	b = append(b, '{')
	if p == nil {
		return append(b, '}')
	}
	first := true
	b = fieldPointAttrs(b, &first, p.Attributes, pw.shared)
	b = pw.times(b, &first, p.StartTimeUnixNano, p.TimeUnixNano)
	b = fieldUint64(b, &first, "count", p.Count)
	b = fieldOptDouble(b, &first, "sum", p.Sum)
	b = fieldInt32(b, &first, "scale", p.Scale)
	b = fieldUint64(b, &first, "zeroCount", p.ZeroCount)
	b = appendBuckets(b, &first, "positive", p.Positive)
	b = appendBuckets(b, &first, "negative", p.Negative)
	b = fieldUint32(b, &first, "flags", p.Flags)
	b = appendExemplars(b, &first, p.Exemplars)
	b = fieldOptDouble(b, &first, "min", p.Min)
	b = fieldOptDouble(b, &first, "max", p.Max)
	b = fieldDouble(b, &first, "zeroThreshold", p.ZeroThreshold)
	return append(b, '}')
}

func appendSummaryDataPoint(b []byte, p *metricspb.SummaryDataPoint, pw *pointWriter) []byte {
	b = pw.maybeFlush(b)
	b = append(b, '{')
	if p == nil {
		return append(b, '}')
	}
	first := true
	b = fieldPointAttrs(b, &first, p.Attributes, pw.shared)
	b = pw.times(b, &first, p.StartTimeUnixNano, p.TimeUnixNano)
	b = fieldUint64(b, &first, "count", p.Count)
	b = fieldDouble(b, &first, "sum", p.Sum)
	if len(p.QuantileValues) > 0 {
		b = key(b, &first, "quantileValues")
		b = append(b, '[')
		for i, q := range p.QuantileValues {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '{')
			if q != nil {
				f := true
				b = fieldDouble(b, &f, "quantile", q.Quantile)
				b = fieldDouble(b, &f, "value", q.Value)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = fieldUint32(b, &first, "flags", p.Flags)
	return append(b, '}')
}

// ---- traces ----

func appendResourceSpans(b []byte, rs *pipeline.ResourceSpans, skip []string) []byte {
	b = append(b, '{')
	if rs == nil {
		return append(b, '}')
	}
	first := true
	if rs.Resource != nil {
		b = key(b, &first, "resource")
		b = appendResource(b, rs.Resource, skip)
	}
	b = fieldList(b, &first, "scopeSpans", rs.ScopeSpans, appendScopeSpans)
	b = fieldString(b, &first, "schemaUrl", rs.SchemaURL)
	return append(b, '}')
}

func appendScopeSpans(b []byte, ss *pipeline.ScopeSpans) []byte {
	b = append(b, '{')
	if ss == nil {
		return append(b, '}')
	}
	first := true
	if ss.Scope != nil {
		b = key(b, &first, "scope")
		b = appendScope(b, ss.Scope)
	}
	b = fieldItems(b, &first, "spans", ss.Spans, ss.Records, appendSpanRecord, &spanDecoders, appendSpan)
	b = fieldString(b, &first, "schemaUrl", ss.SchemaURL)
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

func appendSpan(b []byte, s *tracepb.Span) []byte {
	b = append(b, '{')
	if s == nil {
		return append(b, '}')
	}
	first := true
	b = fieldHex(b, &first, "traceId", s.TraceId)
	b = fieldHex(b, &first, "spanId", s.SpanId)
	b = fieldString(b, &first, "traceState", s.TraceState)
	b = fieldHex(b, &first, "parentSpanId", s.ParentSpanId)
	b = fieldUint32(b, &first, "flags", s.Flags)
	b = fieldString(b, &first, "name", s.Name)
	b = fieldInt32(b, &first, "kind", int32(s.Kind))
	b = fieldUint64(b, &first, "startTimeUnixNano", s.StartTimeUnixNano)
	b = fieldUint64(b, &first, "endTimeUnixNano", s.EndTimeUnixNano)
	b = fieldAttrs(b, &first, "attributes", s.Attributes, nil)
	b = fieldUint32(b, &first, "droppedAttributesCount", s.DroppedAttributesCount)
	if len(s.Events) > 0 {
		b = key(b, &first, "events")
		b = append(b, '[')
		for i, e := range s.Events {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '{')
			if e != nil {
				f := true
				b = fieldUint64(b, &f, "timeUnixNano", e.TimeUnixNano)
				b = fieldString(b, &f, "name", e.Name)
				b = fieldAttrs(b, &f, "attributes", e.Attributes, nil)
				b = fieldUint32(b, &f, "droppedAttributesCount", e.DroppedAttributesCount)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = fieldUint32(b, &first, "droppedEventsCount", s.DroppedEventsCount)
	if len(s.Links) > 0 {
		b = key(b, &first, "links")
		b = append(b, '[')
		for i, l := range s.Links {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '{')
			if l != nil {
				f := true
				b = fieldHex(b, &f, "traceId", l.TraceId)
				b = fieldHex(b, &f, "spanId", l.SpanId)
				b = fieldString(b, &f, "traceState", l.TraceState)
				b = fieldAttrs(b, &f, "attributes", l.Attributes, nil)
				b = fieldUint32(b, &f, "droppedAttributesCount", l.DroppedAttributesCount)
				b = fieldUint32(b, &f, "flags", l.Flags)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = fieldUint32(b, &first, "droppedLinksCount", s.DroppedLinksCount)
	if s.Status != nil {
		b = key(b, &first, "status")
		b = append(b, '{')
		f := true
		b = fieldString(b, &f, "message", s.Status.Message)
		b = fieldInt32(b, &f, "code", int32(s.Status.Code))
		b = append(b, '}')
	}
	return append(b, '}')
}

// ---- logs ----

func appendResourceLogs(b []byte, rl *pipeline.ResourceLogs, skip []string) []byte {
	b = append(b, '{')
	if rl == nil {
		return append(b, '}')
	}
	first := true
	if rl.Resource != nil {
		b = key(b, &first, "resource")
		b = appendResource(b, rl.Resource, skip)
	}
	b = fieldList(b, &first, "scopeLogs", rl.ScopeLogs, appendScopeLogs)
	b = fieldString(b, &first, "schemaUrl", rl.SchemaURL)
	return append(b, '}')
}

func appendScopeLogs(b []byte, sl *pipeline.ScopeLogs) []byte {
	b = append(b, '{')
	if sl == nil {
		return append(b, '}')
	}
	first := true
	if sl.Scope != nil {
		b = key(b, &first, "scope")
		b = appendScope(b, sl.Scope)
	}
	b = fieldItems(b, &first, "logRecords", sl.LogRecords, sl.Records, appendLogRecordRecord, &logRecordDecoders, appendLogRecord)
	b = fieldString(b, &first, "schemaUrl", sl.SchemaURL)
	return append(b, '}')
}

func appendLogRecord(b []byte, r *logspb.LogRecord) []byte {
	b = append(b, '{')
	if r == nil {
		return append(b, '}')
	}
	first := true
	b = fieldUint64(b, &first, "timeUnixNano", r.TimeUnixNano)
	b = fieldUint64(b, &first, "observedTimeUnixNano", r.ObservedTimeUnixNano)
	b = fieldInt32(b, &first, "severityNumber", int32(r.SeverityNumber))
	b = fieldString(b, &first, "severityText", r.SeverityText)
	if r.Body != nil {
		b = key(b, &first, "body")
		b = appendAnyValue(b, r.Body)
	}
	b = fieldAttrs(b, &first, "attributes", r.Attributes, nil)
	b = fieldUint32(b, &first, "droppedAttributesCount", r.DroppedAttributesCount)
	b = fieldUint32(b, &first, "flags", r.Flags)
	b = fieldHex(b, &first, "traceId", r.TraceId)
	b = fieldHex(b, &first, "spanId", r.SpanId)
	b = fieldString(b, &first, "eventName", r.EventName)
	return append(b, '}')
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
