package main

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
)

// Schema is every message under the three OTLP export requests, read from
// the descriptors of the generated packages: the one model each generator
// works from.
type Schema struct {
	// Messages are the requests (traces, metrics, logs) followed by the
	// messages under them, each once, in the order a depth-first walk in
	// field-number order first reaches them: stable across runs and
	// releases that only add fields.
	Messages []*Message
	byName   map[protoreflect.FullName]*Message
}

// Message is one OTLP message.
type Message struct {
	FullName protoreflect.FullName // "opentelemetry.proto.trace.v1.Span.Event"
	GoName   string                // "Span_Event", the generated Go type's name
	Pkg      Package
	Fields   []*Field // in field-number order
	Oneofs   []*Oneof // real oneofs, in declaration order
	Choice   MessageChoice
}

// GoType is the generated Go type as otlpwire spells it: "tracepb.Span_Event".
func (m *Message) GoType() string { return m.Pkg.Alias + "." + m.GoName }

// Field returns the field named name, or nil.
func (m *Message) Field(name string) *Field {
	for _, f := range m.Fields {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// MaxNumber is the highest field number of m.
func (m *Message) MaxNumber() int {
	n := 0
	for _, f := range m.Fields {
		n = max(n, f.Number)
	}
	return n
}

// Package is a generated Go package and the name otlpwire imports it as.
type Package struct {
	Path  string // "go.opentelemetry.io/proto/otlp/trace/v1"
	Alias string // "tracepb"; the collector services' are "coltracepb" etc.
}

// Field is one field of a message.
type Field struct {
	Parent   *Message
	Number   int
	Name     string // proto name: "trace_id"
	JSONName string // "traceId"
	GoName   string // the generated struct's field: "TraceId"
	Kind     protoreflect.Kind
	Repeated bool
	Packed   bool   // a repeated scalar packed by default (proto3)
	Oneof    *Oneof // the real oneof the field is a member of, or nil
	Message  *Message
	Enum     string // for an enum, its Go type as otlpwire spells it: "tracepb.Span_SpanKind"
	// Optional: a proto3 optional scalar (explicit presence), a pointer in Go.
	Optional bool
	Choice   FieldChoice
}

// WrapperGoType is the generated oneof wrapper of a member:
// "metricspb.Metric_Gauge".
func (f *Field) WrapperGoType() string {
	return f.Parent.Pkg.Alias + "." + f.Parent.GoName + "_" + f.GoName
}

// FullName is "opentelemetry.proto.trace.v1.Span.trace_id", the key of the
// field choices.
func (f *Field) FullName() string { return string(f.Parent.FullName) + "." + f.Name }

// Oneof is a real (not synthetic) oneof.
type Oneof struct {
	Name   string // "data"
	GoName string // the generated struct's interface field: "Data"
	Fields []*Field
}

// requests are the roots of the schema, in the order of Schema.Messages.
var requests = []proto.Message{
	&coltracepb.ExportTraceServiceRequest{},
	&colmetricspb.ExportMetricsServiceRequest{},
	&collogspb.ExportLogsServiceRequest{},
}

// Load reads the schema from the descriptors and applies the choices,
// failing when a choice names a message or field the descriptors do not
// have.
func Load() (*Schema, error) {
	s := &Schema{byName: map[protoreflect.FullName]*Message{}}
	for _, r := range requests {
		if _, err := s.walk(r.ProtoReflect().Descriptor()); err != nil {
			return nil, err
		}
	}
	if err := s.applyChoices(messageChoices, fieldChoices); err != nil {
		return nil, err
	}
	return s, nil
}

// Message returns the message named full, or nil.
func (s *Schema) Message(full protoreflect.FullName) *Message { return s.byName[full] }

func (s *Schema) walk(md protoreflect.MessageDescriptor) (*Message, error) {
	if m := s.byName[md.FullName()]; m != nil {
		return m, nil
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByName(md.FullName())
	if err != nil {
		return nil, fmt.Errorf("message %s: %w", md.FullName(), err)
	}
	gt := reflect.TypeOf(mt.Zero().Interface()).Elem()
	pkg, err := goPackage(md.ParentFile())
	if err != nil {
		return nil, fmt.Errorf("message %s: %w", md.FullName(), err)
	}
	m := &Message{FullName: md.FullName(), GoName: gt.Name(), Pkg: pkg}
	s.byName[m.FullName] = m
	s.Messages = append(s.Messages, m)

	goNames := structFieldNames(gt)
	oneofs := map[protoreflect.FullName]*Oneof{}
	for i := range md.Oneofs().Len() {
		od := md.Oneofs().Get(i)
		if od.IsSynthetic() {
			continue
		}
		o := &Oneof{Name: string(od.Name()), GoName: goNames["oneof:"+string(od.Name())]}
		if o.GoName == "" {
			return nil, fmt.Errorf("message %s: no Go field for oneof %s", md.FullName(), od.Name())
		}
		oneofs[od.FullName()] = o
		m.Oneofs = append(m.Oneofs, o)
	}
	fds := md.Fields()
	for i := range fds.Len() {
		fd := fds.Get(i)
		f := &Field{
			Parent:   m,
			Number:   int(fd.Number()),
			Name:     string(fd.Name()),
			JSONName: fd.JSONName(),
			Kind:     fd.Kind(),
			Repeated: fd.Cardinality() == protoreflect.Repeated,
			Packed:   fd.IsPacked(),
			Optional: fd.HasPresence() && fd.Message() == nil && fd.ContainingOneof() != nil && fd.ContainingOneof().IsSynthetic(),
		}
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
			f.Oneof = oneofs[od.FullName()]
			f.Oneof.Fields = append(f.Oneof.Fields, f)
			// A member's Go name is its wrapper's field, named like a
			// struct field would be.
			f.GoName = goCamelCase(f.Name)
		} else if f.GoName = goNames[f.Name]; f.GoName == "" {
			return nil, fmt.Errorf("field %s.%s: no Go struct field", md.FullName(), f.Name)
		}
		if fd.IsMap() {
			return nil, fmt.Errorf("field %s.%s: maps are not supported", md.FullName(), f.Name)
		}
		if ed := fd.Enum(); ed != nil {
			et, err := protoregistry.GlobalTypes.FindEnumByName(ed.FullName())
			if err != nil {
				return nil, fmt.Errorf("field %s.%s: %w", md.FullName(), f.Name, err)
			}
			epkg, err := goPackage(ed.ParentFile())
			if err != nil {
				return nil, fmt.Errorf("field %s.%s: %w", md.FullName(), f.Name, err)
			}
			f.Enum = epkg.Alias + "." + reflect.TypeOf(et.New(0)).Name()
		}
		m.Fields = append(m.Fields, f)
	}
	sort.Slice(m.Fields, func(i, j int) bool { return m.Fields[i].Number < m.Fields[j].Number })
	for _, f := range m.Fields {
		if f.Kind == protoreflect.MessageKind || f.Kind == protoreflect.GroupKind {
			sub, err := s.walk(md.Fields().ByNumber(protoreflect.FieldNumber(f.Number)).Message())
			if err != nil {
				return nil, err
			}
			f.Message = sub
		}
	}
	return m, nil
}

// structFieldNames maps each field's proto name (from the protobuf struct
// tag) to the Go struct field's name, and "oneof:NAME" to a oneof's.
func structFieldNames(t reflect.Type) map[string]string {
	names := map[string]string{}
	for i := range t.NumField() {
		sf := t.Field(i)
		if o := sf.Tag.Get("protobuf_oneof"); o != "" {
			names["oneof:"+o] = sf.Name
			continue
		}
		for _, part := range strings.Split(sf.Tag.Get("protobuf"), ",") {
			if name, ok := strings.CutPrefix(part, "name="); ok {
				names[name] = sf.Name
			}
		}
	}
	return names
}

// goCamelCase is the generated Go name of a proto name as protoc-gen-go
// forms it for OTLP's names (lower-case words joined by underscores):
// "as_double" is "AsDouble".
func goCamelCase(s string) string {
	var b strings.Builder
	for _, w := range strings.Split(s, "_") {
		if w != "" {
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	return b.String()
}

// goPackage is a file's Go package (its go_package option) and otlpwire's
// alias for it: "tracepb" for .../otlp/trace/v1, "coltracepb" for
// .../otlp/collector/trace/v1.
func goPackage(fd protoreflect.FileDescriptor) (Package, error) {
	opts, _ := fd.Options().(*descriptorpb.FileOptions)
	path, _, _ := strings.Cut(opts.GetGoPackage(), ";")
	const root = "go.opentelemetry.io/proto/otlp/"
	rest, ok := strings.CutPrefix(path, root)
	if !ok {
		return Package{}, fmt.Errorf("file %s: go_package %q is not under %s", fd.Path(), path, root)
	}
	parts := strings.Split(rest, "/") // [collector] signal version
	if len(parts) < 2 {
		return Package{}, fmt.Errorf("file %s: unexpected go_package %q", fd.Path(), path)
	}
	alias := parts[len(parts)-2] + "pb"
	if parts[0] == "collector" {
		alias = "col" + alias
	}
	return Package{Path: path, Alias: alias}, nil
}

// Stem is the stem of the Go names of m's code: Choice.Name, else the Go
// type's last part with its first letter lower-cased ("event" for
// Span_Event).
func (m *Message) Stem() string {
	if m.Choice.Name != "" {
		return m.Choice.Name
	}
	n := m.GoName
	if i := strings.LastIndexByte(n, '_'); i >= 0 {
		n = n[i+1:]
	}
	return strings.ToLower(n[:1]) + n[1:]
}

// Type is the Go type the decoders fill for m: its Pipeline type if it has
// one, else the generated type.
func (m *Message) Type() string {
	if m.Choice.Pipeline != "" {
		return m.Choice.Pipeline
	}
	return m.GoType()
}

// GoField is f's field in its message's Type.
func (f *Field) GoField() string {
	if f.Parent.Choice.Pipeline != "" && f.Choice.PipelineName != "" {
		return f.Choice.PipelineName
	}
	return f.GoName
}
