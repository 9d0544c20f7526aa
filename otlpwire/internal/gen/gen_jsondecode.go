package main

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// genJSONDecode writes the OTLP/JSON decoder's per-message code
// (generated_json_decode.go): for every message, its field index (both
// JSON spellings of each field's name, lowerCamelCase and the proto name,
// to a small field number and the name errors use) and its decode method,
// which fills the generated struct field by field with the hand-written
// primitives (json_scan*.go); and the pools the decoded messages are
// allocated from (json_decode_pool.go).
//
// Every field of the schema is decoded by its kind, unless the choices skip
// it; the generator fails on a field it cannot decode (a kind it does not
// know, a bytes field that is neither an id nor base64, a message with more
// than 32 fields or more than one oneof, the member loop's limits) rather
// than leave it out.
func genJSONDecode(s *Schema) ([]File, error) {
	return genJSONDecodeWith(s, jsonDecodeChoices)
}

// genJSONDecodeWith is genJSONDecode with the JSON decode choices given.
func genJSONDecodeWith(s *Schema, choices map[string]jsonDecodeChoice) ([]File, error) {
	g := &jsonDecodeGen{s: s, imports: map[string]string{}, pools: map[string]string{}}
	if err := g.applyChoices(choices); err != nil {
		return nil, err
	}
	idents := map[string]*Message{}
	for _, m := range s.Messages {
		if prev := idents[ident(m.GoName)]; prev != nil {
			return nil, fmt.Errorf("messages %s and %s would have the same decode method", prev.FullName, m.FullName)
		}
		idents[ident(m.GoName)] = m
		if err := g.message(m); err != nil {
			return nil, fmt.Errorf("message %s: %w", m.FullName, err)
		}
	}
	return []File{{Name: "generated_json_decode.go", Src: g.file()}}, nil
}

// jsonDecodeGen accumulates the generated file.
type jsonDecodeGen struct {
	s        *Schema
	msgs     map[*Message]jsonDecodeChoice
	fields   map[*Field]jsonDecodeChoice
	imports  map[string]string // alias → path
	body     bytes.Buffer      // field indexes and decode methods
	pairs    bytes.Buffer      // the pair types
	pools    map[string]string // pool field → its type
	poolList []string          // pool fields in order of first use
}

// applyChoices resolves the choices' names, failing on one that names
// nothing in the schema or a choice that does not fit what it names.
func (g *jsonDecodeGen) applyChoices(choices map[string]jsonDecodeChoice) error {
	g.msgs, g.fields = map[*Message]jsonDecodeChoice{}, map[*Field]jsonDecodeChoice{}
	fields := map[string]*Field{}
	for _, m := range g.s.Messages {
		for _, f := range m.Fields {
			fields[f.FullName()] = f
		}
	}
	names := make([]string, 0, len(choices))
	for name := range choices {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		c := choices[name]
		if m := g.s.Message(protoreflect.FullName(name)); m != nil {
			if c.Pair || c.Base64 {
				return fmt.Errorf("JSON decode choice %s: Pair and Base64 are for fields, not messages", name)
			}
			if c.Spare != "" {
				if f := m.Field(c.Spare); f == nil || f.Oneof == nil || f.Message != nil {
					return fmt.Errorf("JSON decode choice %s: Spare %s is not a oneof member of scalar type", name, c.Spare)
				}
			}
			g.msgs[m] = c
			continue
		}
		f := fields[name]
		switch {
		case f == nil:
			return fmt.Errorf("JSON decode choice %s names no message or field of the OTLP descriptors", name)
		case c.Quick != "" || c.Spare != "":
			return fmt.Errorf("JSON decode choice %s: Quick and Spare are for messages, not fields", name)
		case c.Pool && (f.Oneof == nil || f.Message != nil):
			return fmt.Errorf("JSON decode choice %s: Pool is for messages and for oneof members of scalar type", name)
		case c.Pair && (f.Oneof == nil || f.Message == nil):
			return fmt.Errorf("JSON decode choice %s: Pair is for oneof members of message type", name)
		case c.Base64 && f.Kind != protoreflect.BytesKind:
			return fmt.Errorf("JSON decode choice %s: Base64 is for bytes fields", name)
		}
		g.fields[f] = c
	}
	return nil
}

// ident is a message's Go type name without underscores ("SpanEvent"),
// the stem of the names generated for it.
func ident(goName string) string { return strings.ReplaceAll(goName, "_", "") }

// spareType is the type of m allocated with its spare wrapper.
func spareType(m *Message) string { return "jsonSpare" + ident(m.GoName) }

