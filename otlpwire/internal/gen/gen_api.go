package main

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"text/template"

	"github.com/otelstep/otelstep/pipeline"
)

// The entry points of each signal (generated_api.go): the exported
// functions that decode and encode one signal's export request in each
// format, written once for the three requests of the schema rather than
// once per signal by hand. A signal is named by its request's
// MessageChoice.Name ("traces": DecodeTraces, AppendTracesRequest,
// pipeline.Traces, Batch.Traces); a request has one repeated field, its
// resources.

// apiSignal is what the entry points of one request are written from.
type apiSignal struct {
	Signal   string // "Traces"
	Stem     string // the protobuf decoder's method: "traces"
	Request  string // "ExportTraceServiceRequest"
	ReqType  string // "coltracepb.ExportTraceServiceRequest"
	Resource string // "ResourceSpans", the JSON writer's suffix
	ResType  string // "*pipeline.ResourceSpans"
	JSONName string // "resourceSpans"
	// Skip, PW: the JSON writers take the skip list and a pointWriter; a
	// signal whose writers take a pointWriter has an encoder type holding
	// what it carries (<Signal>Encoder, hand-written).
	Skip, PW bool
}

func genAPI(s *Schema) ([]File, error) {
	enc := &encGen{s: s, msgs: map[*Message]*encMsg{}}
	if err := enc.load(encodeChoices); err != nil {
		return nil, err
	}
	batch := reflect.TypeFor[pipeline.Batch]()
	var sigs []apiSignal
	for _, m := range s.Messages {
		if !isRequest(m) {
			continue
		}
		if len(m.Fields) != 1 || !m.Fields[0].Repeated || m.Fields[0].Message == nil || m.Choice.Name == "" {
			return nil, fmt.Errorf("request %s: the entry points expect one repeated message field and a name", m.FullName)
		}
		f := m.Fields[0]
		el := enc.msgs[f.Message]
		sig := apiSignal{
			Signal:   strings.ToUpper(m.Choice.Name[:1]) + m.Choice.Name[1:],
			Stem:     m.Stem(),
			Request:  m.GoName,
			ReqType:  m.GoType(),
			Resource: el.name,
			ResType:  el.goType,
			JSONName: f.JSONName,
			Skip:     el.skip,
			PW:       el.pw,
		}
		res := sig.ResType[strings.LastIndexByte(sig.ResType, '.')+1:]
		if bf, ok := batch.FieldByName(sig.Signal); !ok || bf.Type.Kind() != reflect.Slice || bf.Type.Elem().Kind() != reflect.Pointer || bf.Type.Elem().Elem().Name() != res {
			return nil, fmt.Errorf("request %s: pipeline.Batch has no field %s of type []%s", m.FullName, sig.Signal, sig.ResType)
		}
		sigs = append(sigs, sig)
	}
	var b bytes.Buffer
	if err := apiTemplate.Execute(&b, sigs); err != nil {
		return nil, err
	}
	return []File{{Name: "generated_api.go", Src: withImports(b.Bytes())}}, nil
}

