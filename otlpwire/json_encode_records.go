package otlpwire

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
)

// JSON straight from item records.
//
// A span or log record the receiver kept as its wire record
// (pipeline.Records) was checked when it arrived. Decoding it again into a
// Span only to write that Span's JSON filled a message and its attribute
// slabs, and cleared them, per span; while the GC marks, as it mostly does
// under load, every pointer word of that costs a write barrier.
// appendSpanRecord writes the same JSON from the record's bytes: it reads
// the span's fields once, then writes them in JSON's order (flags, field
// 16, comes fourth) and walks attributes, events and links where they are.
// appendLogRecordRecord does the same for log records.
//
// It handles the form every encoder sends: each message field at most once
// where proto.Unmarshal would merge repeats (status, a log record's body, a
// KeyValue's value, an AnyValue's member), every known field with its own
// wire type. On anything else it reports !ok and the caller decodes the
// record (fieldItems): the output is appendSpan's (appendLogRecord's) for
// the decoded item either way, which the tests and the fuzzers check.

// readField reads the field of b at p: its number and wire type, its value
// (a varint or fixed value in v; a length-delimited one is b[a:z]) and the
// position after it; next < 0 on malformed bytes (a checked record has
// none). The common case, a one-byte tag and a one-byte length or varint,
// takes no call.
func readField(b []byte, p int) (num protowire.Number, typ protowire.Type, v uint64, a, z, next int) {
	if p < len(b) && b[p] < 0x80 && p+1 < len(b) {
		num, typ = protowire.Number(b[p]>>3), protowire.Type(b[p]&7)
		if c := b[p+1]; c < 0x80 {
			switch typ {
			case protowire.BytesType:
				if a, z = p+2, p+2+int(c); z <= len(b) {
					return num, typ, 0, a, z, z
				}
			case protowire.VarintType:
				return num, typ, uint64(c), 0, 0, p + 2
			}
		}
	}
	return readFieldSlow(b, p)
}

func readFieldSlow(b []byte, p int) (num protowire.Number, typ protowire.Type, v uint64, a, z, next int) {
	num, typ, n := protowire.ConsumeTag(b[p:])
	if n < 0 {
		return 0, 0, 0, 0, 0, -1
	}
	p += n
	switch typ {
	case protowire.VarintType:
		v, n = protowire.ConsumeVarint(b[p:])
	case protowire.Fixed64Type:
		v, n = protowire.ConsumeFixed64(b[p:])
	case protowire.Fixed32Type:
		var x uint32
		x, n = protowire.ConsumeFixed32(b[p:])
		v = uint64(x)
	case protowire.BytesType:
		var l uint64
		if l, n = protowire.ConsumeVarint(b[p:]); n >= 0 {
			if l > uint64(len(b)-p-n) {
				return 0, 0, 0, 0, 0, -1
			}
			a, z = p+n, p+n+int(l)
			return num, typ, 0, a, z, z
		}
	default:
		n = protowire.ConsumeFieldValue(num, typ, b[p:])
	}
	if n < 0 {
		return 0, 0, 0, 0, 0, -1
	}
	return num, typ, v, 0, 0, p + n
}

// spanRecord is what appendSpanRecord reads of a span before writing it:
// values, and the bounds of each repeated field's run in the record (from
// its first element to the end of its last).
type spanRecord struct {
	traceID, spanID, traceState, parentSpanID, name, status []byte
	kind, start, end                                        uint64
	droppedAttrs, droppedEvents, droppedLinks, flags        uint64
	attrs, events, links                                    [2]int
	hasStatus                                               bool
}

// run extends the run r of a repeated field with the element at [p, next).
func run(r *[2]int, p, next int) {
	if r[1] == 0 {
		r[0] = p
	}
	r[1] = next
}

