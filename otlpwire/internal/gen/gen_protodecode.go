package main

import (
	"bytes"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// genProtoDecode writes the protobuf decode: per message its field table,
// decode switch and validator, the decoder's lists and slabs, and the
// record decoders and checks.
func genProtoDecode(s *Schema) ([]File, error) {
	g, err := newProtoDecode(s)
	if err != nil {
		return nil, err
	}
	var files []File
	for _, part := range []struct {
		name string
		fn   func() error
	}{
		{"generated_proto_decode.go", g.decodeFile},
		{"generated_proto_validate.go", g.validateFile},
		{"generated_proto_scan.go", g.scanFile},
	} {
		g.b.Reset()
		if err := part.fn(); err != nil {
			return nil, err
		}
		files = append(files, File{Name: part.name, Src: withImports(g.b.Bytes())})
	}
	return files, nil
}

// protoDecode is the protobuf decode generator's view of the schema.
type protoDecode struct {
	s      *Schema
	b      bytes.Buffer
	cyclic map[*Message]bool // messages that can contain themselves (AnyValue's)
	depth  map[*Message]int  // the nesting depth of the others, the request's being 1
	// The decoder's memory: one list per message type that is a repeated
	// field's element, one slab per type the decoder allocates otherwise.
	lists, slabs []*mem
	listOf       map[*Message]*mem
	slabOf       map[string]*mem
	uses         map[*Message][]*mem // the lists and slabs a message's decode uses itself
	withString   map[*Message]bool   // decoded with storage for its string member (see AllocWith)
	dataTypes    []string            // combined oneof wrapper and message types
}

// mem is a list or slab of the decoder.
type mem struct {
	name, typ string
	list      bool
}

func (m *mem) ref() string {
	if m.list {
		return "d.lists." + m.name
	}
	return "d.slabs." + m.name
}

func newProtoDecode(s *Schema) (*protoDecode, error) {
	g := &protoDecode{s: s, cyclic: map[*Message]bool{}, depth: map[*Message]int{},
		listOf: map[*Message]*mem{}, slabOf: map[string]*mem{}, uses: map[*Message][]*mem{}, withString: map[*Message]bool{}}
	for _, m := range s.Messages {
		if reaches(m, m, map[*Message]bool{}) {
			g.cyclic[m] = true
		}
	}
	for _, m := range s.Messages {
		if isRequest(m) {
			if err := g.setDepth(m, 1); err != nil {
				return nil, err
			}
		}
	}
	for _, m := range s.Messages {
		if err := g.checkHandled(m); err != nil {
			return nil, err
		}
		if err := g.memory(m); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// isRequest: an export request, the root of a signal's messages.
func isRequest(m *Message) bool { return strings.HasPrefix(m.Pkg.Alias, "col") }

func reaches(from, to *Message, seen map[*Message]bool) bool {
	for _, f := range from.Fields {
		if f.Message == nil || seen[f.Message] {
			continue
		}
		if f.Message == to {
			return true
		}
		seen[f.Message] = true
		if reaches(f.Message, to, seen) {
			return true
		}
	}
	return false
}

// setDepth gives each message outside a cycle its one nesting depth: the
// decode of a message at a fixed depth passes its children theirs as
// constants, and only the messages of a cycle carry and check it.
func (g *protoDecode) setDepth(m *Message, lv int) error {
	if g.cyclic[m] {
		return nil
	}
	if d, ok := g.depth[m]; ok {
		if d != lv {
			return fmt.Errorf("message %s is at depth %d and %d: the decoder needs one", m.FullName, d, lv)
		}
		return nil
	}
	g.depth[m] = lv
	for _, f := range m.Fields {
		if f.Message != nil && f.Choice.Skip == "" {
			if err := g.setDepth(f.Message, lv+1); err != nil {
				return err
			}
		}
	}
	if m.Choice.Record && lv > 4 {
		return fmt.Errorf("record message %s at depth %d: SpanDecoder's depths assume 4", m.FullName, lv)
	}
	return nil
}

// checkHandled refuses a message the decoder cannot decode field by field
// as the rules below do, naming the field: a new field of a new kind
// needs a rule here, not silence.
func (g *protoDecode) checkHandled(m *Message) error {
	records := 0
	for _, f := range m.Fields {
		if f.Choice.Skip != "" {
			continue
		}
		if f.Number > 15 && f.Number >= 1<<11 {
			return fmt.Errorf("field %s: numbers of more than two tag bytes are not supported", f.FullName())
		}
		switch {
		case f.Message != nil && f.Message.Choice.Record:
			records++
			if !f.Repeated || records > 1 || m.Choice.Pipeline == "" {
				return fmt.Errorf("field %s: records are one repeated field of a pipeline type", f.FullName())
			}
		case f.Message != nil:
		case f.Repeated && f.Kind != protoreflect.StringKind:
			if _, ok := packedReaders[f.Kind]; !ok {
				return fmt.Errorf("field %s: repeated %s is not supported", f.FullName(), f.Kind)
			}
		default:
			if _, ok := scalarRead(f); !ok {
				return fmt.Errorf("field %s: kind %s is not supported", f.FullName(), f.Kind)
			}
			if f.Optional && f.Kind != protoreflect.DoubleKind {
				return fmt.Errorf("field %s: optional %s is not supported", f.FullName(), f.Kind)
			}
		}
	}
	if isRequest(m) && (len(m.Fields) != 1 || !m.Fields[0].Repeated || m.Fields[0].Message == nil) {
		return fmt.Errorf("request %s: one repeated message field expected", m.FullName)
	}
	return nil
}

// memory registers the lists and slabs m's decode uses.
func (g *protoDecode) memory(m *Message) error {
	use := func(x *mem) { g.uses[m] = append(g.uses[m], x) }
	slab := func(name, typ string) *mem {
		x := g.slabOf[name]
		if x == nil {
			x = &mem{name: name, typ: typ}
			g.slabOf[name] = x
			g.slabs = append(g.slabs, x)
		}
		use(x)
		return x
	}
	listsHere := map[*mem]*Field{}
	for _, f := range m.Fields {
		if f.Choice.Skip != "" {
			continue
		}
		sub := f.Message
		switch {
		case sub != nil && sub.Choice.Record:
		case sub != nil && f.Repeated:
			x := g.listOf[sub]
			if x == nil {
				x = &mem{name: sub.Stem(), typ: sub.Type(), list: true}
				g.listOf[sub] = x
				g.lists = append(g.lists, x)
			}
			if other := listsHere[x]; other != nil {
				return fmt.Errorf("fields %s and %s of one message share the list of %s", other.FullName(), f.FullName(), sub.FullName)
			}
			listsHere[x] = f
			use(x)
			if a := sub.Choice.AllocWith; a != "" {
				v := sub.Field("value")
				if v == nil || v.Message == nil || v.Repeated || v.Oneof != nil || stringMember(v.Message) == nil {
					return fmt.Errorf("message %s: AllocWith needs a singular message field value with a string member", sub.FullName)
				}
				g.withString[v.Message] = true
				slab(a, a)
			}
		case sub != nil && f.Oneof != nil:
			if !f.Choice.New && !sub.Choice.New {
				name := m.Stem() + f.GoName
				if g.slabOf[name] == nil {
					g.dataTypes = append(g.dataTypes, fmt.Sprintf("%sData struct {\n w %s\n m %s\n}", name, f.WrapperGoType(), sub.GoType()))
				}
				slab(name, name+"Data")
			}
		case sub != nil:
			if m.Choice.AllocWith == "" && !f.Choice.New && !sub.Choice.New {
				slab(sub.Stem(), sub.GoType())
			}
		case f.Oneof != nil:
			if !f.Choice.New {
				slab(m.Stem()+f.GoName, f.WrapperGoType())
			}
		case f.Repeated && f.Kind != protoreflect.StringKind:
			r := packedReaders[f.Kind]
			slab(r.slab, r.elem)
		case f.Optional:
			slab("optionalDouble", "float64")
		}
	}
	return nil
}

// stringMember is m's oneof member of kind string, if any.
func stringMember(m *Message) *Field {
	for _, f := range m.Fields {
		if f.Oneof != nil && f.Kind == protoreflect.StringKind {
			return f
		}
	}
	return nil
}

// scalar is how the decoder reads a scalar kind: the wire type, the
// primitive, and the conversion of its result v to the field's Go type
// ("" when the primitive returns it).
type scalar struct {
	wt, read, conv string
}

func scalarRead(f *Field) (scalar, bool) {
	switch f.Kind {
	case protoreflect.StringKind:
		return scalar{"wtLen", "d.str(q, end)", ""}, true
	case protoreflect.BytesKind:
		if f.Choice.IDSize != "" {
			return scalar{"wtLen", "d.id(q, end, " + f.Choice.IDSize + ")", ""}, true
		}
		return scalar{"wtLen", "", ""}, true // read as bytes, below
	case protoreflect.EnumKind:
		return scalar{"wtVarint", "d.varint(q, end)", f.Enum + "(int32(v))"}, true
	case protoreflect.BoolKind:
		return scalar{"wtVarint", "d.varint(q, end)", "v != 0"}, true
	case protoreflect.Int32Kind:
		return scalar{"wtVarint", "d.varint(q, end)", "int32(v)"}, true
	case protoreflect.Int64Kind:
		return scalar{"wtVarint", "d.varint(q, end)", "int64(v)"}, true
	case protoreflect.Uint32Kind:
		return scalar{"wtVarint", "d.varint(q, end)", "uint32(v)"}, true
	case protoreflect.Uint64Kind:
		return scalar{"wtVarint", "d.varint(q, end)", "v"}, true
	case protoreflect.Sint32Kind:
		return scalar{"wtVarint", "d.varint(q, end)", "sint32(v)"}, true
	case protoreflect.Fixed64Kind:
		return scalar{"wtI64", "d.fixed64(q, end)", ""}, true
	case protoreflect.Sfixed64Kind:
		return scalar{"wtI64", "d.fixed64(q, end)", "int64(v)"}, true
	case protoreflect.DoubleKind:
		return scalar{"wtI64", "d.fixed64(q, end)", "math.Float64frombits(v)"}, true
	case protoreflect.Fixed32Kind:
		return scalar{"wtI32", "d.fixed32(q, end)", ""}, true
	case protoreflect.Sfixed32Kind:
		return scalar{"wtI32", "d.fixed32(q, end)", "int32(v)"}, true
	}
	return scalar{}, false
}

// packed is a repeated scalar kind: the call of its packed reader (%s is
// the list appended to), the slab its elements come from, and how one
// unpacked element is read.
type packed struct {
	call, slab, elem string
	one              scalar
}

var packedReaders = map[protoreflect.Kind]packed{
	protoreflect.Fixed64Kind: {`packed8(d, &d.slabs.packedUint64, "fixed64", %s, q, end)`, "packedUint64", "uint64", scalar{"wtI64", "d.fixed64(q, end)", "v"}},
	protoreflect.Uint64Kind:  {"d.packedVarint(%s, q, end)", "packedUint64", "uint64", scalar{"wtVarint", "d.varint(q, end)", "v"}},
	protoreflect.DoubleKind:  {`packed8(d, &d.slabs.packedDouble, "double", %s, q, end)`, "packedDouble", "float64", scalar{"wtI64", "d.fixed64(q, end)", "math.Float64frombits(v)"}},
}

func (g *protoDecode) p(format string, args ...any) { fmt.Fprintf(&g.b, format, args...) }

// decodeFile writes the field tables, the decoder's memory and the decode
// of every message.
func (g *protoDecode) decodeFile() error {
	g.p("package otlpwire\n\n")
	g.p("// The protobuf decode of each OTLP message: see proto_decode.go for the\n// rules, and internal/gen for where this comes from.\n\n")
	if err := fieldTables(&g.b, g.s); err != nil {
		return err
	}
	g.memoryTypes()
	for _, m := range g.s.Messages {
		if isRequest(m) {
			g.request(m)
		} else {
			g.message(m)
		}
	}
	g.records()
	return nil
}

// fieldTables writes each message's field table: its handled fields' names
// by number, for errors (a known field with an unexpected wire type) and
// the schema test. Messages sharing a table must have the same fields.
func fieldTables(b *bytes.Buffer, s *Schema) error {
	tables, owner := map[string]string{}, map[string]*Message{}
	for _, m := range s.Messages {
		v := m.Choice.FieldsVar
		if v == "" {
			return fmt.Errorf("message %s: no FieldsVar in the choices", m.FullName)
		}
		var parts []string
		for _, f := range m.Fields {
			if f.Choice.Skip == "" {
				parts = append(parts, strconv.Itoa(f.Number)+": "+strconv.Quote(f.Name))
			}
		}
		table := "[]string{" + strings.Join(parts, ", ") + "}"
		if prev, ok := tables[v]; ok {
			if prev != table {
				return fmt.Errorf("messages %s and %s share %s but not their fields", owner[v].FullName, m.FullName, v)
			}
			continue
		}
		tables[v], owner[v] = table, m
		fmt.Fprintf(b, "// %s is %s's field names by number.\nvar %s = %s\n\n", v, m.GoName, v, table)
	}
	return nil
}

// memoryTypes writes the decoder's lists and slabs and what keeps, rewinds
// and forgets them.
func (g *protoDecode) memoryTypes() {
	for _, m := range g.s.Messages {
		if a := m.Choice.AllocWith; a != "" {
			v := m.Field("value")
			g.p("// %s is a %s allocated together with its %s and that value's %s member.\n", a, m.GoName, v.Name, stringMember(v.Message).Name)
			g.p("type %s struct {\n m %s\n value %s\n str %s\n}\n\n", a, m.GoType(), v.Message.GoType(), stringMember(v.Message).WrapperGoType())
		}
	}
	if len(g.dataTypes) > 0 {
		g.p("// A oneof's message member: its wrapper and its message allocated together.\ntype (\n")
		for _, t := range g.dataTypes {
			g.p("%s\n", t)
		}
		g.p(")\n\n")
	}
	g.p("// decoderLists holds a list per message type that is a repeated field's element.\ntype decoderLists struct {\n")
	for _, x := range g.lists {
		g.p("%s list[%s]\n", x.name, x.typ)
	}
	g.p("}\n\n// decoderSlabs holds a slab per type the decoder allocates otherwise.\ntype decoderSlabs struct {\n")
	for _, x := range g.slabs {
		g.p("%s slab[%s]\n", x.name, x.typ)
	}
	g.p("}\n\n")
	g.p("// decoderItems holds a scratch decoder's record message, one per record type.\ntype decoderItems struct {\n")
	for _, m := range g.recordMessages() {
		g.p("%s *%s\n", m.Stem(), m.GoType())
	}
	g.p("}\n\n")
	g.p("// keepStacks returns lists holding only l's stacks, emptied (clearStack).\nfunc (l *decoderLists) keepStacks() (keep decoderLists) {\n")
	for _, x := range g.lists {
		g.p("keep.%s.stack = clearStack(l.%s.stack)\n", x.name, x.name)
	}
	g.p("return keep\n}\n\n")
	lists, slabs := g.recordMemory()
	g.p("// rewindItem makes every list and slab a record's decode uses hand out its\n// chunk again: nothing decoded into them is in use any more.\nfunc (d *decoder) rewindItem() {\n")
	for _, x := range lists {
		g.p("%s.rewind()\n", x.ref())
	}
	for _, x := range slabs {
		g.p("%s.rewind()\n", x.ref())
	}
	g.p("}\n\n")
	g.p("// forget drops a scratch decoder's references to the last record decoded\n// and the bytes it aliases.\nfunc (d *decoder) forget() {\nd.rewindItem()\n")
	for _, x := range lists {
		g.p("clear(%s.stack[:cap(%s.stack)])\n", x.ref(), x.ref())
	}
	for _, m := range g.recordMessages() {
		g.p("if d.items.%s != nil {\n*d.items.%s = %s{}\n}\n", m.Stem(), m.Stem(), m.GoType())
	}
	g.p("d.b, d.s = nil, \"\"\n}\n\n")
}

func (g *protoDecode) recordMessages() []*Message {
	var out []*Message
	for _, m := range g.s.Messages {
		if m.Choice.Record {
			out = append(out, m)
		}
	}
	return out
}

// recordMemory is the lists and slabs the decode of a record and what it
// contains uses, in declaration order.
func (g *protoDecode) recordMemory() (lists, slabs []*mem) {
	used := map[*mem]bool{}
	seen := map[*Message]bool{}
	var walk func(m *Message)
	walk = func(m *Message) {
		if seen[m] {
			return
		}
		seen[m] = true
		for _, x := range g.uses[m] {
			used[x] = true
		}
		for _, f := range m.Fields {
			if f.Message != nil && f.Choice.Skip == "" {
				walk(f.Message)
			}
		}
	}
	for _, m := range g.recordMessages() {
		walk(m)
	}
	for _, x := range g.lists {
		if used[x] {
			lists = append(lists, x)
		}
	}
	for _, x := range g.slabs {
		if used[x] {
			slabs = append(slabs, x)
		}
	}
	return lists, slabs
}

// lvArg is the depth argument of a call decoding a field of m whose
// message is sub: none outside a cycle.
func (g *protoDecode) lvArg(m, sub *Message) string {
	if !g.cyclic[sub] {
		return ""
	}
	if g.cyclic[m] {
		return ", lv+1"
	}
	return ", " + strconv.Itoa(g.depth[m]+1)
}

// svArg is the string member storage argument of a call decoding sub.
func (g *protoDecode) svArg(sub *Message, sv string) string {
	if !g.withString[sub] {
		return ""
	}
	return ", " + sv
}

// request writes a request's decode: the whole body, returning its one
// repeated field's elements.
func (g *protoDecode) request(m *Message) {
	f := m.Fields[0]
	x := g.listOf[f.Message]
	g.p("// %s decodes the body as an %s.\n", m.Stem(), m.GoName)
	g.p("func (d *decoder) %s() ([]*%s, *DecodeError) {\n", m.Stem(), f.Message.Type())
	if g.hasRecords(m) {
		g.p(`// The records, nearly all of the body, are not decoded into d's
	// slabs: extrapolating the few messages above them over the whole body
	// would size chunks for thousands. n = 0 turns the extrapolation off;
	// chunks then grow with use.
	d.n = 0
`)
	}
	g.p("mark := %s.mark()\n", x.ref())
	g.p("p, end := 0, len(d.b)\n")
	g.loop(m, "nil, ", func() {
		g.p("case %d<<3 | wtLen:\n", f.Number)
		g.p("i := %s.count(mark)\n", x.ref())
		g.element(m, f, "i", "nil, ")
	})
	g.p("return %s.finish(mark, nil, p, d.n), nil\n}\n\n", x.ref())
}

func (g *protoDecode) hasRecords(m *Message) bool {
	for _, f := range m.Fields {
		if f.Message != nil && !g.cyclic[f.Message] && (f.Message.Choice.Record || g.hasRecords(f.Message)) {
			return true
		}
	}
	return false
}

// loop writes a message's field loop: the tag, the cases cases writes, and
// the unknown fields. ret prefixes the error in a return.
func (g *protoDecode) loop(m *Message, ret string, cases func()) {
	g.p(`for p < end {
	tag, q := uint64(d.b[p]), p+1
	var e *DecodeError
	if tag-8 >= 0x80-8 { // not a one-byte tag (field 1 to 15)
		if tag, q, e = d.tagSlow(p, end); e != nil {
			return %se
		}
	}
	switch tag {
`, ret)
	cases()
	g.p(`default:
	if p, e = d.other(tag, p, q, end, %s); e != nil {
		return %se
	}
}
}
`, m.Choice.FieldsVar, ret)
}

// element writes the decode of one element of the repeated message field f
// of m, whose index is i, pushed on its list.
func (g *protoDecode) element(m *Message, f *Field, i, ret string) {
	sub, x := f.Message, g.listOf[f.Message]
	g.p("a, z, e := d.lenPrefix(q, end)\nif e != nil {\nreturn %se.at(%q, %s)\n}\n", ret, f.Name, i)
	if a := sub.Choice.AllocWith; a != "" {
		g.p("x := d.slabs.%s.one(p, d.n)\n", a)
		g.p("if e := d.%s(x, a, z%s); e != nil {\nreturn %se.at(%q, %s)\n}\n", sub.Stem(), g.lvArg(m, sub), ret, f.Name, i)
		g.p("%s.push(&x.m)\n", x.ref())
	} else {
		g.p("x := %s.new(p, d.n)\n", x.ref())
		g.p("if e := d.%s(x, a, z%s%s); e != nil {\nreturn %se.at(%q, %s)\n}\n", sub.Stem(), g.lvArg(m, sub), g.svArg(sub, "nil"), ret, f.Name, i)
		g.p("%s.push(x)\n", x.ref())
	}
	g.p("p = z\n")
}

// message writes the decode of m.
func (g *protoDecode) message(m *Message) {
	recv := "m *" + m.Type()
	if m.Choice.AllocWith != "" {
		recv = "x *" + m.Choice.AllocWith
	}
	params := "p, end int"
	depth := ""
	if g.cyclic[m] {
		params = "p, end, lv int"
		depth = " at depth lv"
	}
	if g.withString[m] {
		params += ", sv *" + stringMember(m).WrapperGoType()
	}
	g.p("// %s decodes a%s %s%s.\n", m.Stem(), an(m.GoName), m.GoName, depth)
	if g.withString[m] {
		g.p("// Its %s member goes into sv if not nil: storage that belongs to it alone.\n", stringMember(m).Name)
	}
	g.p("func (d *decoder) %s(%s, %s) *DecodeError {\n", m.Stem(), recv, params)
	if g.cyclic[m] {
		g.p("if lv > maxDepth {\nreturn d.errf(p, \"nesting deeper than %%d messages\", maxDepth)\n}\n")
	}
	if m.Choice.AllocWith != "" {
		g.p("m := &x.m\n")
	}
	var marks []*Field
	var record *Field
	for _, f := range m.Fields {
		if f.Message == nil || !f.Repeated || f.Choice.Skip != "" {
			continue
		}
		if f.Message.Choice.Record {
			record = f
			continue
		}
		marks = append(marks, f)
	}
	var names []string
	var refs []string
	for _, f := range marks {
		names = append(names, markName(f))
		refs = append(refs, g.listOf[f.Message].ref()+".mark()")
	}
	if len(marks) > 0 {
		g.p("%s := %s\n", strings.Join(names, ", "), strings.Join(refs, ", "))
	}
	if record != nil {
		g.p("from, n, start, last, contiguous := p, 0, -1, -1, true\n")
	}
	g.loop(m, "", func() {
		for _, f := range m.Fields {
			if f.Choice.Skip == "" {
				g.field(m, f)
			}
		}
	})
	for _, f := range marks {
		g.p("m.%s = %s.finish(%s, m.%s, p, d.n)\n", f.GoField(), g.listOf[f.Message].ref(), markName(f), f.GoField())
	}
	if record != nil {
		g.p(`// The records: [start, last) of the body while they are contiguous, as
// they are from every SDK, else copied together.
switch {
case n == 0:
case contiguous:
	m.%[1]s = d.b[start:last:last]
default:
	m.%[1]s = d.gatherRecords(from, end, %[2]d)
}
`, record.GoField(), record.Number)
	}
	g.p("return nil\n}\n\n")
}

// snake is a Go name in proto's lower_snake_case: "LogRecord" is
// "log_record".
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

func an(s string) string {
	if strings.ContainsRune("AEIOU", rune(s[0])) {
		return "n"
	}
	return ""
}

func markName(f *Field) string { return strings.ToLower(f.GoName[:1]) + f.GoName[1:] + "Mark" }

// field writes the case (or cases) of field f of m.
func (g *protoDecode) field(m *Message, f *Field) {
	sub := f.Message
	target := "m." + f.GoField()
	switch {
	case sub != nil && sub.Choice.Record:
		g.p("case %d<<3 | wtLen:\n", f.Number)
		g.p("a, z, e := d.lenPrefix(q, end)\nif e != nil {\nreturn e.at(%q, n)\n}\n", f.Name)
		g.p("if e := d.check%s(a, z); e != nil {\nreturn e.at(%q, n)\n}\n", sub.GoName, f.Name)
		g.p(`n++
if start < 0 {
	start = p
} else if p != last {
	contiguous = false
}
p, last = z, z
`)
	case sub != nil && f.Repeated:
		g.p("case %d<<3 | wtLen:\n", f.Number)
		g.p("i := len(%s) + %s.count(%s)\n", target, g.listOf[sub].ref(), markName(f))
		g.element(m, f, "i", "")
	case sub != nil && f.Oneof != nil:
		g.p("case %d<<3 | wtLen:\n", f.Number)
		g.p("a, z, e := d.lenPrefix(q, end)\nif e != nil {\nreturn e.in(%q)\n}\n", f.Name)
		g.p("w, ok := m.%s.(*%s)\nif !ok || w.%s == nil {\n", f.Oneof.GoName, f.WrapperGoType(), f.GoName)
		if f.Choice.New || sub.Choice.New {
			g.p("w = &%s{%s: &%s{}}\n", f.WrapperGoType(), f.GoName, sub.GoType())
		} else {
			g.p("x := d.slabs.%s%s.one(p, d.n)\nx.w.%s = &x.m\nw = &x.w\n", m.Stem(), f.GoName, f.GoName)
		}
		g.p("}\n")
		g.p("if e := d.%s(w.%s, a, z%s%s); e != nil {\nreturn e.in(%q)\n}\n", sub.Stem(), f.GoName, g.lvArg(m, sub), g.svArg(sub, "nil"), f.Name)
		g.p("m.%s, p = w, z\n", f.Oneof.GoName)
	case sub != nil:
		g.p("case %d<<3 | wtLen:\n", f.Number)
		g.p("a, z, e := d.lenPrefix(q, end)\nif e != nil {\nreturn e.in(%q)\n}\n", f.Name)
		sv := "nil"
		switch {
		case m.Choice.AllocWith != "":
			g.p("%s = &x.value // merges into the value already there, if any\n", target)
			sv = "&x.str"
		case f.Choice.New || sub.Choice.New:
			g.p("if %s == nil {\n%s = new(%s)\n}\n", target, target, sub.GoType())
		default:
			g.p("if %s == nil {\n%s = d.slabs.%s.one(p, d.n)\n}\n", target, target, sub.Stem())
		}
		g.p("if e := d.%s(%s, a, z%s%s); e != nil {\nreturn e.in(%q)\n}\n", sub.Stem(), target, g.lvArg(m, sub), g.svArg(sub, sv), f.Name)
		g.p("p = z\n")
	case f.Oneof != nil:
		sc, _ := scalarRead(f)
		g.p("case %d<<3 | %s:\n", f.Number, sc.wt)
		v := "v"
		switch {
		case f.Kind == protoreflect.BytesKind && sc.read == "":
			g.p("a, z, e := d.lenPrefix(q, end)\n")
			v = "d.b[a:z:z]"
		case f.Kind == protoreflect.StringKind || f.Kind == protoreflect.BytesKind:
			g.p("s, z, e := %s\n", sc.read)
			v = "s"
		default:
			g.p("v, z, e := %s\n", sc.read)
			if sc.conv != "" {
				v = sc.conv
			}
		}
		g.p("if e != nil {\nreturn e.in(%q)\n}\n", f.Name)
		switch {
		case f.Choice.New:
			if f.Kind == protoreflect.BytesKind {
				g.p("// A oneof member is set even when empty: non-nil, as\n// proto.Unmarshal leaves it.\n")
			}
			g.p("m.%s, p = &%s{%s: %s}, z\n", f.Oneof.GoName, f.WrapperGoType(), f.GoName, v)
		case g.withString[m] && f == stringMember(m):
			g.p("w := sv\nif w == nil {\nw = d.slabs.%s%s.one(p, d.n)\n}\n", m.Stem(), f.GoName)
			g.p("w.%s = %s\nm.%s, p = w, z\n", f.GoName, v, f.Oneof.GoName)
		default:
			g.p("w := d.slabs.%s%s.one(p, d.n)\n", m.Stem(), f.GoName)
			g.p("w.%s = %s\nm.%s, p = w, z\n", f.GoName, v, f.Oneof.GoName)
		}
	case f.Repeated && f.Kind == protoreflect.StringKind:
		g.p("case %d<<3 | wtLen:\n", f.Number)
		g.p("s, z, e := d.str(q, end)\nif e != nil {\nreturn e.at(%q, len(%s))\n}\n", f.Name, target)
		g.p("%s, p = append(%s, s), z\n", target, target)
	case f.Repeated:
		r := packedReaders[f.Kind]
		g.p("case %d<<3 | wtLen:\n", f.Number)
		g.p("if %s, p, e = %s; e != nil {\nreturn e.in(%q)\n}\n", target, fmt.Sprintf(r.call, target), f.Name)
		g.p("case %d<<3 | %s:\n", f.Number, r.one.wt)
		g.p("v, z, e := %s\nif e != nil {\nreturn e.in(%q)\n}\n", r.one.read, f.Name)
		g.p("%s, p = append(%s, %s), z\n", target, target, r.one.conv)
	case f.Optional:
		sc, _ := scalarRead(f)
		g.p("case %d<<3 | %s:\n", f.Number, sc.wt)
		g.p("v, z, e := %s\nif e != nil {\nreturn e.in(%q)\n}\n", sc.read, f.Name)
		g.p("x := d.slabs.optionalDouble.one(p, d.n)\n*x = %s\n%s, p = x, z\n", sc.conv, target)
	default:
		sc, _ := scalarRead(f)
		g.p("case %d<<3 | %s:\n", f.Number, sc.wt)
		switch {
		case sc.read == "":
			g.p("a, z, e := d.lenPrefix(q, end)\nif e != nil {\nreturn e.in(%q)\n}\n", f.Name)
			g.p("%s, p = d.b[a:z:z], z\n", target)
		case sc.conv == "":
			g.p("if %s, p, e = %s; e != nil {\nreturn e.in(%q)\n}\n", target, sc.read, f.Name)
		default:
			g.p("v, z, e := %s\nif e != nil {\nreturn e.in(%q)\n}\n", sc.read, f.Name)
			g.p("%s, p = %s, z\n", target, sc.conv)
		}
	}
}

// records writes, per record message, its check (the validator, else a
// decode into scratch that names the error) and its scratch message.
func (g *protoDecode) records() {
	for _, m := range g.recordMessages() {
		g.p(`// %[1]sDecoder decodes %[1]s records one at a time into a %[1]s it reuses,
// so encoding received records allocates nothing per record. The zero
// value is ready to use; it is not safe for concurrent use.
type %[1]sDecoder struct {
	d decoder
}

// Decode decodes one %[1]s record's payload (as pipeline.Records.All
// yields it). The %[1]s and everything it refers to are valid until the
// next Decode and alias rec: read them, never keep or change them. What
// the receivers' decoder checked it does not check again (see trusted).
func (r *%[1]sDecoder) Decode(rec []byte) (*%[3]s, error) {
	d := r.d.trusted(rec)
	m := d.%[2]s0()
	if e := d.%[2]s(m, 0, len(rec)); e != nil {
		return nil, e.in(%[4]q).done()
	}
	return m, nil
}

// Reset drops every reference to the last %[1]s decoded (and the bytes it
// aliases), keeping the scratch storage: for a pooled %[1]sDecoder.
func (r *%[1]sDecoder) Reset() { r.d.forget() }

`, m.GoName, m.Stem(), m.GoType(), snake(m.GoName))
		g.p(`// check%[1]s checks the %[1]s record in [a, z) of d.b: valid%[1]s, or when
// that says no, decoding it into the scratch decoder's %[1]s, which names
// the error.
func (d *decoder) check%[1]s(a, z int) *DecodeError {
	if d.valid%[1]s(a, z) {
		return nil
	}
	sd := d.scratchDecoder()
	return sd.%[2]s(sd.%[2]s0(), a, z)
}

// %[2]s0 returns the scratch decoder's %[1]s, zeroed.
func (d *decoder) %[2]s0() *%[3]s {
	if d.items.%[2]s == nil {
		d.items.%[2]s = new(%[3]s)
	} else {
		*d.items.%[2]s = %[3]s{}
	}
	return d.items.%[2]s
}

`, m.GoName, m.Stem(), m.GoType())
	}
}

// withImports adds the imports src uses (by their aliases) after its
// package clause.
func withImports(src []byte) []byte {
	known := []struct{ alias, path string }{
		{"binary", "encoding/binary"},
		{"fmt", "fmt"},
		{"math", "math"},
		{"pipeline", "github.com/otelstep/otelstep/pipeline"},
		{"protowire", "google.golang.org/protobuf/encoding/protowire"},
		{"collogspb", "go.opentelemetry.io/proto/otlp/collector/logs/v1"},
		{"colmetricspb", "go.opentelemetry.io/proto/otlp/collector/metrics/v1"},
		{"coltracepb", "go.opentelemetry.io/proto/otlp/collector/trace/v1"},
		{"commonpb", "go.opentelemetry.io/proto/otlp/common/v1"},
		{"logspb", "go.opentelemetry.io/proto/otlp/logs/v1"},
		{"metricspb", "go.opentelemetry.io/proto/otlp/metrics/v1"},
		{"resourcepb", "go.opentelemetry.io/proto/otlp/resource/v1"},
		{"tracepb", "go.opentelemetry.io/proto/otlp/trace/v1"},
	}
	pkgLine, body, _ := bytes.Cut(src, []byte("\n"))
	var code bytes.Buffer // body without its comment lines
	for _, line := range bytes.Split(body, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("//")) {
			code.Write(line)
			code.WriteByte('\n')
		}
	}
	var lines []string
	for _, k := range known {
		// The alias as a whole word: "tracepb." is inside "coltracepb.".
		if regexp.MustCompile(`\b` + k.alias + `\.`).Match(code.Bytes()) {
			if path.Base(k.path) == k.alias {
				lines = append(lines, strconv.Quote(k.path))
			} else {
				lines = append(lines, fmt.Sprintf("%s %q", k.alias, k.path))
			}
		}
	}
	sort.Strings(lines)
	var out bytes.Buffer
	out.Write(pkgLine)
	out.WriteString("\n\n")
	if len(lines) > 0 {
		out.WriteString("import (\n" + strings.Join(lines, "\n") + "\n)\n")
	}
	out.Write(body)
	return out.Bytes()
}
