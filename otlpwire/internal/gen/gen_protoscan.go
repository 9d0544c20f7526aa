package main

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// scanFile writes the record scanners: ScanSpan, which reads the fields of
// a Span record the choices name (FieldChoice.Scan) without decoding it,
// and ScanValue with the ValueKind of each AnyValue member.
func (g *protoDecode) scanFile() error {
	g.p("package otlpwire\n\n")
	g.p("// The record scanners: see span_scan.go, and internal/gen for where this\n// comes from.\n\n")
	span := g.s.Message(trace + "Span")
	if span == nil || !span.Choice.Record {
		return fmt.Errorf("ScanSpan: no Span record in the schema")
	}
	cases, err := g.scanCases(span, "s")
	if err != nil {
		return err
	}
	summary, err := scanSummary(span, "")
	if err != nil {
		return err
	}
	g.p("// SpanSummary is what ScanSpan reads of a span record: the fields span\n// metrics are made of (FieldChoice.Scan). Its bytes alias the record: a\n// caller that keeps them copies them.\ntype SpanSummary struct {\n%s}\n\n", summary)
	g.p(`// ScanSpan reads the span record rec (a Span message's encoding, as
// pipeline.Records.All yields it) into s, and for each keys[i] the value of
// the span's first attribute with that key into vals[i] (len(vals) >=
// len(keys)): the attribute's AnyValue record, aliasing rec; nil if no
// attribute has the key, empty but not nil for an attribute without a
// value. Attributes of events and links are not the span's.
//
// It reads only these fields, as proto.Unmarshal would decode them into a
// Span: the last of a repeated scalar field wins, and status messages
// merge, so a later one without a code keeps the code. It is false if rec
// is not a sequence of whole, valid fields; a record proto.Unmarshal
// decodes is always read (FuzzScanSpan). It does not check what it does
// not read (UTF-8, ids' lengths): the receivers' decoder checked the
// records it kept.
func ScanSpan(rec []byte, s *SpanSummary, keys []string, vals [][]byte) bool {
	*s = SpanSummary{}
	vals = vals[:len(keys)]
	clear(vals)
	for p := 0; p < len(rec); {
		// One-byte tags (fields 1 to 15) and lengths inline, as the
		// receivers' decoder reads them; anything else through
		// nextField.
		tag := rec[p]
		var f field
		switch {
		case tag&7 == 2 && tag >= 1<<3 && tag < 0x80 && p+1 < len(rec) && rec[p+1] < 0x80:
			a := p + 2
			z := a + int(rec[p+1])
			if z > len(rec) {
				return false
			}
			f = field{num: protowire.Number(tag >> 3), typ: protowire.BytesType, payload: rec[a:z:z]}
			p = z
		case tag&7 == 1 && tag >= 1<<3 && tag < 0x80 && p+9 <= len(rec):
			f = field{num: protowire.Number(tag >> 3), typ: protowire.Fixed64Type, v: binary.LittleEndian.Uint64(rec[p+1:])}
			p += 9
		default:
			var rest []byte
			var ok bool
			if f, rest, ok = nextField(rec[p:]); !ok {
				return false
			}
			p = len(rec) - len(rest)
		}
		switch {
%s		}
	}
	return true
}

`, cases)
	for _, f := range span.Fields {
		if f.Choice.Scan != "message" {
			continue
		}
		sub := f.Message
		cases, err := g.scanCases(sub, "s")
		if err != nil {
			return err
		}
		g.p(`// scan%[1]s reads a %[1]s record into s: a second %[2]s field merges into
// the first, so only what it has replaces s's.
func scan%[1]s(b []byte, s *SpanSummary) bool {
	for len(b) > 0 {
		f, rest, ok := nextField(b)
		if !ok {
			return false
		}
		b = rest
		switch {
%[3]s		}
	}
	return true
}

`, sub.GoName, f.Name, cases)
	}
	return g.scanValue()
}

// scanSummary is the SpanSummary fields of m's fields that have a Scan
// choice, those of a scanned message's included (named from path).
func scanSummary(m *Message, path string) (string, error) {
	var b strings.Builder
	for _, f := range m.Fields {
		var typ string
		switch c := f.Choice.Scan; {
		case c == "" || c == "attributes":
			continue
		case c == "message":
			sub, err := scanSummary(f.Message, path+f.Name+".")
			if err != nil {
				return "", err
			}
			b.WriteString(sub)
			continue
		case f.Kind == protoreflect.StringKind || f.Kind == protoreflect.BytesKind:
			typ = "[]byte"
		case f.Kind == protoreflect.EnumKind:
			typ = f.Enum
		case f.Kind == protoreflect.Fixed64Kind || f.Kind == protoreflect.Uint64Kind:
			typ = "uint64"
		default:
			return "", fmt.Errorf("field %s: Scan has no rule for %s", f.FullName(), f.Kind)
		}
		fmt.Fprintf(&b, "%s %s // %s%s\n", f.Choice.Scan, typ, path, f.Name)
	}
	return b.String(), nil
}

