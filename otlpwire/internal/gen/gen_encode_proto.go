package main

import (
	"fmt"
	"sort"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// The protobuf encoder: ProtoEncoder's size and append passes
// (generated_proto_encode.go); the shared model is in gen_encode.go.

func (g *encGen) protoFile() ([]byte, error) {
	g.out.Reset()
	g.lists, g.singles, g.done = map[encListKey]bool{}, map[*encMsg]bool{}, map[string]bool{}
	g.p("package otlpwire\n")
	g.p("import (\n%s)\n", "IMPORTS")
	var reqs []*encMsg
	for _, m := range g.s.Messages {
		if strings.HasPrefix(m.GoName, "Export") && strings.HasSuffix(m.GoName, "ServiceRequest") {
			reqs = append(reqs, g.msgs[m])
		}
	}
	for _, r := range reqs {
		if err := g.protoRequest(r); err != nil {
			return nil, err
		}
	}
	// Functions are wanted as the code is written; write until no more are.
	for {
		progress := false
		for _, k := range g.sortedLists() {
			id := fmt.Sprintf("list %s %v", k.m.name, k.flush)
			if g.done[id] {
				continue
			}
			g.done[id], progress = true, true
			g.protoList(k.m, k.flush)
		}
		for _, m := range g.sortedSingles() {
			id := "single " + m.name
			if g.done[id] {
				continue
			}
			g.done[id], progress = true, true
			g.protoSingle(m)
		}
		if !progress {
			break
		}
	}
	return g.imports(g.out.Bytes()), nil
}

func (g *encGen) sortedLists() []encListKey {
	var ks []encListKey
	for k := range g.lists {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		if ks[i].m.name != ks[j].m.name {
			return ks[i].m.name < ks[j].m.name
		}
		return !ks[i].flush && ks[j].flush
	})
	return ks
}

func (g *encGen) sortedSingles() []*encMsg {
	var ms []*encMsg
	for m := range g.singles {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].name < ms[j].name })
	return ms
}

// listFunc names the list function of m (and wants it written).
func (g *encGen) listFunc(m *encMsg, flush bool) string {
	g.lists[encListKey{m, flush}] = true
	return encListName(m, flush)
}

// listName is the suffix of the list functions of m: "KeyValues",
// "ResourceSpansList", "MetricsFlushing".
func encListName(m *encMsg, flush bool) string {
	name := m.name + "s"
	if strings.HasSuffix(m.name, "s") {
		name = m.name + "List"
	}
	if flush {
		name += "Flushing"
	}
	return name
}

func (g *encGen) single(m *encMsg) string {
	g.singles[m] = true
	return m.name
}

// protoRequest writes the request's whole encoding: its one field is the
// function's argument.
func (g *encGen) protoRequest(r *encMsg) error {
	if len(r.wire) != 1 || !r.wire[0].Repeated || r.wire[0].Message == nil {
		return fmt.Errorf("request %s: the encoders expect one repeated message field", r.FullName)
	}
	f := r.wire[0]
	el := g.msgs[f.Message]
	flush := g.flushes(el, map[*encMsg]bool{})
	fn := g.listFunc(el, false)
	g.p("// append%s appends the %s of %s to dst.", r.name, r.GoName, f.Name)
	g.p("func (e *ProtoEncoder) append%s(dst []byte, xs []%s) []byte {", r.name, el.goType)
	g.p("e.reset()")
	g.p("total := e.size%s(%d, xs)", fn, f.Number)
	if flush {
		g.p("if e.flush != nil {")
		g.p("total = min(total, e.flushAt+e.flushAt/4) // it goes out in pieces")
		g.p("}")
	}
	g.p("dst = slices.Grow(dst, total) // one allocation at most: the size pass knows the length")
	g.p("return e.append%s(dst, %d, xs)", fn, f.Number)
	g.p("}\n")
	return nil
}

