package main

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// The protobuf decode generator refuses what it would get wrong: each case
// changes a loaded schema as a new OTLP release or a careless choice could.
func TestProtoDecodeRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(s *Schema)
		want   string
	}{
		{"a kind without a rule", func(s *Schema) {
			s.Message(trace + "Span").Field("flags").Kind = protoreflect.FloatKind
		}, "Span.flags: kind float"},
		{"two fields on one list", func(s *Schema) {
			span := s.Message(trace + "Span")
			ev := *span.Field("events")
			ev.Number, ev.Name = 17, "more_events"
			span.Fields = append(span.Fields, &ev)
		}, "share the list"},
		{"a message at two depths", func(s *Schema) {
			span := s.Message(trace + "Span")
			res := *s.Message(trace + "ResourceSpans").Field("resource")
			res.Parent, res.Number, res.Name = span, 17, "resource"
			span.Fields = append(span.Fields, &res)
		}, "Resource is at depth"},
		{"a repeated kind without a packed reader", func(s *Schema) {
			f := s.Message(metrics + "HistogramDataPoint").Field("bucket_counts")
			f.Kind = protoreflect.Sfixed32Kind
		}, "repeated sfixed32"},
		{"a record outside a pipeline type", func(s *Schema) {
			s.Message(trace + "ScopeSpans").Choice.Pipeline = ""
		}, "records are one repeated field of a pipeline type"},
		{"a scanned field of a kind ScanSpan cannot read", func(s *Schema) {
			s.Message(trace + "Span").Field("flags").Choice.Scan = "Flags"
		}, "Scan has no rule for fixed32"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Load()
			if err != nil {
				t.Fatal(err)
			}
			tc.change(s)
			_, err = genProtoDecode(s)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// A field the choices skip is in no field table and no decode: the
// decoder skips it like an unknown field.
func TestProtoDecodeSkip(t *testing.T) {
	s, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	s.Message(trace + "Span").Field("flags").Choice.Skip = "test"
	files, err := genProtoDecode(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		src := string(f.Src)
		if strings.Contains(src, `16: "flags"`) || strings.Contains(src, "case 16<<3") {
			t.Errorf("%s: the skipped Span.flags is still decoded", f.Name)
		}
	}
	if !strings.Contains(string(files[0].Src), `6: "flags"`) {
		t.Errorf("Link.flags, not skipped, is gone")
	}
}