// wireTypeOf is the protowire type a scanned field of kind k has.
func wireTypeOf(k protoreflect.Kind) string {
	switch k {
	case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.MessageKind:
		return "protowire.BytesType"
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
		return "protowire.Fixed64Type"
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
		return "protowire.Fixed32Type"
	}
	return "protowire.VarintType"
}

// scanCases is the switch cases reading m's fields that have a Scan choice
// into the SpanSummary s.
func (g *protoDecode) scanCases(m *Message, s string) (string, error) {
	var b strings.Builder
	for _, f := range m.Fields {
		c := f.Choice.Scan
		if c == "" {
			continue
		}
		if f.Repeated != (c == "attributes") {
			return "", fmt.Errorf("field %s: Scan %q on a field that is repeated is only attributes", f.FullName(), c)
		}
		fmt.Fprintf(&b, "case f.num == %d && f.typ == %s:\n", f.Number, wireTypeOf(f.Kind))
		switch {
		case c == "attributes":
			if f.Message == nil || f.Message.Choice.AllocWith == "" {
				return "", fmt.Errorf("field %s: Scan attributes on what is not KeyValues", f.FullName())
			}
			b.WriteString("if len(keys) > 0 && !scanAttr(f.payload, keys, vals) {\nreturn false\n}\n")
		case c == "message":
			if f.Message == nil {
				return "", fmt.Errorf("field %s: Scan message on a scalar", f.FullName())
			}
			fmt.Fprintf(&b, "if !scan%s(f.payload, %s) {\nreturn false\n}\n", f.Message.GoName, s)
		case f.Kind == protoreflect.StringKind || f.Kind == protoreflect.BytesKind:
			fmt.Fprintf(&b, "%s.%s = f.payload\n", s, c)
		case f.Kind == protoreflect.EnumKind:
			fmt.Fprintf(&b, "%s.%s = %s(int32(f.v))\n", s, c, f.Enum)
		case f.Kind == protoreflect.Fixed64Kind || f.Kind == protoreflect.Uint64Kind:
			fmt.Fprintf(&b, "%s.%s = f.v\n", s, c)
		default:
			return "", fmt.Errorf("field %s: Scan has no rule for %s", f.FullName(), f.Kind)
		}
	}
	return b.String(), nil
}

// scanValue writes the ValueKind of each AnyValue member (numbered as its
// field) and ScanValue.
func (g *protoDecode) scanValue() error {
	av := g.s.Message(common + "AnyValue")
	if av == nil || len(av.Oneofs) != 1 {
		return fmt.Errorf("ScanValue: AnyValue has no one oneof")
	}
	g.p("// ValueKind is the member of an AnyValue's value oneof, numbered as its\n// field (ValueEmpty: none set).\ntype ValueKind uint8\n\n// The kinds of AnyValue.\nconst (\nValueEmpty ValueKind = 0\n")
	byType := map[string][]string{}
	var types []string
	for _, f := range av.Oneofs[0].Fields {
		name := f.Choice.ValueKind
		if name == "" {
			name = "Value" + goCamelCase(strings.TrimSuffix(f.Name, "_value"))
		}
		g.p("%s ValueKind = %d // %s\n", name, f.Number, f.Name)
		wt := wireTypeOf(f.Kind)
		if _, ok := byType[wt]; !ok {
			types = append(types, wt)
		}
		byType[wt] = append(byType[wt], fmt.Sprintf("f.num == %d", f.Number))
	}
	g.p(")\n\n")
	var bytesCase, bitsCase []string
	for _, wt := range types {
		c := fmt.Sprintf("(%s) && f.typ == %s", strings.Join(byType[wt], " || "), wt)
		if wt == "protowire.BytesType" {
			bytesCase = append(bytesCase, c)
		} else {
			bitsCase = append(bitsCase, c)
		}
	}
	g.p(`// ScanValue reads the value of the AnyValue record b (as ScanSpan yields
// it): the last field of the oneof, as proto.Unmarshal decodes it. A
// malformed record reads as the empty value.
func ScanValue(b []byte) ScannedValue {
	var w ScannedValue
	for len(b) > 0 {
		f, rest, ok := nextField(b)
		if !ok {
			return ScannedValue{}
		}
		b = rest
		switch {
		case %s:
			w = ScannedValue{Kind: ValueKind(f.num), Bytes: f.payload}
		case %s:
			w = ScannedValue{Kind: ValueKind(f.num), Bits: f.v}
		}
	}
	return w
}
`, strings.Join(bytesCase, ",\n"), strings.Join(bitsCase, ",\n"))
	return nil
}