// flushes reports whether a list under m flushes.
func (g *encGen) flushes(m *encMsg, seen map[*encMsg]bool) bool {
	if seen[m] {
		return false
	}
	seen[m] = true
	for _, f := range m.allFields() {
		if f.c.Flush || f.Message != nil && g.flushes(g.msgs[f.Message], seen) {
			return true
		}
	}
	return false
}

// protoSingle writes sizeX and appendX of one message.
func (g *encGen) protoSingle(m *encMsg) {
	g.p("func (e *ProtoEncoder) size%s(m %s) int {", m.name, m.goType)
	g.protoSizeMarked(m, "n")
	g.p("return n")
	g.p("}\n")
	g.p("func (e *ProtoEncoder) append%s(dst []byte, m %s) []byte {", m.name, m.goType)
	g.protoAppendBody(m, "m")
	g.p("return dst")
	g.p("}\n")
}

// protoSizeMarked writes the code declaring v and summing into it the
// size of m's message m, keeping that size for the append (e.sizes) when m
// is marked.
func (g *encGen) protoSizeMarked(m *encMsg, v string) {
	if m.marked {
		g.p("idx := e.mark()")
	}
	g.p("%s := 0", v)
	g.protoSizeBody(m, "m", v)
	if m.marked {
		g.p("e.sizes[idx] = %s", v)
	}
}

// protoList writes the list functions of m, each holding m's code.
func (g *encGen) protoList(m *encMsg, flush bool) {
	name := encListName(m, flush)
	g.p("func (e *ProtoEncoder) size%s(num protowire.Number, xs []%s) int {", name, m.goType)
	g.p("n := 0")
	g.p("for _, m := range xs {")
	g.protoSizeMarked(m, "s")
	g.p("n += lenField(num, s)")
	g.p("}")
	g.p("return n")
	g.p("}\n")
	g.p("func (e *ProtoEncoder) append%s(dst []byte, num protowire.Number, xs []%s) []byte {", name, m.goType)
	g.p("for _, m := range xs {")
	if flush {
		g.p("dst = e.maybeFlush(dst)")
	}
	g.protoMsgHead(m, "num", "m")
	g.protoAppendBody(m, "m")
	g.p("}")
	g.p("return dst")
	g.p("}\n")
}

// protoMsgHead writes the tag and length of the message v of type m.
func (g *encGen) protoMsgHead(m *encMsg, num, v string) {
	if m.marked {
		g.p("dst = e.msg(dst, %s)", num)
		return
	}
	g.p("dst = appendTag(dst, %s, protowire.BytesType)", num)
	g.p("dst = appendUvarint(dst, uint64(e.size%s(%s)))", g.single(m), v)
}

// encPresent is the test that a scalar field x is written (proto3 leaves
// out zero values; a double's +0 only, since -0 has a bit set; an optional
// one when set, even to zero) and the value to write when it is.
func encPresent(f *encField, x string) (cond, v string) {
	switch {
	case f.opt:
		return x + " != nil", "*" + x
	case f.Kind == protoreflect.StringKind, f.Kind == protoreflect.BytesKind:
		return "len(" + x + ") > 0", x
	case f.Kind == protoreflect.BoolKind:
		return x, x
	case f.Kind == protoreflect.DoubleKind:
		return "math.Float64bits(" + x + ") != 0", x
	}
	return x + " != 0", x
}

