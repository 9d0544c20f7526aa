package main

import (
	"bytes"
	"fmt"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// The OTLP/JSON writers (generated_json_encode.go); the shared model is
// in gen_encode.go.

func (g *encGen) jsonFile() ([]byte, error) {
	g.out.Reset()
	g.p("package otlpwire\n")
	g.p("import (\n%s)\n", "IMPORTS")
	for _, m := range g.s.Messages {
		em := g.msgs[m]
		if strings.HasPrefix(m.GoName, "Export") && strings.HasSuffix(m.GoName, "ServiceRequest") {
			if len(em.wire) != 1 || !em.wire[0].Repeated || em.wire[0].Message == nil {
				return nil, fmt.Errorf("request %s: the encoders expect one repeated message field", m.FullName)
			}
			f := &em.wire[0]
			el := g.msgs[f.Message]
			g.p("// append%s appends the OTLP/JSON of the %s of %s to b.", em.name, m.GoName, f.Name)
			g.p("func append%s(b []byte, xs []%s%s) []byte {", em.name, el.goType, encParams(el))
			g.p("b = append(b, '{')")
			g.p("if len(xs) > 0 {")
			g.p("b = append(b, `\"%s\":`...)", f.JSONName)
			g.jsonList(f, "xs")
			g.p("}")
			g.p("return append(b, '}')")
			g.p("}\n")
			continue
		}
		g.p("func append%s(b []byte, m %s%s) []byte {", em.name, em.goType, encParams(em))
		g.p("b = append(b, '{')")
		g.p("if m == nil {")
		g.p("return append(b, '}')")
		g.p("}")
		g.out.Write(g.jsonBody(em))
		g.p("return append(b, '}')")
		g.p("}\n")
	}
	return g.imports(g.out.Bytes()), nil
}

func encParams(m *encMsg) string {
	s := ""
	if m.skip {
		s += ", skip []string"
	}
	if m.pw {
		s += ", pw *pointWriter"
	}
	return s
}

// args are the arguments of m's writer beyond the message.
func (g *encGen) args(m *encMsg) string {
	s := ""
	if m.skip {
		s += ", skip"
	}
	if m.pw {
		s += ", pw"
	}
	return s
}

// jsonFields is the code writing m's fields in the JSON writer's order,
// each by field, which writes a field's key with key: the comma rule of the
// JSON writers and the records writers, in one place, the comma state
// declared when a key reads it.
func (g *encGen) jsonFields(m *encMsg, field func(f *encField, key func(string))) []byte {
	saved := g.out
	g.out = bytes.Buffer{}
	// first: whether no field can have been written before this one, so
	// its key needs no comma and no look at the first flag.
	first := true
	key := func(name string) {
		if first {
			g.p("b = append(b, `\"%s\":`...)", name)
			g.p("first = false")
			return
		}
		g.p("b = key(b, &first, %q)", name)
	}
	for i := range m.decl {
		field(&m.decl[i], key)
		first = false
	}
	body := g.out.Bytes()
	g.out = saved
	// A "first = false" no later key reads is dropped.
	if !bytes.Contains(body, []byte("&first")) {
		return bytes.ReplaceAll(body, []byte("first = false\n"), nil)
	}
	return append([]byte("first := true\n"), body...)
}

// jsonBody is the code writing m's fields, m being known not nil.
func (g *encGen) jsonBody(m *encMsg) []byte {
	return g.jsonFields(m, func(f *encField, key func(string)) {
		x := "m." + f.goName
		switch {
		case f.oneof != nil:
			g.p("switch x := %s.(type) {", x)
			for _, mf := range f.fields {
				g.p("case *%s:", mf.WrapperGoType())
				key(mf.JSONName)
				g.jsonOneofValue(mf, "x."+mf.goName)
			}
			g.p("}")
		case f.Choice.SharedAttrs || f.c.SharedJSON:
			g.p("b = fieldSharedAttrs(b, &first, %q, %s, pw.shared)", f.JSONName, x)
		case f.c.SkipKeys:
			g.p("b = fieldSkipAttrs(b, &first, %q, %s, skip)", f.JSONName, x)
		case f.c.Records != "":
			el := g.msgs[f.Message]
			g.p("b = fieldItems(b, &first, %q, %s, m.%s, %s, &%s, append%s)", f.JSONName, x, f.c.Records, f.c.Direct, f.c.Pool, el.name)
		case f.Message != nil && f.Repeated:
			g.p("if len(%s) > 0 {", x)
			key(f.JSONName)
			g.jsonList(f, x)
			g.p("}")
		case f.Message != nil:
			sub := g.msgs[f.Message]
			g.p("if %s != nil {", x)
			key(f.JSONName)
			g.p("b = append%s(b, %s%s)", sub.name, x, g.args(sub))
			g.p("}")
		case f.Repeated:
			if f.Kind == protoreflect.DoubleKind { // through the pointWriter (above)
				g.p("b = pw.doubles.field(b, &first, %q, %s)", f.JSONName, x)
				break
			}
			g.p("if len(%s) > 0 {", x)
			key(f.JSONName)
			g.p("b = append(b, '[')")
			g.p("for i, y := range %s {", x)
			g.p("if i > 0 {")
			g.p("b = append(b, ',')")
			g.p("}")
			g.jsonOneofValue(f, "y")
			g.p("}")
			g.p("b = append(b, ']')")
			g.p("}")
		case f.c.PointTime > 0:
			g.p("if %s != 0 {", x)
			key(f.JSONName)
			g.p("b = pw.last[%d].append(b, %s)", f.c.PointTime-1, x)
			g.p("}")
		default:
			g.jsonScalar(f, x, key)
		}
	})
}

// jsonList writes the JSON array of the repeated message field f (held in
// x), its key written.
func (g *encGen) jsonList(f *encField, x string) {
	el := g.msgs[f.Message]
	g.p("b = append(b, '[')")
	g.p("for i, x := range %s {", x)
	g.p("if i > 0 {")
	g.p("b = append(b, ',')")
	g.p("}")
	if f.c.Flush {
		g.p("b = pw.maybeFlush(b)")
	}
	g.p("b = append%s(b, x%s)", el.name, g.args(el))
	g.p("}")
	g.p("b = append(b, ']')")
}

// jsonScalar writes the scalar field f, its value v, when encPresent says
// it is written, its key by key: the one way to a scalar field of the JSON
// writers and the records writers.
func (g *encGen) jsonScalar(f *encField, v string, key func(string)) {
	cond, y := encPresent(f, v)
	g.p("if %s {", cond)
	key(f.JSONName)
	g.jsonOneofValue(f, y)
	g.p("}")
}

// jsonOneofValue writes a value v of f's kind: of a set oneof member (even
// a zero one), of a list's element, or of a scalar field (jsonScalar). The
// one rule per kind, as encOneofValue is for protobuf.
func (g *encGen) jsonOneofValue(f *encField, v string) {
	switch f.Kind {
	case protoreflect.StringKind:
		g.p("b = appendString(b, %s)", v)
	case protoreflect.BytesKind:
		if f.Choice.IDSize != "" {
			g.p("b = appendHex(b, %s)", v)
		} else {
			g.p("b = appendBase64(b, %s)", v)
		}
	case protoreflect.BoolKind:
		g.p("b = strconv.AppendBool(b, %s)", v)
	case protoreflect.EnumKind, protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		g.p("b = strconv.AppendInt(b, int64(%s), 10)", v)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		g.p("b = strconv.AppendUint(b, uint64(%s), 10)", v)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		g.p("b = append(b, '\"')")
		g.p("b = strconv.AppendUint(b, %s, 10)", v)
		g.p("b = append(b, '\"')")
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		g.p("b = append(b, '\"')")
		g.p("b = strconv.AppendInt(b, int64(%s), 10)", v)
		g.p("b = append(b, '\"')")
	case protoreflect.DoubleKind:
		g.p("b = appendFloat(b, %s)", v)
	case protoreflect.MessageKind:
		sub := g.msgs[f.Message]
		g.p("b = append%s(b, %s%s)", sub.name, v, g.args(sub))
	}
}

// imports replaces the IMPORTS placeholder of src by the packages it uses.