var apiTemplate = template.Must(template.New("api").Parse(`package otlpwire

// The entry points of each signal: see proto_decode.go, proto_encode.go,
// json_decode.go and json_encode.go for what they do, and internal/gen for
// where this comes from.
{{range .}}
// Decode{{.Signal}}Owned decodes a protobuf {{.Request}} without
// copying it: the caller hands buf over, and neither it nor anyone else may
// modify buf afterwards (the result's strings and ids point into it).
// UnmarshalRequest is the copying form.
func Decode{{.Signal}}Owned(buf []byte) ([]{{.ResType}}, error) {
	return decodeOwned(buf, (*decoder).{{.Stem}})
}

// Append{{.Signal}}Request appends the encoding of an {{.Request}}
// holding xs to dst.
func (e *ProtoEncoder) Append{{.Signal}}Request(dst []byte, xs []{{.ResType}}) []byte {
	return e.append{{.Request}}(dst, xs)
}

// Decode{{.Signal}} parses an OTLP/JSON {{.Request}} as the spec and
// the OpenTelemetry Collector write it: hex trace and span ids, camelCase or
// snake_case field names, 64-bit integers as strings or numbers, enums as
// integers or names (a name the enum does not have is an error, as in the
// collector). Unknown fields are ignored.
func Decode{{.Signal}}(data []byte) (*{{.ReqType}}, error) {
	req := &{{.ReqType}}{}
	d := jsonDecoder{b: data}
	if err := d.document(func() error { return d.decode{{.Request}}(req) }); err != nil {
		return nil, fmt.Errorf("otlpwire: decode OTLP/JSON {{.Stem}}: %w", err)
	}
	return req, nil
}

// Append{{.Signal}} appends the OTLP/JSON encoding of an {{.Request}}
// holding xs to dst (no trailing newline).{{if .Skip}} Resource attributes
// whose key equals any of skipResourceKeys are left out (the Authorization
// token stays off disk).{{end}}
func Append{{.Signal}}(dst []byte, xs []{{.ResType}}{{if .Skip}}, skipResourceKeys ...string{{end}}) []byte {
	return append{{.Request}}(dst, xs{{if .Skip}}, skipResourceKeys{{end}}{{if .PW}}, &pointWriter{}{{end}})
}
{{if .PW}}
// Append{{.Signal}} appends the OTLP/JSON encoding of an {{.Request}}
// holding xs to dst, as the package-level Append{{.Signal}} does, with e's
// stored encodings and flushes.
func (e *{{.Signal}}Encoder) Append{{.Signal}}(dst []byte, xs []{{.ResType}}{{if .Skip}}, skipResourceKeys ...string{{end}}) []byte {
	return append{{.Request}}(dst, xs{{if .Skip}}, skipResourceKeys{{end}}, e.pointWriter())
}

// Append{{.Resource}} appends the OTLP/JSON encoding of one
// {{.Resource}}, as an element of a request's list (see RequestStart),
// with e's stored encodings and flushes.
func (e *{{.Signal}}Encoder) Append{{.Resource}}(dst []byte, x {{.ResType}}{{if .Skip}}, skipResourceKeys ...string{{end}}) []byte {
	return append{{.Resource}}(dst, x{{if .Skip}}, skipResourceKeys{{end}}, e.pointWriter())
}
{{else}}
// Append{{.Resource}} appends the OTLP/JSON encoding of one
// {{.Resource}}, as an element of a request's list (see RequestStart).
func Append{{.Resource}}(dst []byte, x {{.ResType}}{{if .Skip}}, skipResourceKeys ...string{{end}}) []byte {
	return append{{.Resource}}(dst, x{{if .Skip}}, skipResourceKeys{{end}})
}
{{end}}{{end}}
// DecodeRequestOwned decodes a protobuf export request of b.Signal into b,
// without copying buf (see DecodeTracesOwned): its resources, and its
// Items, counted once here for every stage after. On error b holds no
// resources.
func DecodeRequestOwned(b *pipeline.Batch, buf []byte) error {
	var err error
	switch b.Signal {
{{- range .}}
	case pipeline.{{.Signal}}:
		b.{{.Signal}}, err = Decode{{.Signal}}Owned(buf)
{{- end}}
	default:
		return fmt.Errorf("unknown signal %d", b.Signal)
	}
	if err != nil {
		return err
	}
	b.Items = pipeline.CountItems(b)
	return nil
}

// RequestStart returns how the OTLP/JSON of a non-empty export request of
// signal s begins, or "" for an unknown signal.
func RequestStart(s pipeline.Signal) string {
	switch s {
{{- range .}}
	case pipeline.{{.Signal}}:
		return ` + "`" + `{"{{.JSONName}}":[` + "`" + `
{{- end}}
	}
	return ""
}
`))
