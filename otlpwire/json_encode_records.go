package otlpwire

import "google.golang.org/protobuf/encoding/protowire"

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
//
// The writers of each message are generated (generated_json_records.go)
// from the JSON writer's view of it, so a field the JSON writer writes is
// read and written here too, in its place; what is written by hand is
// their primitives below.

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

// run extends the run r of a repeated field with the element at [p, next).
func run(r *[2]int, p, next int) {
	if r[1] == 0 {
		r[0] = p
	}
	r[1] = next
}

// maxRecordDepth bounds the nesting of messages the direct path follows;
// deeper ones (the decoder accepted up to protowire's recursion limit) are
// left to decoding.
const maxRecordDepth = 64
