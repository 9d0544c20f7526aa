package otlpwire

import (
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
)

// Trace and span ids.
//
// The collector's pdata holds a trace id as [16]byte and a span id as
// [8]byte, and refuses a request with an id of any other length: in
// protobuf, an id field of 0 bytes is "not set" and one of any length but
// 16 (8) fails the request; in OTLP/JSON, "" is "not set" and any hex
// string but one of 32 (16) digits fails it. That holds for every id of
// OTLP: a span's trace_id, span_id and parent_span_id, a link's trace_id
// and span_id, a log record's and an exemplar's trace_id and span_id. A
// backend built on pdata refuses the whole request such an id travels in,
// with every good item beside it, so otelstep's receivers refuse it
// first, as the collector's do: both decoders (protobuf here, OTLP/JSON in
// json_scan.go) check every id with ValidID and name it with IDSizeError.
const (
	TraceIDSize = 16
	SpanIDSize  = 8
)

// ValidID reports whether an id of n bytes may stand in a field of ids of
// size bytes (TraceIDSize or SpanIDSize): empty (not set) or exactly size.
func ValidID(n, size int) bool { return n == 0 || n == size }

// IDSizeError is the reason an id of n bytes is refused from a field of
// ids of size bytes; with hex, n is the id's length in hex digits, as
// OTLP/JSON writes ids. It never holds the id itself.
func IDSizeError(n, size int, hex bool) string {
	what := "span id"
	if size == TraceIDSize {
		what = "trace id"
	}
	if !hex {
		return what + " of " + strconv.Itoa(n) + " bytes, must be " + strconv.Itoa(size) + " bytes or empty"
	}
	odd := ""
	if n%2 != 0 {
		odd = " an odd number of hex digits,"
	}
	return what + " of " + strconv.Itoa(n) + " hex digits," + odd + " must be " + strconv.Itoa(2*size) +
		" hex digits (" + strconv.Itoa(size) + " bytes) or empty"
}

// Checking a span or log record without decoding it.
//
// The decoder checks every span and log record it keeps as a record
// (pipeline.Records). Decoding each into a scratch message to do so filled and
// cleared its slabs per item (clearing memory that holds pointers costs a
// write barrier per word while the GC runs): a fifth of the instructions
// of a traces request's way through otelstep. The valid* methods walk the
// same fields with the same rules (span, event, link, status, logRecord,
// keyValue, anyValue, arrayValue, keyValueList and their primitives) and
// store nothing. They only say yes or no: on no, the caller decodes the
// item into scratch after all, which names the error as before. So a
// validator may refuse more than the decoder (that costs a second walk),
// never accept more. The rules are written twice, here and in the
// decoders' switches: TestValidItemsAgree, FuzzValidSpan and
// FuzzValidLogRecord hold the two to the same answer, and the decode
// fuzzers check that nothing proto.Unmarshal refuses is let in.

// vTag reads the tag at p < end as the decoders do: tagSlow's rules for a
// tag of more than one byte or of field 0.
func (d *decoder) vTag(p, end int) (tag uint64, q int, ok bool) {
	tag, q = uint64(d.b[p]), p+1
	if tag-8 < 0x80-8 {
		return tag, q, true
	}
	v, n := protowire.ConsumeVarint(d.b[p:end])
	if n < 0 {
		return 0, 0, false
	}
	if num := v >> 3; num < uint64(protowire.MinValidNumber) || num > uint64(protowire.MaxValidNumber) {
		return 0, 0, false
	}
	return v, p + n, true
}

func (d *decoder) vVarint(q, end int) (int, bool) {
	if q < end && d.b[q] < 0x80 {
		return q + 1, true
	}
	_, n := protowire.ConsumeVarint(d.b[q:end])
	return q + n, n >= 0
}

func vFixed(q, end, size int) (int, bool) { return q + size, end-q >= size }

// vLen is lenPrefix.
func (d *decoder) vLen(q, end int) (a, z int, ok bool) {
	if q < end {
		if n := int(d.b[q]); n < 0x80 && n < end-q {
			return q + 1, q + 1 + n, true
		}
	}
	v, n := protowire.ConsumeVarint(d.b[q:end])
	if n < 0 {
		return 0, 0, false
	}
	a = q + n
	if v > uint64(end-a) {
		return 0, 0, false
	}
	return a, a + int(v), true
}

// vID is id: a length-delimited id field of size bytes (ValidID). Ids
// have a one-byte length: vLen is called only for a bad one.
func (d *decoder) vID(q, end, size int) (int, bool) {
	if q < end {
		if n := int(d.b[q]); (n == size || n == 0) && n < end-q {
			return q + 1 + n, true
		}
	}
	a, z, ok := d.vLen(q, end)
	return z, ok && ValidID(z-a, size)
}