// encOneofValue returns the size of a value v of f's kind and the statements
// appending it: of a set oneof member (written even when zero), and of any
// other scalar field once encPresent says it is written. The one rule per
// kind, so no two places write a kind differently.
func encOneofValue(f *encField, v string) (size string, app []string) {
	t := encTagSize(f.Number)
	tag := func(typ string) string { return fmt.Sprintf("dst = appendTag(dst, %d, protowire.%s)", f.Number, typ) }
	switch f.Kind {
	case protoreflect.StringKind, protoreflect.BytesKind:
		return fmt.Sprintf("lenField(%d, len(%s))", f.Number, v), []string{tag("BytesType"), "dst = appendUvarint(dst, uint64(len(" + v + ")))", "dst = append(dst, " + v + "...)"}
	case protoreflect.BoolKind:
		return fmt.Sprintf("%d + 1", t), []string{tag("VarintType"), "dst = appendUvarint(dst, protowire.EncodeBool(" + v + "))"}
	case protoreflect.EnumKind, protoreflect.Int32Kind:
		return fmt.Sprintf("%d + protowire.SizeVarint(uint64(int64(%s)))", t, v), []string{tag("VarintType"), "dst = appendUvarint(dst, uint64(int64(" + v + ")))"}
	case protoreflect.Int64Kind, protoreflect.Uint32Kind, protoreflect.Uint64Kind:
		return fmt.Sprintf("%d + protowire.SizeVarint(uint64(%s))", t, v), []string{tag("VarintType"), "dst = appendUvarint(dst, uint64(" + v + "))"}
	case protoreflect.Sint32Kind, protoreflect.Sint64Kind:
		z := "protowire.EncodeZigZag(int64(" + v + "))"
		return fmt.Sprintf("%d + protowire.SizeVarint(%s)", t, z), []string{tag("VarintType"), "dst = appendUvarint(dst, " + z + ")"}
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind:
		return fmt.Sprintf("%d + 4", t), []string{tag("Fixed32Type"), "dst = protowire.AppendFixed32(dst, uint32(" + v + "))"}
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind:
		return fmt.Sprintf("%d + 8", t), []string{tag("Fixed64Type"), "dst = protowire.AppendFixed64(dst, uint64(" + v + "))"}
	case protoreflect.DoubleKind:
		return fmt.Sprintf("%d + 8", t), []string{tag("Fixed64Type"), "dst = protowire.AppendFixed64(dst, math.Float64bits(" + v + "))"}
	}
	panic("encCheckKind let " + f.Kind.String() + " through")
}

// protoSizeBody adds the size of the fields of m (held in v) to acc.
func (g *encGen) protoSizeBody(m *encMsg, v, acc string) {
	for i := range m.wire {
		f := &m.wire[i]
		x := v + "." + f.goName
		switch {
		case f.oneof != nil:
			var cases []string
			for _, mf := range f.fields {
				cases = append(cases, fmt.Sprintf("case *%s:", mf.WrapperGoType()))
				y := "x." + mf.goName
				if mf.Message != nil {
					sub := g.msgs[mf.Message]
					cases = append(cases, fmt.Sprintf("%s += lenField(%d, e.size%s(%s))", acc, mf.Number, g.single(sub), y))
					continue
				}
				size, _ := encOneofValue(mf, y)
				cases = append(cases, fmt.Sprintf("%s += %s", acc, size))
			}
			if strings.Contains(strings.Join(cases, "\n"), "x.") {
				g.p("switch x := %s.(type) {", x)
			} else {
				g.p("switch %s.(type) {", x)
			}
			for _, c := range cases {
				g.p("%s", c)
			}
			g.p("}")
		case f.Choice.SharedAttrs:
			g.listFunc(g.msgs[f.Message], false) // sizePointAttrs' own
			g.p("%s += e.sizePointAttrs(%d, %s)", acc, f.Number, x)
		case f.Message != nil && f.Repeated:
			g.p("%s += e.size%s(%d, %s)", acc, g.listFunc(g.msgs[f.Message], f.c.Flush), f.Number, x)
			if f.c.Records != "" {
				g.p("%s += len(%s.%s) // received, as they came", acc, v, f.c.Records)
			}
		case f.Message != nil:
			g.p("if %s != nil {", x)
			g.p("%s += lenField(%d, e.size%s(%s))", acc, f.Number, g.single(g.msgs[f.Message]), x)
			g.p("}")
		case f.Repeated:
			switch f.Kind {
			case protoreflect.Fixed64Kind, protoreflect.DoubleKind:
				g.p("if len(%s) > 0 {", x)
				g.p("%s += lenField(%d, 8*len(%s))", acc, f.Number, x)
				g.p("}")
			case protoreflect.Uint64Kind: // packed varints: the length is recorded
				g.p("if len(%s) > 0 {", x)
				g.p("p, pidx := 0, e.mark()")
				g.p("for _, y := range %s {", x)
				g.p("p += protowire.SizeVarint(y)")
				g.p("}")
				g.p("e.sizes[pidx] = p")
				g.p("%s += lenField(%d, p)", acc, f.Number)
				g.p("}")
			case protoreflect.StringKind:
				g.p("for _, y := range %s {", x)
				g.p("%s += lenField(%d, len(y))", acc, f.Number)
				g.p("}")
			}
		default:
			cond, y := encPresent(f, x)
			size, _ := encOneofValue(f, y)
			g.p("if %s {", cond)
			g.p("%s += %s", acc, size)
			g.p("}")
		}
	}
}

