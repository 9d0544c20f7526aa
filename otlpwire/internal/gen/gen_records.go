package main

import (
	"fmt"
	"sort"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// The records writers (generated_json_records.go): OTLP/JSON straight from
// the wire record of an item kept as received (pipeline.Records), for the
// list fields with an encodeChoice.Records; fieldItems calls the item's
// writer (encodeChoice.Direct). There is one writer per message under the
// item, built from the encoders' view of it (encMsg): the fields it reads
// are every field the JSON writer writes, and it writes them in the JSON
// writer's order (encMsg.decl) with the same scalar fields (jsonScalar)
// and oneof values (jsonOneofValue), so the two cannot disagree on a field
// or its place.
//
// A writer reads the record's fields once into locals (the last of a
// scalar field wins, as in proto.Unmarshal; a repeated message field is
// the run from its first element to the end of its last), then writes
// them. It reports !ok for what it leaves to decoding: a singular message
// field or a oneof met twice (decoding merges them or keeps the last), a
// known field of another wire type, malformed bytes, nesting deeper than
// maxRecordDepth. Unknown fields are skipped, as decoding skips them.

// recordChoice is what only the records writers make of a message.
type recordChoice struct {
	// Quick: the writer first tries the message's common shape by
	// position: its first field a non-empty string, then its message
	// field holding one scalar member of that message's oneof and nothing
	// else, every tag and length one byte (KeyValue: an attribute of a
	// short key and value). Reading the fields generically was most of the
	// cost of a span's attributes.
	Quick bool
}

// recordChoices is keyed by the message's full name.
var recordChoices = map[protoreflect.FullName]recordChoice{
	common + "KeyValue": {Quick: true},
}

type recGen struct {
	*encGen
	roots  map[*encMsg]bool
	order  []*encMsg        // the messages written: the items, then what is under them
	lists  map[*encMsg]bool // the elements of repeated fields: a list writer each
	cyclic map[*encMsg]bool // can contain itself: its writer checks the depth
}

func genRecords(s *Schema) ([]File, error) {
	g := &recGen{encGen: &encGen{s: s, msgs: map[*Message]*encMsg{}}}
	if err := g.load(encodeChoices); err != nil {
		return nil, err
	}
	src, err := g.file(recordChoices)
	if err != nil {
		return nil, err
	}
	return []File{{Name: "generated_json_records.go", Src: src}}, nil
}

// recordFunc is the name of the records writer of m; recordListFunc of its
// list writer.
func recordFunc(m *encMsg) string     { return "append" + m.name + "Record" }
func recordListFunc(m *encMsg) string { return "append" + m.name + "Records" }

// file writes the records writers of the items and of the messages under
// them, failing on a field or choice they cannot honour.
func (g *recGen) file(choices map[protoreflect.FullName]recordChoice) ([]byte, error) {
	g.roots, g.lists, g.cyclic = map[*encMsg]bool{}, map[*encMsg]bool{}, map[*encMsg]bool{}
	seen := map[*encMsg]bool{}
	for _, m := range g.s.Messages {
		for _, f := range g.msgs[m].allFields() {
			if f.c.Records == "" {
				continue
			}
			el := g.msgs[f.Message]
			if f.c.Direct != recordFunc(el) {
				return nil, fmt.Errorf("field %s: its records' writer is %s, not %q", f.FullName(), recordFunc(el), f.c.Direct)
			}
			g.roots[el] = true
			g.order = append(g.order, el)
			seen[el] = true
		}
	}
	for i := 0; i < len(g.order); i++ { // breadth first: order grows
		m := g.order[i]
		if reaches(m.Message, m.Message, map[*Message]bool{}) {
			g.cyclic[m] = true
		}
		for _, f := range m.allFields() {
			if err := recCheck(f); err != nil {
				return nil, err
			}
			if f.Message == nil {
				continue
			}
			sub := g.msgs[f.Message]
			if g.roots[sub] {
				return nil, fmt.Errorf("field %s: an item (%s) inside another: its writer has no depth", f.FullName(), sub.FullName)
			}
			if f.Repeated {
				g.lists[sub] = true
			}
			if !seen[sub] {
				seen[sub] = true
				g.order = append(g.order, sub)
			}
		}
	}
	var unknown []string
	for name := range choices {
		if m := g.s.Message(name); m == nil || !seen[g.msgs[m]] {
			unknown = append(unknown, string(name))
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("record choices name messages no records writer writes: %v", unknown)
	}

	g.out.Reset()
	g.p("package otlpwire\n")
	g.p("import (\n%s)\n", "IMPORTS")
	g.p("// The records writers: see json_encode_records.go, and internal/gen for\n// where this comes from.\n")
	for _, m := range g.order {
		if err := g.writer(m, choices[m.FullName]); err != nil {
			return nil, err
		}
	}
	var lists []*encMsg
	for m := range g.lists {
		lists = append(lists, m)
	}
	sort.Slice(lists, func(i, j int) bool { return lists[i].name < lists[j].name })
	for _, m := range lists {
		g.listWriter(m)
	}
	return g.imports(g.out.Bytes()), nil
}

// recCheck fails for a field the records writers cannot write as the JSON
// writer does.
func recCheck(f *encField) error {
	bad := func(why string) error {
		return fmt.Errorf("field %s: %s: no records writer for it", f.FullName(), why)
	}
	c := f.c
	switch {
	case f.Repeated && f.Message == nil:
		return bad("repeated " + f.Kind.String())
	case f.opt:
		return bad("optional " + f.Kind.String())
	case c.Flush || c.PointTime > 0 || c.SkipKeys || c.SharedJSON || c.Records != "" || f.Choice.SharedAttrs:
		return bad(fmt.Sprintf("choices %+v %+v", f.Choice, c))
	}
	return nil
}

// recVar is the field of the writer's local r it reads field f into; a
// singular message's presence is r.has<GoName>. (One struct rather than a
// local per field: the loop over the record would carry a dozen locals in
// registers from one field to the next.)
func recVar(f *encField) string {
	if f.oneof != nil {
		return "r." + f.oneof.GoName
	}
	return "r." + f.GoName
}

// recValue is the value of the scalar field f, read as v (varints and
// fixed values) or into the slice bs (strings and bytes), as the type its
// JSON writer takes: proto.Unmarshal's conversions.
func recValue(f *encField, v, bs string) string {
	switch f.Kind {
	case protoreflect.StringKind, protoreflect.BytesKind:
		return bs
	case protoreflect.BoolKind:
		return v + " != 0"
	case protoreflect.EnumKind, protoreflect.Int32Kind, protoreflect.Sfixed32Kind:
		return "int32(" + v + ")"
	case protoreflect.Sint32Kind:
		return "int32(protowire.DecodeZigZag(" + v + " & math.MaxUint32))"
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return "uint32(" + v + ")"
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return v
	case protoreflect.Int64Kind, protoreflect.Sfixed64Kind:
		return "int64(" + v + ")"
	case protoreflect.Sint64Kind:
		return "protowire.DecodeZigZag(" + v + ")"
	case protoreflect.DoubleKind:
		return "math.Float64frombits(" + v + ")"
	}
	panic("encCheckKind let " + f.Kind.String() + " through")
}

// recOneofValue is recValue for jsonOneofValue, which converts a 64-bit
// signed value itself.
func recOneofValue(f *encField, v, bs string) string {
	if f.Kind == protoreflect.Int64Kind || f.Kind == protoreflect.Sfixed64Kind {
		return v
	}
	return recValue(f, v, bs)
}

// recBits: the scalar field f is read as bits (v), not as a slice.
func recBits(f *encField) bool {
	return f.Message == nil && f.Kind != protoreflect.StringKind && f.Kind != protoreflect.BytesKind
}

// writer writes the records writer of m.
func (g *recGen) writer(m *encMsg, c recordChoice) error {
	name := recordFunc(m)
	if g.roots[m] {
		g.p("// %s writes the OTLP/JSON of the %s record rec, as\n// append%s writes the decoded %[2]s; on !ok b holds a partial\n// object the caller drops.", name, m.GoName, m.name)
		g.p("func %s(b, rec []byte) (_ []byte, ok bool) {", name)
		g.p("const lv = 0")
	} else {
		g.p("func %s(b, rec []byte, lv int) (_ []byte, ok bool) {", name)
	}
	if g.cyclic[m] {
		g.p("if lv > maxRecordDepth {")
		g.p("return b, false")
		g.p("}")
	}
	if c.Quick {
		if err := g.quick(m); err != nil {
			return err
		}
	}

	// r's fields, and which of readField's results the reads use.
	var decls []string
	usesV, usesAZ := false, false
	for i := range m.wire {
		f := &m.wire[i]
		x := f.GoName
		if f.oneof != nil {
			x = f.oneof.GoName
		}
		switch {
		case f.oneof != nil:
			decls = append(decls, x+" protowire.Number // the member met, 0 for none")
			bits, slice := false, false
			for _, mf := range f.fields {
				bits, slice = bits || recBits(mf), slice || !recBits(mf)
			}
			if bits {
				decls = append(decls, x+"V uint64")
				usesV = true
			}
			if slice {
				decls = append(decls, x+"B []byte")
				usesAZ = true
			}
		case f.Message != nil && f.Repeated:
			decls = append(decls, x+" [2]int")
		case f.Message != nil:
			decls = append(decls, x+" []byte", "has"+x+" bool")
			usesAZ = true
		case recBits(f):
			decls = append(decls, x+" uint64")
			usesV = true
		default:
			decls = append(decls, x+" []byte")
			usesAZ = true
		}
	}
	if len(decls) > 0 {
		g.p("var r struct {\n%s\n}", strings.Join(decls, "\n"))
	}
	v, a, z := "_", "_", "_"
	if usesV {
		v = "v"
	}
	if usesAZ {
		a, z = "a", "z"
	}
	g.p("for p := 0; p < len(rec); {")
	g.p("num, typ, %s, %s, %s, next := readField(rec, p)", v, a, z)
	g.p("if next < 0 {")
	g.p("return b, false")
	g.p("}")
	g.p("want := protowire.BytesType")
	g.p("switch num {")
	for i := range m.wire {
		f := &m.wire[i]
		x := recVar(f)
		switch {
		case f.oneof != nil:
			for _, mf := range f.fields {
				g.p("case %d:", mf.Number)
				g.p("if %s != 0 {", x)
				g.p("return b, false // a second member: decoding keeps the last or merges")
				g.p("}")
				if recBits(mf) {
					g.p("%s, %sV, want = %d, v, %s", x, x, mf.Number, wireTypeOf(mf.Kind))
				} else {
					g.p("%s, %sB = %d, rec[a:z]", x, x, mf.Number)
				}
			}
		case f.Message != nil && f.Repeated:
			g.p("case %d:", f.Number)
			g.p("run(&%s, p, next)", x)
		case f.Message != nil:
			g.p("case %d:", f.Number)
			g.p("if r.has%s {", f.GoName)
			g.p("return b, false // repeats merge")
			g.p("}")
			g.p("r.has%s, %s = true, rec[a:z]", f.GoName, x)
		case recBits(f):
			g.p("case %d:", f.Number)
			g.p("%s, want = v, %s", x, wireTypeOf(f.Kind))
		default:
			g.p("case %d:", f.Number)
			g.p("%s = rec[a:z]", x)
		}
	}
	g.p("default:")
	g.p("want = typ")
	g.p("}")
	g.p("if typ != want {")
	g.p("return b, false")
	g.p("}")
	g.p("p = next")
	g.p("}")

	g.p("b = append(b, '{')")
	g.out.Write(g.writeBody(m))
	g.p("return append(b, '}'), true")
	g.p("}\n")
	return nil
}

// writeBody is the code writing m's fields from the locals, in the JSON
// writer's order, keyed as jsonBody keys them.
func (g *recGen) writeBody(m *encMsg) []byte {
	call := func(call string) {
		g.p("if b, ok = %s; !ok {", call)
		g.p("return b, false")
		g.p("}")
	}
	return g.jsonFields(m, func(f *encField, key func(string)) {
		x := recVar(f)
		switch {
		case f.oneof != nil:
			g.p("switch %s {", x)
			for _, mf := range f.fields {
				g.p("case %d:", mf.Number)
				key(mf.JSONName)
				switch {
				case mf.Message != nil:
					call(fmt.Sprintf("%s(b, %sB, lv+1)", recordFunc(g.msgs[mf.Message]), x))
				case recBits(mf):
					g.jsonOneofValue(mf, recOneofValue(mf, x+"V", ""))
				default:
					g.jsonOneofValue(mf, recValue(mf, "", x+"B"))
				}
			}
			g.p("}")
		case f.Message != nil && f.Repeated:
			g.p("if %s[1] > 0 {", x)
			key(f.JSONName)
			call(fmt.Sprintf("%s(b, rec[%s[0]:%[2]s[1]], %d, lv+1)", recordListFunc(g.msgs[f.Message]), x, f.Number))
			g.p("}")
		case f.Message != nil:
			g.p("if r.has%s {", f.GoName)
			key(f.JSONName)
			call(fmt.Sprintf("%s(b, %s, lv+1)", recordFunc(g.msgs[f.Message]), x))
			g.p("}")
		default:
			g.jsonScalar(f, recValue(f, x, x), key)
		}
	})
}

// quick writes m's quick shape (recordChoice.Quick), failing if m does not
// have it.
func (g *recGen) quick(m *encMsg) error {
	bad := func(why string) error { return fmt.Errorf("message %s: quick records shape: %s", m.FullName, why) }
	if len(m.wire) < 2 {
		return bad("fewer than two fields")
	}
	kf, vf := &m.wire[0], &m.wire[1]
	if kf.oneof != nil || kf.Kind != protoreflect.StringKind || kf.Repeated || kf.Number >= 16 {
		return bad("the first field is not a string of a one-byte tag")
	}
	if vf.oneof != nil || vf.Message == nil || vf.Repeated || vf.Number >= 16 {
		return bad("the second field is not a message of a one-byte tag")
	}
	sub := g.msgs[vf.Message]
	if len(sub.wire) != 1 || sub.wire[0].oneof == nil {
		return bad(string(sub.FullName) + " is not one oneof")
	}
	for i := range m.decl {
		if m.decl[i].Number == vf.Number {
			return bad("the JSON writer writes " + vf.Name + " before " + kf.Name)
		}
		if m.decl[i].Number == kf.Number {
			break
		}
	}
	g.p("// The common shape, read by position (recordChoice.Quick).")
	g.p("if n := len(rec); n >= 6 && rec[0] == 0x%02x {", kf.Number<<3|2)
	g.p("if kl := int(rec[1]); kl > 0 && kl < 0x80 && 6+kl <= n && rec[2+kl] == 0x%02x && rec[3+kl] < 0x80 && int(rec[3+kl]) == n-4-kl {", vf.Number<<3|2)
	g.p("k, v := rec[2:2+kl], rec[4+kl:]")
	g.p("switch v[0] {")
	head := func(mf *encField) {
		g.p("b = append(b, `{\"%s\":`...)", kf.JSONName)
		g.p("b = appendString(b, k)")
		g.p("b = append(b, `,\"%s\":{\"%s\":`...)", vf.JSONName, mf.JSONName)
	}
	n := 0
	for _, mf := range sub.wire[0].fields {
		if mf.Message != nil || mf.Number >= 16 {
			continue // left to the generic reads
		}
		n++
		switch wt := wireTypeOf(mf.Kind); wt {
		case "protowire.BytesType":
			g.p("case 0x%02x: // %s", mf.Number<<3|2, mf.Name)
			g.p("if v[1] < 0x80 && int(v[1]) == len(v)-2 {")
			head(mf)
			g.jsonOneofValue(mf, recValue(mf, "", "v[2:]"))
		default:
			consume, typ := "ConsumeVarint", 0
			switch wt {
			case "protowire.Fixed64Type":
				consume, typ = "ConsumeFixed64", 1
			case "protowire.Fixed32Type":
				consume, typ = "ConsumeFixed32", 5
			}
			g.p("case 0x%02x: // %s", mf.Number<<3|typ, mf.Name)
			g.p("if x, l := protowire.%s(v[1:]); l == len(v)-1 {", consume)
			head(mf)
			x := "x"
			if typ == 5 {
				x = "uint64(x)"
			}
			g.jsonOneofValue(mf, recOneofValue(mf, x, ""))
		}
		g.p("return append(b, '}', '}'), true")
		g.p("}")
	}
	if n == 0 {
		return bad(string(sub.FullName) + " has no scalar member of a one-byte tag")
	}
	g.p("}")
	g.p("}")
	g.p("}")
	return nil
}

// listWriter writes the writer of a JSON array of m's records.
func (g *recGen) listWriter(m *encMsg) {
	name := recordListFunc(m)
	g.p("// %s writes a JSON array of the %s records in the fields num of rec.", name, m.GoName)
	g.p("func %s(b, rec []byte, num protowire.Number, lv int) (_ []byte, ok bool) {", name)
	g.p("b = append(b, '[')")
	g.p("n := 0")
	g.p("for p := 0; p < len(rec); {")
	g.p("fnum, typ, _, a, z, next := readField(rec, p)")
	g.p("if next < 0 {")
	g.p("return b, false")
	g.p("}")
	g.p("p = next")
	g.p("if fnum != num {")
	g.p("continue")
	g.p("}")
	g.p("if typ != protowire.BytesType {")
	g.p("return b, false")
	g.p("}")
	g.p("if n > 0 {")
	g.p("b = append(b, ',')")
	g.p("}")
	g.p("n++")
	g.p("if b, ok = %s(b, rec[a:z], lv); !ok {", recordFunc(m))
	g.p("return b, false")
	g.p("}")
	g.p("}")
	g.p("return append(b, ']'), true")
	g.p("}\n")
}