// article is name with "a" or "an" before it.
func article(name string) string {
	if strings.ContainsRune("AEIOU", rune(name[0])) {
		return "an " + name
	}
	return "a " + name
}

// decodeMethod is the jsonDecoder method that decodes an object into m.
func decodeMethod(m *Message) string { return "decode" + ident(m.GoName) }

// use records the import of pkg.
func (g *jsonDecodeGen) use(pkg Package) { g.imports[pkg.Alias] = pkg.Path }

// pool returns name, the jsonPools field of type typ, adding it at first
// use.
func (g *jsonDecodeGen) pool(name, typ string) string {
	if prev, ok := g.pools[name]; ok {
		if prev != typ {
			panic(fmt.Sprintf("pool %s holds both %s and %s", name, prev, typ))
		}
		return name
	}
	g.pools[name] = typ
	g.poolList = append(g.poolList, name)
	return name
}

// messagePool is the pool of message m.
func (g *jsonDecodeGen) messagePool(m *Message) string {
	return g.pool("pool"+ident(m.GoName), "pool["+m.GoType()+"]")
}

// message writes m's field constants, index and decode method.
func (g *jsonDecodeGen) message(m *Message) error {
	g.use(m.Pkg)
	if len(m.Oneofs) > 1 {
		return fmt.Errorf("%d oneofs: the member loop checks one", len(m.Oneofs))
	}
	var fields []*Field
	for _, f := range m.Fields {
		if f.Choice.Skip == "" {
			fields = append(fields, f)
		}
	}
	if len(fields) > 32 {
		return fmt.Errorf("%d fields: the member loop tracks 32", len(fields))
	}
	id := ident(m.GoName)
	b := &g.body
	constName := func(f *Field) string { return "json" + id + f.GoName }

	fmt.Fprintf(b, "// Fields of %s, as jsonDecoder.message numbers them.\nconst (\n", m.FullName)
	oneof := []string{}
	for i, f := range fields {
		if i == 0 {
			fmt.Fprintf(b, "%s = iota\n", constName(f))
		} else {
			fmt.Fprintf(b, "%s\n", constName(f))
		}
		if f.Oneof != nil {
			oneof = append(oneof, "1<<"+constName(f))
		}
	}
	oneofMask := "0"
	if len(oneof) > 0 {
		oneofMask = "json" + id + "Oneof"
		fmt.Fprintf(b, "%s = %s\n", oneofMask, strings.Join(oneof, " | "))
	}
	b.WriteString(")\n\n")

	fmt.Fprintf(b, "// json%sIndex maps a member name of %s to its field and the name errors use.\n", id, m.GoName)
	fmt.Fprintf(b, "func json%sIndex(k []byte) (int, string) {\nswitch string(k) {\n", id)
	for _, f := range fields {
		if f.JSONName == f.Name {
			fmt.Fprintf(b, "case %q:\n", f.Name)
		} else {
			fmt.Fprintf(b, "case %q, %q:\n", f.JSONName, f.Name)
		}
		fmt.Fprintf(b, "return %s, %q\n", constName(f), f.JSONName)
	}
	b.WriteString("}\nreturn -1, \"\"\n}\n\n")
	for _, f := range m.Fields {
		if f.Choice.Skip != "" {
			fmt.Fprintf(b, "// %s is skipped like an unknown field: %s\n", f.Name, f.Choice.Skip)
		}
	}

	var cases bytes.Buffer
	for _, f := range fields {
		code, err := g.field(f)
		if err != nil {
			return fmt.Errorf("field %s: %w", f.Name, err)
		}
		fmt.Fprintf(&cases, "case %s:\n%s\n", constName(f), code)
	}
	field := "func(f int) (err error) {\nswitch f {\n" + cases.String() + "}\nreturn err\n}"

	c := g.msgs[m]
	if sf := m.Field(c.Spare); sf != nil {
		pair := spareType(m)
		fmt.Fprintf(&g.pairs, "// %s is %s allocated with the wrapper of its %s, which its decode uses if that is set.\n", pair, article(m.GoName), sf.Name)
		fmt.Fprintf(&g.pairs, "type %s struct {\nmsg %s\nspare %s\n}\n\n", pair, m.GoType(), sf.WrapperGoType())
		fmt.Fprintf(b, "// %s decodes an object as %s into m.\n", decodeMethod(m), article(m.GoName))
		fmt.Fprintf(b, "func (d *jsonDecoder) %s(m *%s) error {\nreturn d.%sSpare(m, nil)\n}\n\n", decodeMethod(m), m.GoType(), decodeMethod(m))
		fmt.Fprintf(b, "// %sSpare decodes an object as %s into m, using spare (if not nil) as the wrapper of a %s.\n", decodeMethod(m), article(m.GoName), sf.Name)
		fmt.Fprintf(b, "func (d *jsonDecoder) %sSpare(m *%s, spare *%s) error {\n", decodeMethod(m), m.GoType(), sf.WrapperGoType())
	} else {
		fmt.Fprintf(b, "// %s decodes an object as %s into m.\n", decodeMethod(m), article(m.GoName))
		fmt.Fprintf(b, "func (d *jsonDecoder) %s(m *%s) error {\n", decodeMethod(m), m.GoType())
	}
	if q := c.Quick; q != "" {
		spare := ""
		if c.Spare != "" {
			spare = "spare, "
		}
		fmt.Fprintf(b, "field := %s\n", field)
		fmt.Fprintf(b, "if done, err := d.%s(m, %sfield); done {\nreturn err\n}\n", q, spare)
		fmt.Fprintf(b, "return d.message(json%sIndex, %s, field)\n}\n\n", id, oneofMask)
	} else {
		fmt.Fprintf(b, "return d.message(json%sIndex, %s, %s)\n}\n\n", id, oneofMask, field)
	}
	return nil
}

