package main

import (
	"bytes"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/otelstep/otelstep/pipeline"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// The encoders: ProtoEncoder's size and append passes
// (generated_proto_encode.go) and the OTLP/JSON writers
// (generated_json_encode.go), for every message under the three export
// requests. One list of a message's fields (encMsg.wire, in wire order;
// decl, the same in JSON's) drives the size pass, the append pass and the
// JSON writer, so the two protobuf passes
// cannot disagree and no field can be left out: every descriptor field is
// written, or skipped by a choice (FieldChoice.Skip), and a field of a kind
// the writers do not know fails the generator.
//
// Protobuf: fields in field-number order, a oneof where its first member
// is, as proto.Marshal writes them (Deterministic or not: OTLP has no
// maps); proto3 zero values are left out, a oneof's set member is always
// written. A message with a nested message or repeated field records its
// size in the size pass (ProtoEncoder.mark) for the append pass to read
// back in the same order; one of scalars only (Status, ValueAtQuantile) is
// sized again instead. Repeated messages are written by a list function
// holding the element's code, without a call per element.
//
// OTLP/JSON: fields in declaration order with their JSON names, as
// protojson writes them; ids (FieldChoice.IDSize) as hex. A list of
// doubles (a histogram point's explicit bounds) is written through the
// pointWriter, which writes the text of the list it wrote last again when
// the values are the same: a histogram family's points share their bounds.

// encodeChoice is what only the encoders make of a field.
type encodeChoice struct {
	// Flush: the append passes may hand off what they appended before
	// each element of the list (ProtoEncoder.SetFlush,
	// MetricsEncoder.Flush), so a resource of many series need not be held
	// whole.
	Flush bool
	// PointTime: the JSON writer writes the field from the digits of the
	// value it wrote last in slot PointTime-1 of the pointWriter (1: start
	// times, 2: times): a scrape's points share their times.
	PointTime int
	// SkipKeys: the JSON writer leaves out the KeyValues whose keys the
	// caller lists (the Authorization token stays off disk).
	SkipKeys bool
	// SharedJSON is FieldChoice.SharedAttrs for the JSON writer only.
	SharedJSON bool
	// Records names the pipeline field holding the items kept as received
	// records, written after the list's messages; Direct and Pool are the
	// JSON writer's way to them (fieldItems).
	Records, Direct, Pool string
}

// encodeChoices is keyed by the field's full name (Field.FullName).
var encodeChoices = map[string]encodeChoice{
	metrics + "ScopeMetrics.metrics":                               {Flush: true},
	metrics + "Gauge.data_points":                                  {Flush: true},
	metrics + "Sum.data_points":                                    {Flush: true},
	metrics + "Histogram.data_points":                              {Flush: true},
	metrics + "ExponentialHistogram.data_points":                   {Flush: true},
	metrics + "Summary.data_points":                                {Flush: true},
	metrics + "NumberDataPoint.start_time_unix_nano":               {PointTime: 1},
	metrics + "NumberDataPoint.time_unix_nano":                     {PointTime: 2},
	metrics + "HistogramDataPoint.start_time_unix_nano":            {PointTime: 1},
	metrics + "HistogramDataPoint.time_unix_nano":                  {PointTime: 2},
	metrics + "ExponentialHistogramDataPoint.start_time_unix_nano": {PointTime: 1},
	metrics + "ExponentialHistogramDataPoint.time_unix_nano":       {PointTime: 2},
	metrics + "SummaryDataPoint.start_time_unix_nano":              {PointTime: 1},
	metrics + "SummaryDataPoint.time_unix_nano":                    {PointTime: 2},
	resource + "Resource.attributes":                               {SkipKeys: true},
	// The protobuf encoder does not store these (TestProtoEncoderSharedScrapes).
	metrics + "ExponentialHistogramDataPoint.attributes": {SharedJSON: true},
	trace + "ScopeSpans.spans":                           {Records: "Records", Direct: "appendSpanRecord", Pool: "spanDecoders"},
	logs + "ScopeLogs.log_records":                       {Records: "Records", Direct: "appendLogRecordRecord", Pool: "logRecordDecoders"},
}

// encMsg is a message as the encoders see it.
type encMsg struct {
	*Message
	goType string     // "*tracepb.Span", "*pipeline.ResourceSpans"
	name   string     // the suffix of its functions: "Span", "SpanEvent"
	wire   []encField // protobuf order
	decl   []encField // JSON order
	// marked: the size pass records its size (it has a nested message or
	// a repeated field); otherwise it is sized again in the append pass.
	marked bool
	// skip, pw: the JSON writer takes the caller's skip list, the
	// pointWriter (some field below it needs them).
	skip, pw bool
}

// encField is a field, or a oneof (fields set), as the encoders write it.
type encField struct {
	*Field
	goName string
	oneof  *Oneof
	fields []*encField // the oneof's members
	opt    bool        // proto3 optional: a pointer
	c      encodeChoice
}

type encGen struct {
	s    *Schema
	msgs map[*Message]*encMsg
	// lists: the list functions wanted, by element and flush; singles:
	// the functions of one message wanted.
	lists   map[encListKey]bool
	singles map[*encMsg]bool
	done    map[string]bool
	out     bytes.Buffer
}

type encListKey struct {
	m     *encMsg
	flush bool
}

func genEncode(s *Schema) ([]File, error) {
	g := &encGen{s: s, msgs: map[*Message]*encMsg{}}
	if err := g.load(encodeChoices); err != nil {
		return nil, err
	}
	pb, err := g.protoFile()
	if err != nil {
		return nil, err
	}
	js, err := g.jsonFile()
	if err != nil {
		return nil, err
	}
	return []File{{Name: "generated_proto_encode.go", Src: pb}, {Name: "generated_json_encode.go", Src: js}}, nil
}

// load builds the encoders' view of every message with the choices,
// failing on a choice that names no field or does not fit its field.
func (g *encGen) load(choices map[string]encodeChoice) error {
	byName := map[string]*Field{}
	for _, m := range g.s.Messages {
		for _, f := range m.Fields {
			byName[f.FullName()] = f
		}
	}
	var unknown []string
	for name := range choices {
		if byName[name] == nil {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("encoder choices name fields the OTLP descriptors do not have: %v", unknown)
	}
	for _, m := range g.s.Messages {
		em := &encMsg{Message: m, goType: "*" + m.GoType(), name: strings.ReplaceAll(m.GoName, "_", "")}
		var goFields map[string]string
		if m.Choice.Pipeline != "" {
			em.goType = "*" + m.Choice.Pipeline
			var err error
			if goFields, err = encPipelineFields(m); err != nil {
				return err
			}
		}
		md, err := protoregistry.GlobalFiles.FindDescriptorByName(m.FullName)
		if err != nil {
			return fmt.Errorf("message %s: %w", m.FullName, err)
		}
		fds := md.(protoreflect.MessageDescriptor).Fields()
		oneofs := map[*Oneof]*encField{}
		var decl []*encField
		index := map[*encField]int{}
		for _, f := range m.Fields {
			if f.Choice.Skip != "" {
				continue
			}
			fd := fds.ByNumber(protoreflect.FieldNumber(f.Number))
			ef := &encField{Field: f, goName: f.GoName, opt: fd.HasOptionalKeyword(), c: choices[f.FullName()]}
			if goFields != nil {
				if ef.goName = goFields[f.Name]; ef.goName == "" {
					return fmt.Errorf("field %s: %s has no field for it", f.FullName(), m.Choice.Pipeline)
				}
			}
			if err := encCheckKind(ef); err != nil {
				return err
			}
			if f.Message != nil || f.Repeated {
				em.marked = true
			}
			if o := f.Oneof; o != nil {
				of := oneofs[o]
				if of == nil {
					// A oneof goes where its first member is, in both orders.
					of = &encField{Field: f, oneof: o, goName: o.GoName}
					oneofs[o] = of
					em.wire = append(em.wire, *of)
					decl = append(decl, of)
					index[of] = fd.Index()
				}
				of.fields = append(of.fields, ef)
				continue
			}
			em.wire = append(em.wire, *ef)
			decl = append(decl, ef)
			index[ef] = fd.Index()
		}
		for i := range em.wire { // the oneofs' members, added after
			if o := em.wire[i].oneof; o != nil {
				em.wire[i] = *oneofs[o]
			}
		}
		sort.SliceStable(decl, func(i, j int) bool { return index[decl[i]] < index[decl[j]] })
		for _, f := range decl {
			em.decl = append(em.decl, *f)
		}
		g.msgs[m] = em
	}
	names := map[string]*Message{}
	for _, em := range g.msgs {
		for _, n := range []string{em.name, encListName(em, false), encListName(em, true)} {
			if other := names[n]; other != nil {
				return fmt.Errorf("messages %s and %s: both would have functions named for %s", other.FullName, em.FullName, n)
			}
			names[n] = em.Message
		}
	}
	// Which JSON writers take the skip list and the pointWriter: those of
	// a field needing them, and those above.
	for changed := true; changed; {
		changed = false
		for _, em := range g.msgs {
			for _, f := range em.allFields() {
				skip := f.c.SkipKeys
				pw := f.Choice.SharedAttrs || f.c.SharedJSON || f.c.PointTime > 0 || f.c.Flush ||
					f.Repeated && f.Kind == protoreflect.DoubleKind
				if f.Message != nil {
					sub := g.msgs[f.Message]
					skip, pw = skip || sub.skip, pw || sub.pw
				}
				if skip && !em.skip || pw && !em.pw {
					em.skip, em.pw, changed = em.skip || skip, em.pw || pw, true
				}
			}
		}
	}
	return nil
}

// allFields is every field of m, the oneofs' members included.
func (m *encMsg) allFields() []*encField {
	var out []*encField
	for i := range m.wire {
		if m.wire[i].oneof != nil {
			out = append(out, m.wire[i].fields...)
		} else {
			out = append(out, &m.wire[i])
		}
	}
	return out
}

// pipelineFields maps the proto names of m's fields to the fields of the
// pipeline type standing for it (m.Choice.Pipeline), matched by name
// without regard to case ("schema_url" is SchemaURL).
func encPipelineFields(m *Message) (map[string]string, error) {
	types := map[string]reflect.Type{
		"pipeline.ResourceSpans": reflect.TypeFor[pipeline.ResourceSpans](),
		"pipeline.ScopeSpans":    reflect.TypeFor[pipeline.ScopeSpans](),
		"pipeline.ResourceLogs":  reflect.TypeFor[pipeline.ResourceLogs](),
		"pipeline.ScopeLogs":     reflect.TypeFor[pipeline.ScopeLogs](),
	}
	t := types[m.Choice.Pipeline]
	if t == nil {
		return nil, fmt.Errorf("message %s: pipeline type %s unknown to the encoders", m.FullName, m.Choice.Pipeline)
	}
	out := map[string]string{}
	for _, f := range m.Fields {
		for i := range t.NumField() {
			if strings.EqualFold(t.Field(i).Name, goCamelCase(f.Name)) {
				out[f.Name] = t.Field(i).Name
			}
		}
	}
	return out, nil
}

// encCheckKind fails for a field the writers have no code for.
func encCheckKind(f *encField) error {
	bad := func(why string) error { return fmt.Errorf("field %s: %s: no encoder for it", f.FullName(), why) }
	switch f.Kind {
	case protoreflect.FloatKind, protoreflect.GroupKind:
		return bad(f.Kind.String())
	}
	if f.Repeated {
		switch f.Kind {
		case protoreflect.MessageKind, protoreflect.StringKind, protoreflect.Fixed64Kind, protoreflect.DoubleKind,
			protoreflect.Uint64Kind:
		default:
			return bad("repeated " + f.Kind.String())
		}
	}
	if f.opt && f.Kind != protoreflect.DoubleKind {
		return bad("optional " + f.Kind.String())
	}
	c := f.c
	if c.Flush && (!f.Repeated || f.Message == nil) || c.PointTime > 0 && f.Kind != protoreflect.Fixed64Kind ||
		(c.SkipKeys || c.SharedJSON || f.Choice.SharedAttrs) && (!f.Repeated || f.Message == nil || f.Message.GoName != "KeyValue") ||
		c.Records != "" && (!f.Repeated || f.Message == nil || !f.Message.Choice.Record) {
		return bad(fmt.Sprintf("choices %+v %+v do not apply", f.Choice, c))
	}
	return nil
}

func (g *encGen) p(format string, args ...any) { fmt.Fprintf(&g.out, format+"\n", args...) }

// tagSize is protowire.SizeTag, at generation time.
func encTagSize(num int) int {
	switch {
	case num < 1<<4:
		return 1
	case num < 1<<11:
		return 2
	case num < 1<<18:
		return 3
	}
	return 5
}

// ---- protobuf ----

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
	if m.marked {
		g.p("idx := e.mark()")
	}
	g.p("n := 0")
	g.protoSizeBody(m, "m", "n")
	if m.marked {
		g.p("e.sizes[idx] = n")
	}
	g.p("return n")
	g.p("}\n")
	g.p("func (e *ProtoEncoder) append%s(dst []byte, m %s) []byte {", m.name, m.goType)
	g.protoAppendBody(m, "m")
	g.p("return dst")
	g.p("}\n")
}

// protoList writes the list functions of m, each holding m's code.
func (g *encGen) protoList(m *encMsg, flush bool) {
	name := encListName(m, flush)
	g.p("func (e *ProtoEncoder) size%s(num protowire.Number, xs []%s) int {", name, m.goType)
	g.p("n := 0")
	g.p("for _, m := range xs {")
	if m.marked {
		g.p("idx := e.mark()")
	}
	g.p("s := 0")
	g.protoSizeBody(m, "m", "s")
	if m.marked {
		g.p("e.sizes[idx] = s")
	}
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

// ---- OTLP/JSON ----

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
		body := g.jsonBody(em)
		if bytes.Contains(body, []byte("&first")) {
			g.p("first := true")
		}
		g.out.Write(body)
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

// jsonBody is the code writing m's fields, m being known not nil.
func (g *encGen) jsonBody(m *encMsg) []byte {
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
		f := &m.decl[i]
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
		first = false
	}
	body := g.out.Bytes()
	g.out = saved
	// A "first = false" no later key reads is dropped.
	if !bytes.Contains(body, []byte("&first")) {
		body = bytes.ReplaceAll(body, []byte("first = false\n"), nil)
	}
	return body
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
func (g *encGen) imports(src []byte) []byte {
	pkgs := map[string]string{
		"math":      "math",
		"slices":    "slices",
		"strconv":   "strconv",
		"protowire": "google.golang.org/protobuf/encoding/protowire",
		"pipeline":  "github.com/otelstep/otelstep/pipeline",
	}
	for _, m := range g.s.Messages {
		pkgs[m.Pkg.Alias] = m.Pkg.Path
	}
	var std, other []string
	for alias, path := range pkgs {
		if !bytes.Contains(src, []byte(alias+".")) {
			continue
		}
		switch {
		case alias == path:
			std = append(std, fmt.Sprintf("%q\n", path))
		case strings.HasSuffix(path, "/"+alias):
			other = append(other, fmt.Sprintf("%q\n", path))
		default:
			other = append(other, fmt.Sprintf("%s %q\n", alias, path))
		}
	}
	sort.Strings(std)
	sort.Slice(other, func(i, j int) bool {
		return strings.Trim(strings.Fields(other[i])[len(strings.Fields(other[i]))-1], `"`) < strings.Trim(strings.Fields(other[j])[len(strings.Fields(other[j]))-1], `"`)
	})
	return bytes.Replace(src, []byte("IMPORTS"), []byte(strings.Join(std, "")+"\n"+strings.Join(other, "")), 1)
}
