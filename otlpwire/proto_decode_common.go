package otlpwire

import (
	"math"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
)

// The messages every signal shares: KeyValue, AnyValue and its array and
// kvlist values, Resource, EntityRef and InstrumentationScope.

// keyValue decodes the KeyValue x.kv at depth lv; its value is x.av.
func (d *decoder) keyValue(x *attrData, p, end, lv int) *DecodeError {
	if lv > maxDepth {
		return d.errf(p, "nesting deeper than %d messages", maxDepth)
	}
	kv := &x.kv
	for p < end {
		tag, q := uint64(d.b[p]), p+1
		var e *DecodeError
		if tag-8 >= 0x80-8 { // not a one-byte tag (field 1 to 15)
			if tag, q, e = d.tagSlow(p, end); e != nil {
				return e
			}
		}
		switch tag {
		case 1<<3 | wtLen:
			if kv.Key, p, e = d.str(q, end); e != nil {
				return e.in("key")
			}
		case 2<<3 | wtLen:
			a, z, e := d.lenPrefix(q, end)
			if e != nil {
				return e.in("value")
			}
			kv.Value = &x.av // merges into the value already there, if any
			if e := d.anyValue(kv.Value, a, z, lv+1, &x.sv); e != nil {
				return e.in("value")
			}
			p = z
		case 3<<3 | wtVarint:
			v, z, e := d.varint(q, end)
			if e != nil {
				return e.in("key_strindex")
			}
			kv.KeyStrindex, p = int32(v), z
		default:
			if p, e = d.other(tag, p, q, end, keyValueFields); e != nil {
				return e
			}
		}
	}
	return nil
}

// attribute decodes one element, at depth lv, of a repeated KeyValue field
// whose tag ended at q, pushes it on d.kvs and returns the position after
// it. The caller names the field on error, with the element's index taken
// before the call: a failed nested kvlist leaves its elements on the stack.
func (d *decoder) attribute(q, end, lv int) (int, *DecodeError) {
	a, z, e := d.lenPrefix(q, end)
	if e != nil {
		return 0, e
	}
	x := d.attrs.one(q, d.n)
	if e := d.keyValue(x, a, z, lv); e != nil {
		return 0, e
	}
	d.kvs.push(&x.kv)
	return z, nil
}

// anyValue decodes an AnyValue at depth lv. A scalar member replaces the
// current value; an array or kvlist member merges into a current member of
// the same kind, as proto.Unmarshal does. A string member goes into sv if
// not nil: storage that belongs to v alone.
func (d *decoder) anyValue(v *commonpb.AnyValue, p, end, lv int, sv *commonpb.AnyValue_StringValue) *DecodeError {
	if lv > maxDepth {
		return d.errf(p, "nesting deeper than %d messages", maxDepth)
	}
	for p < end {
		tag, q := uint64(d.b[p]), p+1
		var e *DecodeError
		if tag-8 >= 0x80-8 { // not a one-byte tag (field 1 to 15)
			if tag, q, e = d.tagSlow(p, end); e != nil {
				return e
			}
		}
		switch tag {
		case 1<<3 | wtLen:
			s, z, e := d.str(q, end)
			if e != nil {
				return e.in("string_value")
			}
			w := sv
			if w == nil {
				w = d.strs.one(p, d.n)
			}
			w.StringValue = s
			v.Value, p = w, z
		case 2<<3 | wtVarint:
			x, z, e := d.varint(q, end)
			if e != nil {
				return e.in("bool_value")
			}
			w := d.bols.one(p, d.n)
			w.BoolValue = x != 0
			v.Value, p = w, z
		case 3<<3 | wtVarint:
			x, z, e := d.varint(q, end)
			if e != nil {
				return e.in("int_value")
			}
			w := d.ints.one(p, d.n)
			w.IntValue = int64(x)
			v.Value, p = w, z
		case 4<<3 | wtI64:
			x, z, e := d.fixed64(q, end)
			if e != nil {
				return e.in("double_value")
			}
			w := d.dbls.one(p, d.n)
			w.DoubleValue = math.Float64frombits(x)
			v.Value, p = w, z
		case 5<<3 | wtLen:
			a, z, e := d.lenPrefix(q, end)
			if e != nil {
				return e.in("array_value")
			}
			w, ok := v.Value.(*commonpb.AnyValue_ArrayValue)
			if !ok || w.ArrayValue == nil {
				w = &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{}}
			}
			if e := d.arrayValue(w.ArrayValue, a, z, lv+1); e != nil {
				return e.in("array_value")
			}
			v.Value, p = w, z
		case 6<<3 | wtLen:
			a, z, e := d.lenPrefix(q, end)
			if e != nil {
				return e.in("kvlist_value")
			}
			w, ok := v.Value.(*commonpb.AnyValue_KvlistValue)
			if !ok || w.KvlistValue == nil {
				w = &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{}}
			}
			if e := d.keyValueList(w.KvlistValue, a, z, lv+1); e != nil {
				return e.in("kvlist_value")
			}
			v.Value, p = w, z
		case 7<<3 | wtLen:
			a, z, e := d.lenPrefix(q, end)
			if e != nil {
				return e.in("bytes_value")
			}
			// A oneof member is set even when empty: non-nil, as
			// proto.Unmarshal leaves it.
			v.Value, p = &commonpb.AnyValue_BytesValue{BytesValue: d.b[a:z:z]}, z
		case 8<<3 | wtVarint:
			x, z, e := d.varint(q, end)
			if e != nil {
				return e.in("string_value_strindex")
			}
			v.Value, p = &commonpb.AnyValue_StringValueStrindex{StringValueStrindex: int32(x)}, z
		default:
			if p, e = d.other(tag, p, q, end, anyValueFields); e != nil {
				return e
			}
		}
	}
	return nil
}

