package pipeline

import (
	"bytes"
	"fmt"
	"iter"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// Spans and log records kept as received.
//
// Spans and log records pass through otelstep unchanged: the processors
// act on resources and the sinks only encode them. So the receivers'
// protobuf decoder keeps a scope's spans or log records as the wire bytes
// they came in (Records), after checking each one, rather than as
// messages, and the protobuf encoder copies them as they are.
//
// Why: a span decodes to several times its wire size in messages full of
// pointers, and every span the batch processor and the sinks' queues hold
// would be marked by each garbage collection: a large part of the traces
// path's CPU, and most of its heap (docs/decisions.md). Log records are the
// same.
//
// So the spans of a ScopeSpans are its Spans (messages, as a producer
// builds them: the OTLP/JSON receiver, spanmetrics, a test) followed by its
// Records; Len counts both, and every consumer (the batch split, both
// encoders, spanmetrics) reads both. Nobody changes a record; a stage that
// rewrote spans would decode them into Spans (Records.All and
// proto.Unmarshal, or otlpwire.SpanDecoder) and clear the Records.

// ResourceSpans is the spans of one resource: OTLP's ResourceSpans.
type ResourceSpans struct {
	Resource   *resourcepb.Resource
	ScopeSpans []*ScopeSpans
	SchemaURL  string
}

// ScopeSpans is the spans of one instrumentation scope: OTLP's ScopeSpans,
// its spans as messages (Spans) and as received (Records), in that order.
type ScopeSpans struct {
	Scope     *commonpb.InstrumentationScope
	Spans     []*tracepb.Span
	Records   Records
	SchemaURL string
}

// ResourceLogs is the log records of one resource: OTLP's ResourceLogs.
type ResourceLogs struct {
	Resource  *resourcepb.Resource
	ScopeLogs []*ScopeLogs
	SchemaURL string
}

// ScopeLogs is the log records of one instrumentation scope: OTLP's
// ScopeLogs, its log records as messages (LogRecords) and as received
// (Records), in that order.
type ScopeLogs struct {
	Scope      *commonpb.InstrumentationScope
	LogRecords []*logspb.LogRecord
	Records    Records
	SchemaURL  string
}

// Len returns the number of spans of ss: its Spans and its Records.
func (ss *ScopeSpans) Len() int { return len(ss.Spans) + ss.Records.Len() }

// Len returns the number of spans under rs.
func (rs *ResourceSpans) Len() int {
	n := 0
	for _, ss := range rs.ScopeSpans {
		n += ss.Len()
	}
	return n
}

// Len returns the number of log records of sl: its LogRecords and its
// Records.
func (sl *ScopeLogs) Len() int { return len(sl.LogRecords) + sl.Records.Len() }

// Len returns the number of log records under rl.
func (rl *ResourceLogs) Len() int {
	n := 0
	for _, sl := range rl.ScopeLogs {
		n += sl.Len()
	}
	return n
}

// Records is items (spans or log records) as they were received: the
// protobuf records (tag, length and the item's encoding) of field 2 of
// their scope message, one after another. Both scope messages hold their
// items as field 2, so Records is also the encoding of the items as that
// field. The decoder checked every record it keeps; a Records is never
// changed once made.
type Records []byte

// itemField is the field number of the items in ScopeSpans and ScopeLogs.
const itemField = 2

// All yields each item's encoding (a Span's or a LogRecord's), in order.
// Records other than field 2, and a malformed rest (which the decoder never
// keeps), are skipped.
func (r Records) All() iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		for item, rest, ok := r.next(); ok; item, rest, ok = rest.next() {
			if !yield(item) {
				return
			}
		}
	}
}

// next returns the first item's encoding and the records after it; ok is
// false when there is none left.
func (r Records) next() (item []byte, rest Records, ok bool) {
	for len(r) > 0 {
		num, typ, n := protowire.ConsumeTag(r)
		if n < 0 {
			return nil, nil, false
		}
		if num == itemField && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(r[n:])
			if m < 0 {
				return nil, nil, false
			}
			return v, r[n+m:], true
		}
		m := protowire.ConsumeFieldValue(num, typ, r[n:])
		if m < 0 {
			return nil, nil, false
		}
		r = r[n+m:]
	}
	return nil, nil, false
}

// Len returns the number of items in r.
func (r Records) Len() int {
	n := 0
	for _, rest, ok := r.next(); ok; _, rest, ok = rest.next() {
		n++
	}
	return n
}

// Empty reports whether r holds no item, without counting them.
func (r Records) Empty() bool {
	_, _, ok := r.next()
	return !ok
}

// Split splits r after its k-th item: head holds the first k (capacity
// equal to length, so appending to it cannot write into tail), tail the
// rest.
func (r Records) Split(k int) (head, tail Records) {
	rest := r
	for range k {
		var ok bool
		if _, rest, ok = rest.next(); !ok {
			return r, nil
		}
	}
	off := len(r) - len(rest)
	return r[:off:off], r[off:]
}

// AppendRecord appends item (an encoded Span or LogRecord) to r as a
// record.
func AppendRecord(r Records, item []byte) Records {
	r = protowire.AppendTag(r, itemField, protowire.BytesType)
	return protowire.AppendBytes(r, item)
}

