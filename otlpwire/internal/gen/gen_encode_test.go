package main

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// The encoders' generator refuses what it cannot write faithfully: a choice
// naming no field, a choice that does not fit its field, and a field of a
// kind it has no code for (OTLP gaining a float or a map would fail
// go generate, not drop the field).
func TestEncodeRefuses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		choices map[string]encodeChoice
		mangle  func(*Schema)
		want    string
	}{
		{"stale choice", map[string]encodeChoice{trace + "Span.nope": {Flush: true}}, nil, "Span.nope"},
		{"flush on a scalar", map[string]encodeChoice{trace + "Span.name": {Flush: true}}, nil, "Span.name"},
		{"point time on a string", map[string]encodeChoice{trace + "Span.name": {PointTime: 1}}, nil, "Span.name"},
		{"skip keys off attributes", map[string]encodeChoice{trace + "Span.events": {SkipKeys: true}}, nil, "Span.events"},
		{"records of no record", map[string]encodeChoice{metrics + "ScopeMetrics.metrics": {Records: "Records"}}, nil, "ScopeMetrics.metrics"},
		{"a float", nil, func(s *Schema) { s.Message(trace + "Span").Field("name").Kind = protoreflect.FloatKind }, "Span.name"},
		{"a repeated bool", nil, func(s *Schema) {
			s.Message(trace + "Span").Field("events").Kind = protoreflect.BoolKind
			s.Message(trace + "Span").Field("events").Message = nil
		}, "Span.events"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Load()
			if err != nil {
				t.Fatal(err)
			}
			if tc.mangle != nil {
				tc.mangle(s)
			}
			g := &encGen{s: s, msgs: map[*Message]*encMsg{}}
			err = g.load(tc.choices)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("load: %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

// Every field of every message is written by its message's functions in
// the generated code: the size pass, the append pass and the JSON writer.
func TestEncodeEveryField(t *testing.T) {
	s, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	files, err := genEncode(s)
	if err != nil {
		t.Fatal(err)
	}
	funcs := map[string][]string{}
	for _, f := range files {
		funcs[f.Name] = strings.Split(string(f.Src), "\nfunc ")
	}
	// of returns the text of the functions of file whose signature starts
	// with prefix and takes the message type (or a slice of it).
	of := func(file, prefix, goType string) string {
		var b strings.Builder
		for _, fn := range funcs[file] {
			sig, _, _ := strings.Cut(fn, "{")
			if strings.HasPrefix(fn, prefix) && (strings.Contains(sig, " "+goType+")") || strings.Contains(sig, "[]"+goType+")") || strings.Contains(sig, " "+goType+",")) {
				b.WriteString(fn)
			}
		}
		return b.String()
	}
	g := &encGen{s: s, msgs: map[*Message]*encMsg{}}
	if err := g.load(encodeChoices); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range s.Messages {
		em := g.msgs[m]
		if strings.HasPrefix(m.GoName, "Export") {
			continue // the request's one field is its functions' argument
		}
		code := map[string]string{
			"size pass":   of("generated_proto_encode.go", "(e *ProtoEncoder) size", em.goType),
			"append pass": of("generated_proto_encode.go", "(e *ProtoEncoder) append", em.goType),
			"JSON writer": of("generated_json_encode.go", "append", em.goType),
		}
		for _, f := range em.allFields() {
			ref := "m." + f.goName
			if f.Oneof != nil {
				ref = "*" + f.WrapperGoType() + ":"
			}
			for what, c := range code {
				if !strings.Contains(c, ref) {
					t.Errorf("%s: not in the %s of %s (%q)", f.FullName(), what, m.GoName, ref)
				}
				n++
			}
		}
	}
	if n < 3*100 {
		t.Errorf("%d checks", n)
	}
}
