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
