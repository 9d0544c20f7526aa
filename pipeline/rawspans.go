package pipeline

import (
	"fmt"
	"unsafe"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// Spans kept as received.
//
// Spans pass through otelstep unchanged: the processors act on resources
// and the sinks only encode spans. So the decoder keeps a ScopeSpans' spans
// as the wire bytes they came in rather than as Span messages. It checks
// each span as it reads it, by decoding it into a scratch Span (the same
// checks and errors as everywhere else), then stores the spans' records in
// the ScopeSpans' unknown fields: where protobuf keeps the fields of a
// message it did not decode, so proto.Marshal, proto.Size and proto.Clone
// carry them as they are. The protobuf encoder copies them; the OTLP/JSON
// encoder decodes one span at a time into scratch (SpanDecoder).
//
// Why: a span of 8 attributes sent as about 500 bytes decodes to about
// 2 KB of messages full of pointers, and every span the batch processor
// and the sinks' queues hold was marked by each garbage collection: a
// fifth of the traces path's CPU, and most of its heap.
//
// So the spans of a ScopeSpans are its Spans (built by a producer: the
// OTLP/JSON receiver, a test) followed by the span records among its
// unknown fields (SpanRecords). Every consumer of spans handles both:
// ScopeSpansCount, the batch split, both encoders. Nobody changes a span
// record; a processor that rewrote spans would decode them into Spans and
// clear the records.

// SpanRecords returns the unknown fields of ss: the records (tags and
// lengths included) of the spans the decoder kept as received, as repeated
// field 2. Any other field among them (one proto.Unmarshal kept) is not a
// span; NextSpan skips it.
func SpanRecords(ss *tracepb.ScopeSpans) []byte {
	if ss == nil {
		return nil
	}
	return ss.ProtoReflect().GetUnknown()
}

// SetSpanRecords makes records the unknown fields of ss (see SpanRecords).
func SetSpanRecords(ss *tracepb.ScopeSpans, records []byte) {
	ss.ProtoReflect().SetUnknown(records)
}

// NextSpan returns the payload of the first span record in records and the
// records after it; ok is false when there is none left. Fields other than
// spans are skipped, and so is a malformed rest (which the decoder never
// stores).
func NextSpan(records []byte) (span, rest []byte, ok bool) {
	for len(records) > 0 {
		num, typ, n := protowire.ConsumeTag(records)
		if n < 0 {
			return nil, nil, false
		}
		if num == 2 && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(records[n:])
			if m < 0 {
				return nil, nil, false
			}
			return v, records[n+m:], true
		}
		m := protowire.ConsumeFieldValue(num, typ, records[n:])
		if m < 0 {
			return nil, nil, false
		}
		records = records[n+m:]
	}
	return nil, nil, false
}

// SpanRecordCount returns the number of span records in records.
func SpanRecordCount(records []byte) int {
	n := 0
	for _, rest, ok := NextSpan(records); ok; _, rest, ok = NextSpan(rest) {
		n++
	}
	return n
}

// SplitSpanRecords splits records after its k-th span record: head holds
// the first k (capacity equal to length, so appending to it cannot write
// into tail), tail the rest.
func SplitSpanRecords(records []byte, k int) (head, tail []byte) {
	rest := records
	for range k {
		var ok bool
		if _, rest, ok = NextSpan(rest); !ok {
			return records, nil
		}
	}
	off := len(records) - len(rest)
	return records[:off:off], records[off:]
}

// ScopeSpansCount returns the number of spans of ss: its Spans and its span
// records.
func ScopeSpansCount(ss *tracepb.ScopeSpans) int {
	return len(ss.GetSpans()) + SpanRecordCount(SpanRecords(ss))
}

// SpanDecoder decodes span records one at a time into a Span it reuses,
// so encoding received spans allocates nothing per span. The zero value is
// ready to use; it is not safe for concurrent use.
type SpanDecoder struct {
	d decoder
}

