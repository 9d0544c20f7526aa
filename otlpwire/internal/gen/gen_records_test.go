package main

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// newRecGen is the records generator over a fresh schema, changed by
// mangle, with the encoders' choices changed by choices.
func newRecGen(t *testing.T, mangle func(*Schema), choices func(map[string]encodeChoice)) *recGen {
	t.Helper()
	s, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if mangle != nil {
		mangle(s)
	}
	c := maps.Clone(encodeChoices)
	if choices != nil {
		choices(c)
	}
	g := &recGen{encGen: &encGen{s: s, msgs: map[*Message]*encMsg{}}}
	if err := g.load(c); err != nil {
		t.Fatal(err)
	}
	return g
}

// The records generator refuses what its writers could not write as the
// JSON writer does: a field of a kind or with a choice they have no code
// for, a writer named other than fieldItems is told, a choice naming a
// message they do not write or one without the shape it reads.
func TestRecordsRefuses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mangle  func(*Schema)
		choices func(map[string]encodeChoice)
		records map[protoreflect.FullName]recordChoice
		want    string
	}{
		{"a repeated scalar", func(s *Schema) { s.Message(trace + "Span").Field("trace_state").Repeated = true }, nil, nil,
			"Span.trace_state: repeated string"},
		{"attributes with keys left out", nil, func(c map[string]encodeChoice) { c[trace+"Span.attributes"] = encodeChoice{SkipKeys: true} }, nil,
			"Span.attributes"},
		{"another direct writer", nil, func(c map[string]encodeChoice) {
			sc := c[trace+"ScopeSpans.spans"]
			sc.Direct = "appendSpan"
			c[trace+"ScopeSpans.spans"] = sc
		}, nil, "ScopeSpans.spans"},
		{"an item inside an item", func(s *Schema) { s.Message(trace + "Span").Field("status").Message = s.Message(logs + "LogRecord") },
			nil, nil, "Span.status"},
		{"a stale choice", nil, nil, map[protoreflect.FullName]recordChoice{trace + "Spam": {Quick: true}}, "Spam"},
		{"a choice on what no item holds", nil, nil, map[protoreflect.FullName]recordChoice{metrics + "Metric": {Quick: true}}, "Metric"},
		{"a quick shape not there", nil, nil, map[protoreflect.FullName]recordChoice{trace + "Status": {Quick: true}}, "Status: quick"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newRecGen(t, tc.mangle, tc.choices)
			records := tc.records
			if records == nil {
				records = recordChoices
			}
			_, err := g.file(records)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("records generator: %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

// Every field of every message under an item is read by its records writer
// and written in the JSON writer's order.
func TestRecordsEveryField(t *testing.T) {
	g := newRecGen(t, nil, nil)
	src, err := g.file(recordChoices)
	if err != nil {
		t.Fatal(err)
	}
	funcs := map[string]string{}
	for _, fn := range strings.Split(string(src), "\nfunc ")[1:] {
		name, _, _ := strings.Cut(fn, "(")
		funcs[name] = fn
	}
	n := 0
	for _, m := range g.order {
		fn := funcs[recordFunc(m)]
		cut := strings.LastIndex(fn, "b = append(b, '{')\n")
		if cut < 0 {
			t.Fatalf("%s: no %s in\n%s", m.FullName, recordFunc(m), src)
		}
		read, write := fn[:cut], fn[cut:]
		at := -1
		for i := range m.decl {
			fields := []*encField{&m.decl[i]}
			if m.decl[i].oneof != nil {
				fields = m.decl[i].fields
			}
			for _, f := range fields {
				if !strings.Contains(read, fmt.Sprintf("case %d:", f.Number)) {
					t.Errorf("%s: not read by %s", f.FullName(), recordFunc(m))
				}
				i := strings.Index(write, fmt.Sprintf("%q", f.JSONName))
				if i < 0 {
					t.Errorf("%s: not written by %s", f.FullName(), recordFunc(m))
				} else if i < at {
					t.Errorf("%s: written out of the JSON writer's order by %s", f.FullName(), recordFunc(m))
				}
				at = max(at, i)
				n++
			}
		}
	}
	if len(g.order) < 9 || n < 40 {
		t.Errorf("%d messages, %d fields checked", len(g.order), n)
	}
}
