package otlpwire

import (
	"github.com/otelstep/otelstep/pipeline"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/encoding/protowire"
)

// The messages above a signal's data have one shape in every signal:
//
//	Export*ServiceRequest  1: repeated Resource*
//	Resource*              1: resource, 2: repeated Scope*, 3: schema_url
//	Scope*                 1: scope,    2: repeated items,  3: schema_url
//
// requestShape and envelopeShape decode that shape once for all three; the
// per-signal files name their messages and decode what differs, the items
// (metrics; spans and log records, which are kept as records by
// scopeRecords).

// requestShape is an export request of one signal: its resources (field
// 1), each a R from resources decoded by resource.
type requestShape[R any] struct {
	fields    []string // field names by number, for errors and the schema test
	resources func(d *decoder) *list[R]
	resource  func(d *decoder, m *R, p, end int) *DecodeError
}

// decode decodes the whole body as the request and returns its resources.
func (k *requestShape[R]) decode(d *decoder) ([]*R, *DecodeError) {
	rs := k.resources(d)
	mark := rs.mark()
	p, end := 0, len(d.b) // d.n may be 0: see traces
	for p < end {
		tag, q := uint64(d.b[p]), p+1
		var e *DecodeError
		if tag-8 >= 0x80-8 { // not a one-byte tag (field 1 to 15)
			if tag, q, e = d.tagSlow(p, end); e != nil {
				return nil, e
			}
		}
		switch tag {
		case 1<<3 | wtLen:
			i := rs.count(mark)
			a, z, e := d.lenPrefix(q, end)
			if e != nil {
				return nil, e.at(k.fields[1], i)
			}
			m := rs.new(p, d.n)
			if e := k.resource(d, m, a, z); e != nil {
				return nil, e.at(k.fields[1], i)
			}
			rs.push(m)
			p = z
		default:
			if p, e = d.other(tag, p, q, end, k.fields); e != nil {
				return nil, e
			}
		}
	}
	return rs.finish(mark, nil, p, d.n), nil
}

// envelopeShape is a Resource* or a Scope* message whose items are
// decoded: its head H (field 1, the resource or the scope) decoded by head,
// its items (field 2), each a C from items decoded by item, and its
// schema_url (field 3).
type envelopeShape[H, C any] struct {
	fields []string // field names by number, for errors and the schema test
	head   func(d *decoder, h **H, q, end int) (int, *DecodeError)
	items  func(d *decoder) *list[C]
	item   func(d *decoder, m *C, p, end int) *DecodeError
}

// decode decodes the message in [p, end): the head into *head, the items
// appended to dst, which it returns, and schema_url into *schemaURL.
func (k *envelopeShape[H, C]) decode(d *decoder, p, end int, head **H, dst []*C, schemaURL *string) ([]*C, *DecodeError) {
	items := k.items(d)
	mark := items.mark()
	for p < end {
		tag, q := uint64(d.b[p]), p+1
		var e *DecodeError
		if tag-8 >= 0x80-8 { // not a one-byte tag (field 1 to 15)
			if tag, q, e = d.tagSlow(p, end); e != nil {
				return nil, e
			}
		}
		switch tag {
		case 1<<3 | wtLen:
			if p, e = k.head(d, head, q, end); e != nil {
				return nil, e.in(k.fields[1])
			}
		case 2<<3 | wtLen:
			i := len(dst) + items.count(mark)
			a, z, e := d.lenPrefix(q, end)
			if e != nil {
				return nil, e.at(k.fields[2], i)
			}
			m := items.new(p, d.n)
			if e := k.item(d, m, a, z); e != nil {
				return nil, e.at(k.fields[2], i)
			}
			items.push(m)
			p = z
		case 3<<3 | wtLen:
			if *schemaURL, p, e = d.str(q, end); e != nil {
				return nil, e.in(k.fields[3])
			}
		default:
			if p, e = d.other(tag, p, q, end, k.fields); e != nil {
				return nil, e
			}
		}
	}
	return items.finish(mark, dst, p, d.n), nil
}