// Clone returns a deep copy of rs: its messages cloned by proto.Clone,
// its records copied.
func (rs *ResourceSpans) Clone() *ResourceSpans {
	c := &ResourceSpans{Resource: proto.CloneOf(rs.Resource), SchemaURL: rs.SchemaURL, ScopeSpans: make([]*ScopeSpans, len(rs.ScopeSpans))}
	for i, ss := range rs.ScopeSpans {
		s := &ScopeSpans{Scope: proto.CloneOf(ss.Scope), SchemaURL: ss.SchemaURL, Records: bytes.Clone(ss.Records)}
		for _, sp := range ss.Spans {
			s.Spans = append(s.Spans, proto.CloneOf(sp))
		}
		c.ScopeSpans[i] = s
	}
	return c
}

// Clone returns a deep copy of rl; see ResourceSpans.Clone.
func (rl *ResourceLogs) Clone() *ResourceLogs {
	c := &ResourceLogs{Resource: proto.CloneOf(rl.Resource), SchemaURL: rl.SchemaURL, ScopeLogs: make([]*ScopeLogs, len(rl.ScopeLogs))}
	for i, sl := range rl.ScopeLogs {
		s := &ScopeLogs{Scope: proto.CloneOf(sl.Scope), SchemaURL: sl.SchemaURL, Records: bytes.Clone(sl.Records)}
		for _, lr := range sl.LogRecords {
			s.LogRecords = append(s.LogRecords, proto.CloneOf(lr))
		}
		c.ScopeLogs[i] = s
	}
	return c
}

// TracesFromProto returns the spans of rss, as messages, in otelstep's
// types; rss's messages are shared, not copied.
func TracesFromProto(rss []*tracepb.ResourceSpans) []*ResourceSpans {
	out := make([]*ResourceSpans, len(rss))
	for i, rs := range rss {
		r := &ResourceSpans{Resource: rs.GetResource(), SchemaURL: rs.GetSchemaUrl(), ScopeSpans: make([]*ScopeSpans, len(rs.GetScopeSpans()))}
		for j, ss := range rs.GetScopeSpans() {
			r.ScopeSpans[j] = &ScopeSpans{Scope: ss.GetScope(), SchemaURL: ss.GetSchemaUrl(), Spans: ss.GetSpans()}
		}
		out[i] = r
	}
	return out
}

// LogsFromProto is TracesFromProto for log records.
func LogsFromProto(rls []*logspb.ResourceLogs) []*ResourceLogs {
	out := make([]*ResourceLogs, len(rls))
	for i, rl := range rls {
		r := &ResourceLogs{Resource: rl.GetResource(), SchemaURL: rl.GetSchemaUrl(), ScopeLogs: make([]*ScopeLogs, len(rl.GetScopeLogs()))}
		for j, sl := range rl.GetScopeLogs() {
			r.ScopeLogs[j] = &ScopeLogs{Scope: sl.GetScope(), SchemaURL: sl.GetSchemaUrl(), LogRecords: sl.GetLogRecords()}
		}
		out[i] = r
	}
	return out
}

// Messages returns every span of ss as a message: its Spans, then its
// Records decoded by proto.Unmarshal into new Spans. For code off the hot
// path (tests, tools).
func (ss *ScopeSpans) Messages() ([]*tracepb.Span, error) {
	return unmarshalItems[tracepb.Span](ss.Spans, ss.Records)
}

// Messages is ScopeSpans.Messages for log records.
func (sl *ScopeLogs) Messages() ([]*logspb.LogRecord, error) {
	return unmarshalItems[logspb.LogRecord](sl.LogRecords, sl.Records)
}

// TracesProto returns rss as OTLP messages, every span a message (its
// Records decoded by proto.Unmarshal into new Spans): what proto.Unmarshal
// makes of the same request. For code off the hot path (tests, tools);
// Resources and Scopes are shared.
func TracesProto(rss []*ResourceSpans) ([]*tracepb.ResourceSpans, error) {
	out := make([]*tracepb.ResourceSpans, len(rss))
	for i, rs := range rss {
		c := &tracepb.ResourceSpans{Resource: rs.Resource, SchemaUrl: rs.SchemaURL}
		for j, ss := range rs.ScopeSpans {
			spans, err := ss.Messages()
			if err != nil {
				return nil, fmt.Errorf("resource_spans[%d].scope_spans[%d]: span %w", i, j, err)
			}
			c.ScopeSpans = append(c.ScopeSpans, &tracepb.ScopeSpans{Scope: ss.Scope, SchemaUrl: ss.SchemaURL, Spans: spans})
		}
		out[i] = c
	}
	return out, nil
}

// LogsProto is TracesProto for log records.
func LogsProto(rls []*ResourceLogs) ([]*logspb.ResourceLogs, error) {
	out := make([]*logspb.ResourceLogs, len(rls))
	for i, rl := range rls {
		c := &logspb.ResourceLogs{Resource: rl.Resource, SchemaUrl: rl.SchemaURL}
		for j, sl := range rl.ScopeLogs {
			recs, err := sl.Messages()
			if err != nil {
				return nil, fmt.Errorf("resource_logs[%d].scope_logs[%d]: log record %w", i, j, err)
			}
			c.ScopeLogs = append(c.ScopeLogs, &logspb.ScopeLogs{Scope: sl.Scope, SchemaUrl: sl.SchemaURL, LogRecords: recs})
		}
		out[i] = c
	}
	return out, nil
}

// unmarshalItems returns msgs followed by records decoded into new
// messages, their unknown fields dropped (as the decoder drops them).
func unmarshalItems[T any, P interface {
	*T
	proto.Message
}](msgs []P, records Records) ([]P, error) {
	out := append([]P(nil), msgs...)
	for rec := range records.All() {
		m := P(new(T))
		if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(rec, m); err != nil {
			return nil, fmt.Errorf("%d: %w", len(out), err)
		}
		out = append(out, m)
	}
	return out, nil
}
