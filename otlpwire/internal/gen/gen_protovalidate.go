package main

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// validateFile writes the validators: for each record message and every
// message under it, a walk of the same fields with the same rules (the
// decoder's primitives) as its decode that stores nothing and only says yes
// or no (proto_validate.go).
func (g *protoDecode) validateFile() error {
	g.p("package otlpwire\n\n")
	g.p("// The validators of the records and the messages under them: see\n// proto_validate.go for the rules, and internal/gen for where this comes from.\n\n")
	seen := map[*Message]bool{}
	var order []*Message
	var walk func(m *Message)
	walk = func(m *Message) {
		if seen[m] {
			return
		}
		seen[m] = true
		order = append(order, m)
		for _, f := range m.Fields {
			if f.Message != nil && f.Choice.Skip == "" {
				walk(f.Message)
			}
		}
	}
	for _, m := range g.recordMessages() {
		walk(m)
	}
	for _, m := range order {
		if err := g.validator(m); err != nil {
			return err
		}
	}
	return nil
}

// validator writes m's validator.
func (g *protoDecode) validator(m *Message) error {
	params, depth := "p, end int", ""
	if g.cyclic[m] {
		params, depth = "p, end, lv int", " at depth lv"
	}
	g.p("// valid%s is %s's check%s.\n", m.GoName, m.Stem(), depth)
	g.p("func (d *decoder) valid%s(%s) bool {\n", m.GoName, params)
	if g.cyclic[m] {
		g.p("if lv > maxDepth {\nreturn false\n}\n")
	}
	if fast := m.Choice.ValidShape; fast != "" {
		g.p("if ok, decided := d.%s(p, end, lv); decided {\nreturn ok\n}\n", fast)
	}
	// Cases with the same check share one case clause.
	var actions []string
	tags := map[string][]string{}
	add := func(f *Field, wt, action string) {
		if _, ok := tags[action]; !ok {
			actions = append(actions, action)
		}
		tags[action] = append(tags[action], fmt.Sprintf("%d<<3 | %s", f.Number, wt))
	}
	for _, f := range m.Fields {
		if f.Choice.Skip != "" {
			continue
		}
		switch sub := f.Message; {
		case sub != nil && sub.Choice.Record:
			return fmt.Errorf("field %s: a record inside a record", f.FullName())
		case sub != nil:
			add(f, "wtLen", fmt.Sprintf("var a int\nif a, p, e = d.lenPrefix(q, end); e == nil && !d.valid%s(a, p%s) {\nreturn false\n}", sub.GoName, g.lvArg(m, sub)))
		case f.Repeated && f.Kind != protoreflect.StringKind:
			return fmt.Errorf("field %s: the validator has no rule for repeated %s", f.FullName(), f.Kind)
		default:
			sc, _ := scalarRead(f)
			switch sc.wt {
			case "wtVarint":
				add(f, sc.wt, "_, p, e = d.varint(q, end)")
			case "wtI64":
				add(f, sc.wt, "_, p, e = d.fixed64(q, end)")
			case "wtI32":
				add(f, sc.wt, "_, p, e = d.fixed32(q, end)")
			case "wtLen":
				switch {
				case f.Kind == protoreflect.StringKind:
					add(f, sc.wt, "_, p, e = d.str(q, end)")
				case f.Choice.IDSize != "":
					add(f, sc.wt, "_, p, e = d.id(q, end, "+f.Choice.IDSize+")")
				default:
					add(f, sc.wt, "_, p, e = d.lenPrefix(q, end)")
				}
			}
		}
	}
	g.p("for p < end {\ntag, q := uint64(d.b[p]), p+1\nvar e *DecodeError\nif tag-8 >= 0x80-8 { // not a one-byte tag (field 1 to 15)\nif tag, q, e = d.tagSlow(p, end); e != nil {\nreturn false\n}\n}\nswitch tag {\n")
	for _, a := range actions {
		g.p("case %s:\n%s\n", strings.Join(tags[a], ", "), a)
	}
	g.p("default:\np, e = d.other(tag, p, q, end, %s)\n}\nif e != nil {\nreturn false\n}\n}\nreturn true\n}\n\n", m.Choice.FieldsVar)
	return nil
}