// field returns the statements that decode the value of f at d.pos into m,
// setting err.
func (g *jsonDecodeGen) field(f *Field) (string, error) {
	c := g.fields[f]
	target := "m." + f.GoName
	switch {
	case f.Oneof != nil && f.Message != nil:
		sub := f.Message
		g.use(sub.Pkg)
		if c.Pair {
			pair := "jsonPair" + ident(f.Parent.GoName) + f.GoName
			fmt.Fprintf(&g.pairs, "// %s is %s allocated with the oneof wrapper that holds it.\n", pair, article(sub.GoName))
			fmt.Fprintf(&g.pairs, "type %s struct {\noneof %s\nmsg %s\n}\n\n", pair, f.WrapperGoType(), sub.GoType())
			p := g.pool("pool"+ident(f.Parent.GoName)+f.GoName, "pool["+pair+"]")
			return fmt.Sprintf("x := d.%s.new(d)\nx.oneof.%s = &x.msg\nm.%s = &x.oneof\nerr = d.%s(&x.msg)",
				p, f.GoName, f.Oneof.GoName, decodeMethod(sub)), nil
		}
		return fmt.Sprintf("x := %s\nm.%s = &%s{%s: x}\nerr = d.%s(x)",
			g.newMessage(sub), f.Oneof.GoName, f.WrapperGoType(), f.GoName, decodeMethod(sub)), nil
	case f.Oneof != nil:
		alloc := "&" + f.WrapperGoType() + "{}"
		if c.Pool {
			alloc = "d." + g.pool("pool"+ident(f.Parent.GoName)+f.GoName, "pool["+f.WrapperGoType()+"]") + ".new(d)"
		}
		if g.msgs[f.Parent].Spare == f.Name {
			alloc = "spare\nif w == nil {\nw = " + alloc + "\n}"
		}
		read, err := g.scalar(f, "w."+f.GoName)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("w := %s\n%s\nm.%s = w", alloc, read, f.Oneof.GoName), nil
	case f.Repeated && f.Message != nil:
		g.use(f.Message.Pkg)
		return fmt.Sprintf("%s, err = jsonList(d, &d.%s, d.%s)", target, g.messagePool(f.Message), decodeMethod(f.Message)), nil
	case f.Repeated:
		read, typ, err := g.reader(f)
		if err != nil {
			return "", err
		}
		if !strings.HasPrefix(read, "d.") || strings.Contains(read, "(") {
			return "", fmt.Errorf("a list of %s is not supported", f.Kind)
		}
		p := g.pool("scalars"+goCamelCase(strings.TrimPrefix(typ, "[]")), "scalarPool["+typ+"]")
		return fmt.Sprintf("%s, err = scalars(d, &d.%s, %s)", target, p, read), nil
	case f.Message != nil && g.msgs[f.Message].Spare != "":
		g.use(f.Message.Pkg)
		p := g.pool("pool"+spareType(f.Message)[len("json"):], "pool["+spareType(f.Message)+"]")
		return fmt.Sprintf("x := d.%s.new(d)\n%s = &x.msg\nerr = d.%sSpare(&x.msg, &x.spare)", p, target, decodeMethod(f.Message)), nil
	case f.Message != nil:
		g.use(f.Message.Pkg)
		return fmt.Sprintf("x := %s\n%s = x\nerr = d.%s(x)", g.newMessage(f.Message), target, decodeMethod(f.Message)), nil
	case hasOptionalKeyword(f):
		// A proto3 optional scalar is a pointer, set even to zero.
		read, typ, err := g.reader(f)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("var v %s\nv, err = %s()\n%s = &v", typ, read, target), nil
	}
	return g.scalar(f, target)
}