// resourceField decodes the resource field (depth 3) of a Resource* message
// into *r, merging into a resource already there.
func (d *decoder) resourceField(r **resourcepb.Resource, q, end int) (int, *DecodeError) {
	return singularField(d, r, q, end, 3, (*decoder).resource)
}

// scopeField decodes the scope field (depth 4) of a Scope* message into
// *s, merging into a scope already there.
func (d *decoder) scopeField(s **commonpb.InstrumentationScope, q, end int) (int, *DecodeError) {
	return singularField(d, s, q, end, 4, (*decoder).scope)
}

// singularField decodes a singular message field at q, at depth lv, into
// *m with decode: into the message already there (repeated occurrences
// merge, as in proto.Unmarshal), else into a new one.
func singularField[M any](d *decoder, m **M, q, end, lv int, decode func(d *decoder, m *M, p, end, lv int) *DecodeError) (int, *DecodeError) {
	a, z, e := d.lenPrefix(q, end)
	if e != nil {
		return 0, e
	}
	if *m == nil {
		*m = new(M)
	}
	if e := decode(d, *m, a, z, lv); e != nil {
		return 0, e
	}
	return z, nil
}

// scopeRecords is a ScopeSpans or ScopeLogs: the Scope* shape with items
// kept as records (pipeline.Records), each checked with check.
type scopeRecords struct {
	fields []string // field names by number, for errors and the schema test
	check  func(d *decoder, a, z int) *DecodeError
}

// decode decodes the message in [p, end): its scope and schema_url into
// *scope and *schemaURL, and returns its items' records: [start, last) of
// the body while they are contiguous, as they are from every SDK, else
// copied together.
func (k *scopeRecords) decode(d *decoder, p, end int, scope **commonpb.InstrumentationScope, schemaURL *string) (pipeline.Records, *DecodeError) {
	from := p
	n, start, last, contiguous := 0, -1, -1, true
	for p < end {
		tag, q := uint64(d.b[p]), p+1
		var e *DecodeError
		if tag-8 >= 0x80-8 { // not a one-byte tag (field 1 to 15)
			if tag, q, e = d.tagSlow(p, end); e != nil {
				return nil, e
			}
		}
		switch tag {
		case 1<<3 | wtLen:
			if p, e = d.scopeField(scope, q, end); e != nil {
				return nil, e.in(k.fields[1])
			}
		case 2<<3 | wtLen:
			a, z, e := d.lenPrefix(q, end)
			if e != nil {
				return nil, e.at(k.fields[2], n)
			}
			if e := k.check(d, a, z); e != nil {
				return nil, e.at(k.fields[2], n)
			}
			n++
			if start < 0 {
				start = p
			} else if p != last {
				contiguous = false
			}
			p, last = z, z
		case 3<<3 | wtLen:
			if *schemaURL, p, e = d.str(q, end); e != nil {
				return nil, e.in(k.fields[3])
			}
		default:
			if p, e = d.other(tag, p, q, end, k.fields); e != nil {
				return nil, e
			}
		}
	}
	switch {
	case n == 0:
		return nil, nil
	case contiguous:
		return d.b[start:last:last], nil
	}
	return d.gatherRecords(from, end), nil
}

// gatherRecords copies the item records (field 2) of the scope message in
// [p, end), all checked already, into one buffer.
func (d *decoder) gatherRecords(p, end int) pipeline.Records {
	var out pipeline.Records
	for rest := d.b[p:end]; ; {
		num, typ, n := protowire.ConsumeTag(rest)
		if n < 0 {
			return out
		}
		m := protowire.ConsumeFieldValue(num, typ, rest[n:])
		if m < 0 {
			return out
		}
		if num == 2 && typ == protowire.BytesType {
			out = append(out, rest[:n+m]...)
		}
		rest = rest[n+m:]
	}
}
