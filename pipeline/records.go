package pipeline

import (
	"fmt"

	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Spans and log records kept as received.
//
// Spans and log records pass through otelstep unchanged: the processors act
// on resources (and metric names) and the sinks only encode them. So the
// decoder keeps a ScopeSpans' spans and a ScopeLogs' log records as the wire
// bytes they came in rather than as messages. It checks each item as it
// reads it, by decoding it into a scratch Span or LogRecord (the same checks
// and errors as everywhere else), then stores the items' records in the
// scope message's unknown fields: where protobuf keeps the fields of a
// message it did not decode, so proto.Marshal, proto.Size and proto.Clone
// carry them as they are. Both scope messages hold their items as field 2.
// The protobuf encoder copies the records; the OTLP/JSON encoder decodes one
// item at a time into scratch (SpanDecoder, LogRecordDecoder).
//
// Why: a span of 8 attributes sent as about 500 bytes decodes to about
// 2 KB of messages full of pointers, and every span the batch processor
// and the sinks' queues hold was marked by each garbage collection: a
// fifth of the traces path's CPU, and most of its heap. Log records are
// the same.
//
// So the items of a scope message are its Spans or LogRecords (built by a
// producer: the OTLP/JSON receiver, a test) followed by the item records
// among its unknown fields (Records). Every consumer handles both:
// ScopeSpansCount and ScopeLogsCount, the batch split, both encoders.
// Nobody changes an item record; a processor that rewrote spans or log
// records would decode them into messages and clear the records.

// Scope is a scope message whose items the decoder keeps as records.
type Scope interface {
	*tracepb.ScopeSpans | *logspb.ScopeLogs
	ProtoReflect() protoreflect.Message
}

// Records returns the unknown fields of s: the records (tags and lengths
// included) of the items the decoder kept as received, as repeated field 2.
// Any other field among them (one proto.Unmarshal kept) is not an item;
// NextRecord skips it.
func Records[S Scope](s S) []byte {
	if s == nil {
		return nil
	}
	return s.ProtoReflect().GetUnknown()
}

// SetRecords makes records the unknown fields of s (see Records).
func SetRecords[S Scope](s S, records []byte) {
	s.ProtoReflect().SetUnknown(records)
}

// NextRecord returns the payload of the first item record in records and
// the records after it; ok is false when there is none left. Fields other
// than field 2 are skipped, and so is a malformed rest (which the decoder
// never stores).
func NextRecord(records []byte) (item, rest []byte, ok bool) {
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

// RecordCount returns the number of item records in records.
func RecordCount(records []byte) int {
	n := 0
	for _, rest, ok := NextRecord(records); ok; _, rest, ok = NextRecord(rest) {
		n++
	}
	return n
}

// SplitRecords splits records after its k-th item record: head holds the
// first k (capacity equal to length, so appending to it cannot write into
// tail), tail the rest.
func SplitRecords(records []byte, k int) (head, tail []byte) {
	rest := records
	for range k {
		var ok bool
		if _, rest, ok = NextRecord(rest); !ok {
			return records, nil
		}
	}
	off := len(records) - len(rest)
	return records[:off:off], records[off:]
}

// ScopeSpansCount returns the number of spans of ss: its Spans and its span
// records.
func ScopeSpansCount(ss *tracepb.ScopeSpans) int {
	return len(ss.GetSpans()) + RecordCount(Records(ss))
}

// ScopeLogsCount returns the number of log records of sl: its LogRecords and
// its log record records.
func ScopeLogsCount(sl *logspb.ScopeLogs) int {
	return len(sl.GetLogRecords()) + RecordCount(Records(sl))
}

// unmarshalRecords decodes item records into new messages (which own their
// memory), their unknown fields dropped as the decoder drops them everywhere
// else; n is the index of the first, for errors.
func unmarshalRecords[T any, P interface {
	*T
	proto.Message
}](records []byte, what string, n int) ([]P, error) {
	var out []P
	for rec, rest, ok := NextRecord(records); ok; rec, rest, ok = NextRecord(rest) {
		m := P(new(T))
		if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(rec, m); err != nil {
			return nil, fmt.Errorf("%s %d: %w", what, n+len(out), err)
		}
		out = append(out, m)
	}
	return out, nil
}

// SpansOf returns every span of ss as a message: its Spans, then its span
// records decoded into new Spans. For code off the hot path that needs
// spans as messages (tests, tools).
func SpansOf(ss *tracepb.ScopeSpans) ([]*tracepb.Span, error) {
	recs, err := unmarshalRecords[tracepb.Span](Records(ss), "span", len(ss.GetSpans()))
	if err != nil {
		return nil, err
	}
	return append(append([]*tracepb.Span(nil), ss.GetSpans()...), recs...), nil
}

// LogRecordsOf is SpansOf for the log records of sl.
func LogRecordsOf(sl *logspb.ScopeLogs) ([]*logspb.LogRecord, error) {
	recs, err := unmarshalRecords[logspb.LogRecord](Records(sl), "log record", len(sl.GetLogRecords()))
	if err != nil {
		return nil, err
	}
	return append(append([]*logspb.LogRecord(nil), sl.GetLogRecords()...), recs...), nil
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

// ExpandLogs is ExpandSpans for log records.
func ExpandLogs(rls []*logspb.ResourceLogs) ([]*logspb.ResourceLogs, error) {
	out := make([]*logspb.ResourceLogs, len(rls))
	for i, rl := range rls {
		c := &logspb.ResourceLogs{Resource: rl.Resource, SchemaUrl: rl.SchemaUrl}
		for _, sl := range rl.ScopeLogs {
			recs, err := LogRecordsOf(sl)
			if err != nil {
				return nil, fmt.Errorf("resource_logs[%d]: %w", i, err)
			}
			c.ScopeLogs = append(c.ScopeLogs, &logspb.ScopeLogs{Scope: sl.Scope, SchemaUrl: sl.SchemaUrl, LogRecords: recs})
		}
		out[i] = c
	}
	return out, nil
}