// vStr is str: a length-delimited field that must be UTF-8.
func (d *decoder) vStr(q, end int) (int, bool) {
	a, z, ok := d.vLen(q, end)
	return z, ok && validUTF8(d.b[a:z])
}

// vOther is other: an unknown field, well-formed, or in lenient mode a
// known field of another wire type.
func (d *decoder) vOther(tag uint64, q, end int, names []string) (int, bool) {
	num, wt := protowire.Number(tag>>3), protowire.Type(tag&7)
	if wt == protowire.EndGroupType {
		return 0, false
	}
	if int(num) < len(names) && names[num] != "" && !d.lenient {
		return 0, false
	}
	n := protowire.ConsumeFieldValue(num, wt, d.b[q:end])
	return q + n, n >= 0
}

// vMsg checks the length-delimited field at q and its payload with fn.
func (d *decoder) vMsg(q, end, lv int, fn func(d *decoder, a, z, lv int) bool) (int, bool) {
	a, z, ok := d.vLen(q, end)
	return z, ok && fn(d, a, z, lv)
}

// validSpan is span's check.
func (d *decoder) validSpan(p, end int) bool {
	for p < end {
		tag, q, ok := d.vTag(p, end)
		if !ok {
			return false
		}
		switch tag {
		case 1<<3 | wtLen:
			p, ok = d.vID(q, end, TraceIDSize)
		case 2<<3 | wtLen, 4<<3 | wtLen:
			p, ok = d.vID(q, end, SpanIDSize)
		case 3<<3 | wtLen, 5<<3 | wtLen:
			p, ok = d.vStr(q, end)
		case 6<<3 | wtVarint, 10<<3 | wtVarint, 12<<3 | wtVarint, 14<<3 | wtVarint:
			p, ok = d.vVarint(q, end)
		case 7<<3 | wtI64, 8<<3 | wtI64:
			p, ok = vFixed(q, end, 8)
		case 9<<3 | wtLen:
			p, ok = d.vMsg(q, end, 5, (*decoder).validKeyValue)
		case 11<<3 | wtLen:
			p, ok = d.vMsg(q, end, 0, (*decoder).validEvent)
		case 13<<3 | wtLen:
			p, ok = d.vMsg(q, end, 0, (*decoder).validLink)
		case 15<<3 | wtLen:
			p, ok = d.vMsg(q, end, 0, (*decoder).validStatus)
		case 16<<3 | wtI32:
			p, ok = vFixed(q, end, 4)
		default:
			p, ok = d.vOther(tag, q, end, spanFields)
		}
		if !ok {
			return false
		}
	}
	return true
}

func (d *decoder) validEvent(p, end, _ int) bool {
	for p < end {
		tag, q, ok := d.vTag(p, end)
		if !ok {
			return false
		}
		switch tag {
		case 1<<3 | wtI64:
			p, ok = vFixed(q, end, 8)
		case 2<<3 | wtLen:
			p, ok = d.vStr(q, end)
		case 3<<3 | wtLen:
			p, ok = d.vMsg(q, end, 6, (*decoder).validKeyValue)
		case 4<<3 | wtVarint:
			p, ok = d.vVarint(q, end)
		default:
			p, ok = d.vOther(tag, q, end, eventFields)
		}
		if !ok {
			return false
		}
	}
	return true
}

func (d *decoder) validLink(p, end, _ int) bool {
	for p < end {
		tag, q, ok := d.vTag(p, end)
		if !ok {
			return false
		}
		switch tag {
		case 1<<3 | wtLen:
			p, ok = d.vID(q, end, TraceIDSize)
		case 2<<3 | wtLen:
			p, ok = d.vID(q, end, SpanIDSize)
		case 3<<3 | wtLen:
			p, ok = d.vStr(q, end)
		case 4<<3 | wtLen:
			p, ok = d.vMsg(q, end, 6, (*decoder).validKeyValue)
		case 5<<3 | wtVarint:
			p, ok = d.vVarint(q, end)
		case 6<<3 | wtI32:
			p, ok = vFixed(q, end, 4)
		default:
			p, ok = d.vOther(tag, q, end, linkFields)
		}
		if !ok {
			return false
		}
	}
	return true
}

func (d *decoder) validStatus(p, end, _ int) bool {
	for p < end {
		tag, q, ok := d.vTag(p, end)
		if !ok {
			return false
		}
		switch tag {
		case 2<<3 | wtLen:
			p, ok = d.vStr(q, end)
		case 3<<3 | wtVarint:
			p, ok = d.vVarint(q, end)
		default:
			p, ok = d.vOther(tag, q, end, statusFields)
		}
		if !ok {
			return false
		}
	}
	return true
}