// appendSpanRecord writes the JSON object of the span record rec (see the
// comment above); on !ok b holds a partial object the caller drops.
func appendSpanRecord(b, rec []byte) (_ []byte, ok bool) {
	var s spanRecord
	for p := 0; p < len(rec); {
		num, typ, v, a, z, next := readField(rec, p)
		if next < 0 {
			return b, false
		}
		want := protowire.BytesType
		switch num {
		case 1:
			s.traceID = rec[a:z]
		case 2:
			s.spanID = rec[a:z]
		case 3:
			s.traceState = rec[a:z]
		case 4:
			s.parentSpanID = rec[a:z]
		case 5:
			s.name = rec[a:z]
		case 6:
			s.kind, want = v, protowire.VarintType
		case 7:
			s.start, want = v, protowire.Fixed64Type
		case 8:
			s.end, want = v, protowire.Fixed64Type
		case 9:
			run(&s.attrs, p, next)
		case 10:
			s.droppedAttrs, want = v, protowire.VarintType
		case 11:
			run(&s.events, p, next)
		case 12:
			s.droppedEvents, want = v, protowire.VarintType
		case 13:
			run(&s.links, p, next)
		case 14:
			s.droppedLinks, want = v, protowire.VarintType
		case 15:
			if s.hasStatus {
				return b, false // repeats merge
			}
			s.hasStatus, s.status = true, rec[a:z]
		case 16:
			s.flags, want = v, protowire.Fixed32Type
		default:
			want = typ
		}
		if typ != want {
			return b, false
		}
		p = next
	}

	b = append(b, '{')
	first := true
	b = fieldHex(b, &first, "traceId", s.traceID)
	b = fieldHex(b, &first, "spanId", s.spanID)
	b = fieldString(b, &first, "traceState", s.traceState)
	b = fieldHex(b, &first, "parentSpanId", s.parentSpanID)
	b = fieldUint32(b, &first, "flags", uint32(s.flags))
	b = fieldString(b, &first, "name", s.name)
	b = fieldInt32(b, &first, "kind", int32(s.kind))
	b = fieldUint64(b, &first, "startTimeUnixNano", s.start)
	b = fieldUint64(b, &first, "endTimeUnixNano", s.end)
	if s.attrs[1] > 0 {
		b = key(b, &first, "attributes")
		if b, ok = appendKeyValueRecords(b, rec[s.attrs[0]:s.attrs[1]], 9, 0); !ok {
			return b, false
		}
	}
	b = fieldUint32(b, &first, "droppedAttributesCount", uint32(s.droppedAttrs))
	if s.events[1] > 0 {
		b = key(b, &first, "events")
		if b, ok = appendEach(b, rec[s.events[0]:s.events[1]], 11, 0, appendEventRecord); !ok {
			return b, false
		}
	}
	b = fieldUint32(b, &first, "droppedEventsCount", uint32(s.droppedEvents))
	if s.links[1] > 0 {
		b = key(b, &first, "links")
		if b, ok = appendEach(b, rec[s.links[0]:s.links[1]], 13, 0, appendLinkRecord); !ok {
			return b, false
		}
	}
	b = fieldUint32(b, &first, "droppedLinksCount", uint32(s.droppedLinks))
	if s.hasStatus {
		b = key(b, &first, "status")
		if b, ok = appendStatusRecord(b, s.status); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

// appendLogRecordRecord is appendSpanRecord for a log record.
func appendLogRecordRecord(b, rec []byte) (_ []byte, ok bool) {
	var (
		time, observed, severity, dropped, flags uint64
		severityText, body, traceID, spanID, ev  []byte
		hasBody                                  bool
		attrs                                    [2]int
	)
	for p := 0; p < len(rec); {
		num, typ, v, a, z, next := readField(rec, p)
		if next < 0 {
			return b, false
		}
		want := protowire.BytesType
		switch num {
		case 1:
			time, want = v, protowire.Fixed64Type
		case 2:
			severity, want = v, protowire.VarintType
		case 3:
			severityText = rec[a:z]
		case 5:
			if hasBody {
				return b, false // repeats merge
			}
			hasBody, body = true, rec[a:z]
		case 6:
			run(&attrs, p, next)
		case 7:
			dropped, want = v, protowire.VarintType
		case 8:
			flags, want = v, protowire.Fixed32Type
		case 9:
			traceID = rec[a:z]
		case 10:
			spanID = rec[a:z]
		case 11:
			observed, want = v, protowire.Fixed64Type
		case 12:
			ev = rec[a:z]
		default:
			want = typ
		}
		if typ != want {
			return b, false
		}
		p = next
	}
	b = append(b, '{')
	first := true
	b = fieldUint64(b, &first, "timeUnixNano", time)
	b = fieldUint64(b, &first, "observedTimeUnixNano", observed)
	b = fieldInt32(b, &first, "severityNumber", int32(severity))
	b = fieldString(b, &first, "severityText", severityText)
	if hasBody {
		b = key(b, &first, "body")
		if b, ok = appendAnyValueRecord(b, body, 1); !ok {
			return b, false
		}
	}
	if attrs[1] > 0 {
		b = key(b, &first, "attributes")
		if b, ok = appendKeyValueRecords(b, rec[attrs[0]:attrs[1]], 6, 0); !ok {
			return b, false
		}
	}
	b = fieldUint32(b, &first, "droppedAttributesCount", uint32(dropped))
	b = fieldUint32(b, &first, "flags", uint32(flags))
	b = fieldHex(b, &first, "traceId", traceID)
	b = fieldHex(b, &first, "spanId", spanID)
	b = fieldString(b, &first, "eventName", ev)
	return append(b, '}'), true
}

// appendEach writes a JSON array of the messages in the fields num of rec,
// each with fn at depth lv.
func appendEach(b, rec []byte, num protowire.Number, lv int, fn func(b, rec []byte, lv int) ([]byte, bool)) (_ []byte, ok bool) {
	b = append(b, '[')
	n := 0
	for p := 0; p < len(rec); {
		fnum, typ, _, a, z, next := readField(rec, p)
		if next < 0 {
			return b, false
		}
		p = next
		if fnum != num {
			continue
		}
		if typ != protowire.BytesType {
			return b, false
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		if b, ok = fn(b, rec[a:z], lv); !ok {
			return b, false
		}
	}
	return append(b, ']'), true
}

func appendEventRecord(b, rec []byte, _ int) (_ []byte, ok bool) {
	var (
		time, dropped uint64
		name          []byte
		attrs         [2]int
	)
	for p := 0; p < len(rec); {
		num, typ, v, a, z, next := readField(rec, p)
		if next < 0 {
			return b, false
		}
		want := protowire.BytesType
		switch num {
		case 1:
			time, want = v, protowire.Fixed64Type
		case 2:
			name = rec[a:z]
		case 3:
			run(&attrs, p, next)
		case 4:
			dropped, want = v, protowire.VarintType
		default:
			want = typ
		}
		if typ != want {
			return b, false
		}
		p = next
	}
	b = append(b, '{')
	first := true
	b = fieldUint64(b, &first, "timeUnixNano", time)
	b = fieldString(b, &first, "name", name)
	if attrs[1] > 0 {
		b = key(b, &first, "attributes")
		if b, ok = appendKeyValueRecords(b, rec[attrs[0]:attrs[1]], 3, 0); !ok {
			return b, false
		}
	}
	b = fieldUint32(b, &first, "droppedAttributesCount", uint32(dropped))
	return append(b, '}'), true
}

func appendLinkRecord(b, rec []byte, _ int) (_ []byte, ok bool) {
	var (
		traceID, spanID, traceState []byte
		dropped, flags              uint64
		attrs                       [2]int
	)
	for p := 0; p < len(rec); {
		num, typ, v, a, z, next := readField(rec, p)
		if next < 0 {
			return b, false
		}
		want := protowire.BytesType
		switch num {
		case 1:
			traceID = rec[a:z]
		case 2:
			spanID = rec[a:z]
		case 3:
			traceState = rec[a:z]
		case 4:
			run(&attrs, p, next)
		case 5:
			dropped, want = v, protowire.VarintType
		case 6:
			flags, want = v, protowire.Fixed32Type
		default:
			want = typ
		}
		if typ != want {
			return b, false
		}
		p = next
	}
	b = append(b, '{')
	first := true
	b = fieldHex(b, &first, "traceId", traceID)
	b = fieldHex(b, &first, "spanId", spanID)
	b = fieldString(b, &first, "traceState", traceState)
	if attrs[1] > 0 {
		b = key(b, &first, "attributes")
		if b, ok = appendKeyValueRecords(b, rec[attrs[0]:attrs[1]], 4, 0); !ok {
			return b, false
		}
	}
	b = fieldUint32(b, &first, "droppedAttributesCount", uint32(dropped))
	b = fieldUint32(b, &first, "flags", uint32(flags))
	return append(b, '}'), true
}

func appendStatusRecord(b, rec []byte) ([]byte, bool) {
	var (
		message []byte
		code    uint64
	)
	for p := 0; p < len(rec); {
		num, typ, v, a, z, next := readField(rec, p)
		if next < 0 {
			return b, false
		}
		want := protowire.BytesType
		switch num {
		case 2:
			message = rec[a:z]
		case 3:
			code, want = v, protowire.VarintType
		default:
			want = typ
		}
		if typ != want {
			return b, false
		}
		p = next
	}
	b = append(b, '{')
	first := true
	b = fieldString(b, &first, "message", message)
	b = fieldInt32(b, &first, "code", int32(code))
	return append(b, '}'), true
}

// maxRecordDepth bounds the nesting of values the direct path follows;
// deeper ones (the decoder accepted up to protowire's recursion limit) are
// left to decoding.
const maxRecordDepth = 64

// appendKeyValueRecords writes a JSON array of the KeyValue messages in the
// fields num of rec, at nesting depth lv.
func appendKeyValueRecords(b, rec []byte, num protowire.Number, lv int) ([]byte, bool) {
	if lv > maxRecordDepth {
		return b, false
	}
	return appendEach(b, rec, num, lv, appendKeyValueRecord)
}

func appendKeyValueRecord(b, rec []byte, lv int) (_ []byte, ok bool) {
	// The common shapes, a key of under 128 bytes and a value that is one
	// string of under 128 bytes, one int, bool or double, read by
	// position: the generic reads of their three fields were most of the
	// cost of a span's attributes. Anything else, a key of 0 bytes included
	// (its JSON has no "key"), takes the generic path below.
	if n := len(rec); n >= 6 && rec[0] == 0x0a && lv < maxRecordDepth {
		if kl := int(rec[1]); kl > 0 && kl < 0x80 && 6+kl <= n && rec[2+kl] == 0x12 && rec[3+kl] < 0x80 && int(rec[3+kl]) == n-4-kl {
			if v := rec[4+kl:]; v[0] == 0x0a {
				if v[1] < 0x80 && int(v[1]) == len(v)-2 {
					b = append(b, `{"key":`...)
					b = appendString(b, rec[2:2+kl])
					b = append(b, `,"value":{"stringValue":`...)
					b = appendString(b, v[2:])
					return append(b, '}', '}'), true
				}
			} else if out, ok := appendNumberKeyValue(b, rec[2:2+kl], v); ok {
				return out, true
			}
		}
	}
	var (
		k, value []byte
		strindex uint64
		hasValue bool
	)
	for p := 0; p < len(rec); {
		num, typ, v, a, z, next := readField(rec, p)
		if next < 0 {
			return b, false
		}
		want := protowire.BytesType
		switch num {
		case 1:
			k = rec[a:z]
		case 2:
			if hasValue {
				return b, false // repeats merge
			}
			hasValue, value = true, rec[a:z]
		case 3:
			strindex, want = v, protowire.VarintType
		default:
			want = typ
		}
		if typ != want {
			return b, false
		}
		p = next
	}
	b = append(b, '{')
	first := true
	b = fieldString(b, &first, "key", k)
	if hasValue {
		b = key(b, &first, "value")
		if b, ok = appendAnyValueRecord(b, value, lv+1); !ok {
			return b, false
		}
	}
	b = fieldInt32(b, &first, "keyStrindex", int32(strindex))
	return append(b, '}'), true
}

// appendNumberKeyValue writes the KeyValue of key k and the AnyValue record
// v, if v is one int, bool or double field and nothing else; ok is false,
// and b unchanged, for any other v. (The string value is written inline by
// appendKeyValueRecord: a call for it cost 7% of a span's JSON.)
func appendNumberKeyValue(b, k, v []byte) (_ []byte, ok bool) {
	var x uint64
	kind := v[0] >> 3
	switch v[0] {
	case 2<<3 | byte(protowire.VarintType), 3<<3 | byte(protowire.VarintType): // boolValue, intValue
		var n int
		if x, n = protowire.ConsumeVarint(v[1:]); n != len(v)-1 {
			return b, false
		}
	case 4<<3 | byte(protowire.Fixed64Type): // doubleValue
		if len(v) != 9 {
			return b, false
		}
		x = binary.LittleEndian.Uint64(v[1:])
	default:
		return b, false
	}
	b = append(b, `{"key":`...)
	b = appendString(b, k)
	switch kind {
	case 2:
		if x != 0 {
			b = append(b, `,"value":{"boolValue":true`...)
		} else {
			b = append(b, `,"value":{"boolValue":false`...)
		}
	case 3:
		b = append(b, `,"value":{"intValue":"`...)
		b = strconv.AppendInt(b, int64(x), 10)
		b = append(b, '"')
	case 4:
		b = append(b, `,"value":{"doubleValue":`...)
		b = appendFloat(b, math.Float64frombits(x))
	}
	return append(b, '}', '}'), true
}

// appendAnyValueRecord writes the AnyValue record rec, which must hold at
// most one member: several would be the last one, or a merge of arrays or
// kvlists, which decoding handles.
func appendAnyValueRecord(b, rec []byte, lv int) (_ []byte, ok bool) {
	if lv > maxRecordDepth {
		return b, false
	}
	var (
		num     protowire.Number
		typ     protowire.Type
		v       uint64
		val     []byte
		members int
	)
	for p := 0; p < len(rec); {
		n, t, x, a, z, next := readField(rec, p)
		if next < 0 {
			return b, false
		}
		p = next
		if n < 1 || n > 8 {
			continue
		}
		if members++; members > 1 {
			return b, false
		}
		num, typ, v, val = n, t, x, rec[a:z]
	}
	if members == 0 {
		return append(b, '{', '}'), true
	}
	want := protowire.BytesType
	switch num {
	case 2, 3, 8:
		want = protowire.VarintType
	case 4:
		want = protowire.Fixed64Type
	}
	if typ != want {
		return b, false
	}
	b = append(b, '{')
	switch num {
	case 1:
		b = append(b, `"stringValue":`...)
		b = appendString(b, val)
	case 2:
		if v != 0 {
			b = append(b, `"boolValue":true`...)
		} else {
			b = append(b, `"boolValue":false`...)
		}
	case 3:
		b = append(b, `"intValue":"`...)
		b = strconv.AppendInt(b, int64(v), 10)
		b = append(b, '"')
	case 4:
		b = append(b, `"doubleValue":`...)
		b = appendFloat(b, math.Float64frombits(v))
	case 5:
		b = append(b, `"arrayValue":{`...)
		if values, ok := fieldRun(val, 1); !ok {
			return b, false
		} else if len(values) > 0 {
			b = append(b, `"values":`...)
			if b, ok = appendEach(b, values, 1, lv+1, appendAnyValueRecord); !ok {
				return b, false
			}
		}
		b = append(b, '}')
	case 6:
		b = append(b, `"kvlistValue":{`...)
		if values, ok := fieldRun(val, 1); !ok {
			return b, false
		} else if len(values) > 0 {
			b = append(b, `"values":`...)
			if b, ok = appendKeyValueRecords(b, values, 1, lv+1); !ok {
				return b, false
			}
		}
		b = append(b, '}')
	case 7:
		b = append(b, `"bytesValue":"`...)
		b = base64.StdEncoding.AppendEncode(b, val)
		b = append(b, '"')
	case 8:
		b = append(b, `"stringValueStrindex":`...)
		b = strconv.AppendInt(b, int64(int32(v)), 10)
	}
	return append(b, '}'), true
}

// fieldRun returns the part of rec from its first field num to the end of
// its last (empty if it has none).
func fieldRun(rec []byte, num protowire.Number) (_ []byte, ok bool) {
	var r [2]int
	for p := 0; p < len(rec); {
		n, _, _, _, _, next := readField(rec, p)
		if next < 0 {
			return nil, false
		}
		if n == num {
			run(&r, p, next)
		}
		p = next
	}
	return rec[r[0]:r[1]], true
}