// Decode decodes one span record's payload (as NextSpan returns it). The
// Span and everything it refers to are valid until the next Decode and
// alias rec: read them, never keep or change them.
//
// Strings are not checked for UTF-8 again (a third of the time): the
// decoder checked every record it kept when it was received. A string
// that is not UTF-8 (in a record from elsewhere) comes back as it is, and
// the OTLP/JSON encoder writes U+FFFD for its bad bytes.
func (r *SpanDecoder) Decode(rec []byte) (*tracepb.Span, error) {
	d := &r.d
	d.rewindSpan()
	d.checked = true
	d.b, d.s, d.n = rec, unsafe.String(unsafe.SliceData(rec), len(rec)), 0
	if e := d.span(d.sp, 0, len(rec)); e != nil {
		return nil, e.in("span").done()
	}
	return d.sp, nil
}

// Reset drops every reference to the last span decoded (and the bytes it
// aliases), keeping the scratch storage: for a pooled SpanDecoder.
func (r *SpanDecoder) Reset() {
	r.d.rewindSpan()
	r.d.b, r.d.s = nil, ""
}

// checkSpan checks the span in [a, z) of d.b by decoding it into the
// scratch decoder's Span, and forgets it.
func (d *decoder) checkSpan(a, z int) *DecodeError {
	sd := d.scratch
	if sd == nil {
		sd = new(decoder)
		d.scratch = sd
	}
	// n stays 0: a scratch slab's chunks are sized by use, not by the
	// rest of the body (see slab.rewind).
	sd.b, sd.s, sd.lenient = d.b, d.s, d.lenient
	sd.rewindSpan()
	return sd.span(sd.sp, a, z)
}

// rewindSpan makes every slab a span's decoding uses hand out its chunk
// again: nothing decoded into them is in use any more.
func (d *decoder) rewindSpan() {
	if d.sp == nil {
		d.sp = new(tracepb.Span)
	} else {
		*d.sp = tracepb.Span{}
	}
	d.kvs.rewind()
	d.attrs.rewind()
	d.avs.rewind()
	d.strs.rewind()
	d.ints.rewind()
	d.dbls.rewind()
	d.bols.rewind()
	d.events.rewind()
	d.links.rewind()
	d.stats.rewind()
}

// SpansOf returns every span of ss as a message: its Spans, then its span
// records decoded into new Spans (which own their memory), their unknown
// fields dropped as the decoder drops them everywhere else. For code off
// the hot path that needs spans as messages (tests, tools).
func SpansOf(ss *tracepb.ScopeSpans) ([]*tracepb.Span, error) {
	out := append([]*tracepb.Span(nil), ss.GetSpans()...)
	for rec, rest, ok := NextSpan(SpanRecords(ss)); ok; rec, rest, ok = NextSpan(rest) {
		s := new(tracepb.Span)
		if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(rec, s); err != nil {
			return nil, fmt.Errorf("span %d: %w", len(out), err)
		}
		out = append(out, s)
	}
	return out, nil
}

// ExpandSpans returns rss with the spans of every ScopeSpans as messages
// (SpansOf) and no span records: what proto.Unmarshal makes of the same
// bytes. rss is not modified; the Resources and Scopes are shared.
func ExpandSpans(rss []*tracepb.ResourceSpans) ([]*tracepb.ResourceSpans, error) {
	out := make([]*tracepb.ResourceSpans, len(rss))
	for i, rs := range rss {
		c := &tracepb.ResourceSpans{Resource: rs.Resource, SchemaUrl: rs.SchemaUrl}
		for _, ss := range rs.ScopeSpans {
			spans, err := SpansOf(ss)
			if err != nil {
				return nil, fmt.Errorf("resource_spans[%d]: %w", i, err)
			}
			c.ScopeSpans = append(c.ScopeSpans, &tracepb.ScopeSpans{Scope: ss.Scope, SchemaUrl: ss.SchemaUrl, Spans: spans})
		}
		out[i] = c
	}
	return out, nil
}