// validLogRecord is logRecord's check.
func (d *decoder) validLogRecord(p, end int) bool {
	for p < end {
		tag, q, ok := d.vTag(p, end)
		if !ok {
			return false
		}
		switch tag {
		case 1<<3 | wtI64, 11<<3 | wtI64:
			p, ok = vFixed(q, end, 8)
		case 2<<3 | wtVarint, 7<<3 | wtVarint:
			p, ok = d.vVarint(q, end)
		case 3<<3 | wtLen, 12<<3 | wtLen:
			p, ok = d.vStr(q, end)
		case 5<<3 | wtLen:
			p, ok = d.vMsg(q, end, 5, (*decoder).validAnyValue)
		case 6<<3 | wtLen:
			p, ok = d.vMsg(q, end, 5, (*decoder).validKeyValue)
		case 8<<3 | wtI32:
			p, ok = vFixed(q, end, 4)
		case 9<<3 | wtLen:
			p, ok = d.vID(q, end, TraceIDSize)
		case 10<<3 | wtLen:
			p, ok = d.vID(q, end, SpanIDSize)
		default:
			p, ok = d.vOther(tag, q, end, logRecordFields)
		}
		if !ok {
			return false
		}
	}
	return true
}

// validKeyValue is keyValue's check at depth lv.
func (d *decoder) validKeyValue(p, end, lv int) bool {
	if lv > maxDepth {
		return false
	}
	// The common shapes, a key of under 128 bytes and then a value that is
	// one string of under 128 bytes, one int, bool or double, checked by
	// position: what the loop below would check of them, the value's depth
	// included, without its field reads. Any other shape takes the loop.
	if n := end - p; n >= 6 && lv < maxDepth {
		b := d.b[p:end]
		if kl := int(b[1]); uint64(b[0]) == 1<<3|wtLen && kl < 0x80 && 6+kl <= n && uint64(b[2+kl]) == 2<<3|wtLen && b[3+kl] < 0x80 && int(b[3+kl]) == n-4-kl {
			v := b[4+kl:]
			switch uint64(v[0]) {
			case 1<<3 | wtLen:
				if v[1] < 0x80 && int(v[1]) == len(v)-2 {
					return validUTF8(b[2:2+kl]) && validUTF8(v[2:])
				}
			case 2<<3 | wtVarint, 3<<3 | wtVarint:
				if _, m := protowire.ConsumeVarint(v[1:]); m == len(v)-1 {
					return validUTF8(b[2 : 2+kl])
				}
			case 4<<3 | wtI64:
				if len(v) == 9 {
					return validUTF8(b[2 : 2+kl])
				}
			}
		}
	}
	for p < end {
		tag, q, ok := d.vTag(p, end)
		if !ok {
			return false
		}
		switch tag {
		case 1<<3 | wtLen:
			p, ok = d.vStr(q, end)
		case 2<<3 | wtLen:
			p, ok = d.vMsg(q, end, lv+1, (*decoder).validAnyValue)
		case 3<<3 | wtVarint:
			p, ok = d.vVarint(q, end)
		default:
			p, ok = d.vOther(tag, q, end, keyValueFields)
		}
		if !ok {
			return false
		}
	}
	return true
}

// validAnyValue is anyValue's check at depth lv.
func (d *decoder) validAnyValue(p, end, lv int) bool {
	if lv > maxDepth {
		return false
	}
	for p < end {
		tag, q, ok := d.vTag(p, end)
		if !ok {
			return false
		}
		switch tag {
		case 1<<3 | wtLen:
			p, ok = d.vStr(q, end)
		case 2<<3 | wtVarint, 3<<3 | wtVarint, 8<<3 | wtVarint:
			p, ok = d.vVarint(q, end)
		case 4<<3 | wtI64:
			p, ok = vFixed(q, end, 8)
		case 5<<3 | wtLen:
			p, ok = d.vMsg(q, end, lv+1, (*decoder).validArrayValue)
		case 6<<3 | wtLen:
			p, ok = d.vMsg(q, end, lv+1, (*decoder).validKeyValueList)
		case 7<<3 | wtLen:
			_, p, ok = d.vLen(q, end)
		default:
			p, ok = d.vOther(tag, q, end, anyValueFields)
		}
		if !ok {
			return false
		}
	}
	return true
}

// validArrayValue and validKeyValueList are arrayValue's and
// keyValueList's checks at depth lv: their values are field 1.
func (d *decoder) validArrayValue(p, end, lv int) bool {
	return d.validValues(p, end, lv, (*decoder).validAnyValue)
}

func (d *decoder) validKeyValueList(p, end, lv int) bool {
	return d.validValues(p, end, lv, (*decoder).validKeyValue)
}

func (d *decoder) validValues(p, end, lv int, value func(d *decoder, a, z, lv int) bool) bool {
	if lv > maxDepth {
		return false
	}
	for p < end {
		tag, q, ok := d.vTag(p, end)
		if !ok {
			return false
		}
		if tag == 1<<3|wtLen {
			p, ok = d.vMsg(q, end, lv+1, value)
		} else {
			p, ok = d.vOther(tag, q, end, valuesFields)
		}
		if !ok {
			return false
		}
	}
	return true
}