// arrayValue decodes an ArrayValue at depth lv.
func (d *decoder) arrayValue(m *commonpb.ArrayValue, p, end, lv int) *DecodeError {
	if lv > maxDepth {
		return d.errf(p, "nesting deeper than %d messages", maxDepth)
	}
	mark := d.avs.mark()
	for p < end {
		tag, q := uint64(d.b[p]), p+1
		var e *DecodeError
		if tag-8 >= 0x80-8 { // not a one-byte tag (field 1 to 15)
			if tag, q, e = d.tagSlow(p, end); e != nil {
				return e
			}
		}
		switch tag {
		case 1<<3 | wtLen:
			i := len(m.Values) + d.avs.count(mark)
			a, z, e := d.lenPrefix(q, end)
			if e != nil {
				return e.at("values", i)
			}
			v := d.avs.new(p, d.n)
			if e := d.anyValue(v, a, z, lv+1, nil); e != nil {
				return e.at("values", i)
			}
			d.avs.push(v)
			p = z
		default:
			if p, e = d.other(tag, p, q, end, valuesFields); e != nil {
				return e
			}
		}
	}
	m.Values = d.avs.finish(mark, m.Values, p, d.n)
	return nil
}

// keyValueList decodes a KeyValueList at depth lv.
func (d *decoder) keyValueList(m *commonpb.KeyValueList, p, end, lv int) *DecodeError {
	if lv > maxDepth {
		return d.errf(p, "nesting deeper than %d messages", maxDepth)
	}
	mark := d.kvs.mark()
	for p < end {
		tag, q := uint64(d.b[p]), p+1
		var e *DecodeError
		if tag-8 >= 0x80-8 { // not a one-byte tag (field 1 to 15)
			if tag, q, e = d.tagSlow(p, end); e != nil {
				return e
			}
		}
		switch tag {
		case 1<<3 | wtLen:
			i := len(m.Values) + d.kvs.count(mark)
			if p, e = d.attribute(q, end, lv+1); e != nil {
				return e.at("values", i)
			}
		default:
			if p, e = d.other(tag, p, q, end, valuesFields); e != nil {
				return e
			}
		}
	}
	m.Values = d.kvs.finish(mark, m.Values, p, d.n)
	return nil
}

