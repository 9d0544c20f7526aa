package main

import (
	"maps"
	"strings"
	"testing"
)

// The JSON decode generator refuses what it cannot decode or a choice that
// names nothing, rather than leave a field out.
func TestJSONDecodeRefuses(t *testing.T) {
	s, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := genJSONDecodeWith(s, jsonDecodeChoices); err != nil {
		t.Fatalf("the choices as they are: %v", err)
	}
	for _, tc := range []struct {
		name   string
		change func(map[string]jsonDecodeChoice)
		want   string
	}{
		{"a bytes field neither id nor base64", func(c map[string]jsonDecodeChoice) {
			delete(c, common+"AnyValue.bytes_value")
		}, "field bytes_value: a bytes field must be a trace or span id (IDSize) or base64 (Base64)"},
		{"a field the schema does not have", func(c map[string]jsonDecodeChoice) {
			c[trace+"Span.nope"] = jsonDecodeChoice{Pool: true}
		}, trace + "Span.nope names no message or field"},
		{"a message the schema does not have", func(c map[string]jsonDecodeChoice) {
			c[trace+"Nope"] = jsonDecodeChoice{Pool: true}
		}, trace + "Nope names no message or field"},
		{"a pool for a plain field", func(c map[string]jsonDecodeChoice) {
			c[trace+"Span.name"] = jsonDecodeChoice{Pool: true}
		}, "Pool is for messages and for oneof members of scalar type"},
		{"a pair for a scalar member", func(c map[string]jsonDecodeChoice) {
			c[metrics+"NumberDataPoint.as_int"] = jsonDecodeChoice{Pair: true}
		}, "Pair is for oneof members of message type"},
		{"base64 on a string", func(c map[string]jsonDecodeChoice) {
			c[trace+"Span.name"] = jsonDecodeChoice{Base64: true}
		}, "Base64 is for bytes fields"},
		{"a spare that is no scalar member", func(c map[string]jsonDecodeChoice) {
			c[common+"AnyValue"] = jsonDecodeChoice{Spare: "array_value"}
		}, "Spare array_value is not a oneof member of scalar type"},
		{"a quick path on a field", func(c map[string]jsonDecodeChoice) {
			c[trace+"Span.name"] = jsonDecodeChoice{Quick: "quickName"}
		}, "Quick and Spare are for messages"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := maps.Clone(jsonDecodeChoices)
			tc.change(c)
			_, err := genJSONDecodeWith(s, c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// Every field the choices do not skip is in its message's JSON index under
// both names, and a skipped one under neither.
func TestJSONDecodeIndexesEveryField(t *testing.T) {
	s, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	files, err := genJSONDecode(s)
	if err != nil {
		t.Fatal(err)
	}
	src := string(files[0].Src)
	n := 0
	for _, m := range s.Messages {
		i := strings.Index(src, "\nfunc json"+ident(m.GoName)+"Index(")
		if i < 0 {
			t.Errorf("%s: no index", m.FullName)
			continue
		}
		body, _, _ := strings.Cut(src[i:], "\n}\n")
		for _, f := range m.Fields {
			want := `case "` + f.JSONName + `", "` + f.Name + `":`
			if f.JSONName == f.Name {
				want = `case "` + f.Name + `":`
			}
			if got := strings.Contains(body, want); got != (f.Choice.Skip == "") {
				t.Errorf("%s: %s in the index: %v", f.FullName(), want, got)
			}
			n++
		}
	}
	if n < 100 {
		t.Errorf("checked %d fields, the schema has more", n)
	}
}