// protoAppendBody appends the fields of m (held in v) to dst.
func (g *encGen) protoAppendBody(m *encMsg, v string) {
	for i := range m.wire {
		f := &m.wire[i]
		x := v + "." + f.goName
		switch {
		case f.oneof != nil:
			g.p("switch x := %s.(type) {", x)
			for _, mf := range f.fields {
				g.p("case *%s:", mf.WrapperGoType())
				y := "x." + mf.goName
				if mf.Message != nil {
					sub := g.msgs[mf.Message]
					g.protoMsgHead(sub, fmt.Sprint(mf.Number), y)
					g.p("dst = e.append%s(dst, %s)", g.single(sub), y)
					continue
				}
				_, app := encOneofValue(mf, y)
				for _, s := range app {
					g.p("%s", s)
				}
			}
			g.p("}")
		case f.Choice.SharedAttrs:
			g.p("dst = e.appendPointAttrs(dst, %d, %s)", f.Number, x)
		case f.Message != nil && f.Repeated:
			g.p("dst = e.append%s(dst, %d, %s)", g.listFunc(g.msgs[f.Message], f.c.Flush), f.Number, x)
			if f.c.Records != "" {
				g.p("dst = append(dst, %s.%s...)", v, f.c.Records)
			}
		case f.Message != nil:
			sub := g.msgs[f.Message]
			g.p("if %s != nil {", x)
			g.protoMsgHead(sub, fmt.Sprint(f.Number), x)
			g.p("dst = e.append%s(dst, %s)", g.single(sub), x)
			g.p("}")
		case f.Repeated:
			switch f.Kind {
			case protoreflect.Fixed64Kind, protoreflect.DoubleKind:
				conv := "y"
				if f.Kind == protoreflect.DoubleKind {
					conv = "math.Float64bits(y)"
				}
				g.p("if len(%s) > 0 {", x)
				g.p("dst = appendTag(dst, %d, protowire.BytesType)", f.Number)
				g.p("dst = appendUvarint(dst, uint64(8*len(%s)))", x)
				g.p("for _, y := range %s {", x)
				g.p("dst = protowire.AppendFixed64(dst, %s)", conv)
				g.p("}")
				g.p("}")
			case protoreflect.Uint64Kind:
				g.p("if len(%s) > 0 {", x)
				g.p("dst = e.msg(dst, %d)", f.Number)
				g.p("for _, y := range %s {", x)
				g.p("dst = appendUvarint(dst, y)")
				g.p("}")
				g.p("}")
			case protoreflect.StringKind:
				g.p("for _, y := range %s {", x)
				g.p("dst = appendTag(dst, %d, protowire.BytesType)", f.Number)
				g.p("dst = appendUvarint(dst, uint64(len(y)))")
				g.p("dst = append(dst, y...)")
				g.p("}")
			}
		default:
			cond, y := encPresent(f, x)
			_, app := encOneofValue(f, y)
			g.p("if %s {", cond)
			for _, s := range app {
				g.p("%s", s)
			}
			g.p("}")
		}
	}
}