// resource decodes a Resource at depth lv.
func (d *decoder) resource(r *resourcepb.Resource, p, end, lv int) *DecodeError {
	kvMark, entMark := d.kvs.mark(), d.ents.mark()
	for p < end {
		tag, q := uint64(d.b[p]), p+1
		var e *DecodeError
		if tag-8 >= 0x80-8 { // not a one-byte tag (field 1 to 15)
			if tag, q, e = d.tagSlow(p, end); e != nil {
				return e
			}
		}
		switch tag {
		case 1<<3 | wtLen:
			i := len(r.Attributes) + d.kvs.count(kvMark)
			if p, e = d.attribute(q, end, lv+1); e != nil {
				return e.at("attributes", i)
			}
		case 2<<3 | wtVarint:
			v, z, e := d.varint(q, end)
			if e != nil {
				return e.in("dropped_attributes_count")
			}
			r.DroppedAttributesCount, p = uint32(v), z
		case 3<<3 | wtLen:
			a, z, e := d.lenPrefix(q, end)
			if e != nil {
				return e.at("entity_refs", len(r.EntityRefs)+d.ents.count(entMark))
			}
			ent := d.ents.new(p, d.n)
			if e := d.entityRef(ent, a, z); e != nil {
				return e.at("entity_refs", len(r.EntityRefs)+d.ents.count(entMark))
			}
			d.ents.push(ent)
			p = z
		default:
			if p, e = d.other(tag, p, q, end, resourceFields); e != nil {
				return e
			}
		}
	}
	r.Attributes = d.kvs.finish(kvMark, r.Attributes, p, d.n)
	r.EntityRefs = d.ents.finish(entMark, r.EntityRefs, p, d.n)
	return nil
}

func (d *decoder) entityRef(m *commonpb.EntityRef, p, end int) *DecodeError {
	for p < end {
		tag, q := uint64(d.b[p]), p+1
		var e *DecodeError
		if tag-8 >= 0x80-8 { // not a one-byte tag (field 1 to 15)
			if tag, q, e = d.tagSlow(p, end); e != nil {
				return e
			}
		}
		switch tag {
		case 1<<3 | wtLen:
			if m.SchemaUrl, p, e = d.str(q, end); e != nil {
				return e.in("schema_url")
			}
		case 2<<3 | wtLen:
			if m.Type, p, e = d.str(q, end); e != nil {
				return e.in("type")
			}
		case 3<<3 | wtLen:
			s, z, e := d.str(q, end)
			if e != nil {
				return e.at("id_keys", len(m.IdKeys))
			}
			m.IdKeys, p = append(m.IdKeys, s), z
		case 4<<3 | wtLen:
			s, z, e := d.str(q, end)
			if e != nil {
				return e.at("description_keys", len(m.DescriptionKeys))
			}
			m.DescriptionKeys, p = append(m.DescriptionKeys, s), z
		default:
			if p, e = d.other(tag, p, q, end, entityRefFields); e != nil {
				return e
			}
		}
	}
	return nil
}

// scope decodes an InstrumentationScope at depth lv.
func (d *decoder) scope(m *commonpb.InstrumentationScope, p, end, lv int) *DecodeError {
	kvMark := d.kvs.mark()
	for p < end {
		tag, q := uint64(d.b[p]), p+1
		var e *DecodeError
		if tag-8 >= 0x80-8 { // not a one-byte tag (field 1 to 15)
			if tag, q, e = d.tagSlow(p, end); e != nil {
				return e
			}
		}
		switch tag {
		case 1<<3 | wtLen:
			if m.Name, p, e = d.str(q, end); e != nil {
				return e.in("name")
			}
		case 2<<3 | wtLen:
			if m.Version, p, e = d.str(q, end); e != nil {
				return e.in("version")
			}
		case 3<<3 | wtLen:
			i := len(m.Attributes) + d.kvs.count(kvMark)
			if p, e = d.attribute(q, end, lv+1); e != nil {
				return e.at("attributes", i)
			}
		case 4<<3 | wtVarint:
			v, z, e := d.varint(q, end)
			if e != nil {
				return e.in("dropped_attributes_count")
			}
			m.DroppedAttributesCount, p = uint32(v), z
		default:
			if p, e = d.other(tag, p, q, end, scopeFields); e != nil {
				return e
			}
		}
	}
	m.Attributes = d.kvs.finish(kvMark, m.Attributes, p, d.n)
	return nil
}