// newMessage is the expression that allocates a message held by a field.
func (g *jsonDecodeGen) newMessage(m *Message) string {
	if g.msgs[m].Pool {
		return "d." + g.messagePool(m) + ".new(d)"
	}
	return "&" + m.GoType() + "{}"
}

// scalar returns the statements that decode scalar field f into target.
func (g *jsonDecodeGen) scalar(f *Field, target string) (string, error) {
	if f.Kind == protoreflect.EnumKind {
		if err := g.useEnum(f.Enum); err != nil {
			return "", err
		}
		// As protojson: a number or one of the enum's names.
		return fmt.Sprintf("var v int32\nv, err = d.enumValue(%s_value)\n%s = %s(v)", f.Enum, target, f.Enum), nil
	}
	read, _, err := g.reader(f)
	if err != nil {
		return "", err
	}
	if !strings.Contains(read, "(") {
		read += "()"
	}
	return fmt.Sprintf("%s, err = %s", target, read), nil
}

// useEnum imports the package of an enum type as otlpwire spells it
// ("tracepb.Span_SpanKind"): one of the messages' packages.
func (g *jsonDecodeGen) useEnum(enum string) error {
	alias, _, _ := strings.Cut(enum, ".")
	for _, m := range g.s.Messages {
		if m.Pkg.Alias == alias {
			g.use(m.Pkg)
			return nil
		}
	}
	return fmt.Errorf("enum %s is in no message's package", enum)
}

// reader returns the jsonDecoder method (value) that reads a scalar of f's
// kind, or a call expression where it takes arguments, and the Go type it
// returns.
func (g *jsonDecodeGen) reader(f *Field) (read, typ string, err error) {
	switch f.Kind {
	case protoreflect.BoolKind:
		return "d.boolValue", "bool", nil
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return "d.int32Value", "int32", nil
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return "d.int64Value", "int64", nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return "d.uint32Value", "uint32", nil
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return "d.uint64Value", "uint64", nil
	case protoreflect.DoubleKind:
		return "d.doubleValue", "float64", nil
	case protoreflect.StringKind:
		return "d.str", "string", nil
	case protoreflect.BytesKind:
		switch id, b64 := f.Choice.IDSize, g.fields[f].Base64; {
		case id != "" && b64:
			return "", "", fmt.Errorf("both a hex id (IDSize) and base64 (Base64)")
		case id != "":
			return "d.idValue(" + id + ")", "[]byte", nil
		case b64:
			return "d.bytesValue", "[]byte", nil
		}
		return "", "", fmt.Errorf("a bytes field must be a trace or span id (IDSize) or base64 (Base64) in the choices")
	}
	return "", "", fmt.Errorf("kind %s is not supported", f.Kind)
}

// hasOptionalKeyword reports whether f is a proto3 optional field, held by
// pointer in the generated struct.
func hasOptionalKeyword(f *Field) bool {
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(f.FullName()))
	if err != nil {
		panic(fmt.Sprintf("field %s: %v", f.FullName(), err))
	}
	return d.(protoreflect.FieldDescriptor).HasOptionalKeyword()
}

// file assembles the generated file.
func (g *jsonDecodeGen) file() []byte {
	var b bytes.Buffer
	b.WriteString("package otlpwire\n\n// The OTLP/JSON decoder's per-message code: see json.go and json_decode.go.\n\nimport (\n")
	aliases := make([]string, 0, len(g.imports))
	for a := range g.imports {
		aliases = append(aliases, a)
	}
	sort.Strings(aliases)
	for _, a := range aliases {
		fmt.Fprintf(&b, "%s %q\n", a, g.imports[a])
	}
	b.WriteString(")\n\n")
	b.WriteString("// jsonPools holds the storage of one decoded request: a pool for every\n" +
		"// message type that occurs in lists, or that the choices pool, and one for\n" +
		"// each type of scalar list.\ntype jsonPools struct {\n")
	for _, p := range g.poolList {
		fmt.Fprintf(&b, "%s %s\n", p, g.pools[p])
	}
	b.WriteString("}\n\n")
	b.Write(g.pairs.Bytes())
	b.Write(g.body.Bytes())
	return b.Bytes()
}
