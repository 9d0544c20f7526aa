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
	cases, err := g.scanCases(span, "s", "rec")
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
		// One-byte tags (fields 1 to 15) and lengths, and the times, inline,
		// as the receivers' decoder reads them; anything else through
		// readField.
		var num protowire.Number
		var typ protowire.Type
		var v uint64
		var a, z int
		switch tag := rec[p]; {
		case tag&7 == 2 && tag >= 1<<3 && tag < 0x80 && p+1 < len(rec) && rec[p+1] < 0x80:
			num, typ, a, z = protowire.Number(tag>>3), protowire.BytesType, p+2, p+2+int(rec[p+1])
			if z > len(rec) {
				return false
			}
			p = z
		case tag&7 == 1 && tag >= 1<<3 && tag < 0x80 && p+9 <= len(rec):
			num, typ, v = protowire.Number(tag>>3), protowire.Fixed64Type, binary.LittleEndian.Uint64(rec[p+1:])
			p += 9
		default:
			var next int
			if num, typ, v, a, z, next = readField(rec, p); next < 0 || num < protowire.MinValidNumber || num > protowire.MaxValidNumber {
				return false
			}
			p = next
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
		cases, err := g.scanCases(sub, "s", "b")
		if err != nil {
			return err
		}
		// The locals the cases read, the others left out.
		v, az := "_", "_, _"
		if strings.Contains(cases, "= v\n") || strings.Contains(cases, "(v)") {
			v = "v"
		}
		if strings.Contains(cases, "[a:z:z]") {
			az = "a, z"
		}
		g.p(`// scan%[1]s reads a %[1]s record into s: a second %[2]s field merges into
// the first, so only what it has replaces s's.
func scan%[1]s(b []byte, s *SpanSummary) bool {
	for p := 0; p < len(b); {
		num, typ, %[4]s, %[5]s, next := readField(b, p)
		if next < 0 || num < protowire.MinValidNumber || num > protowire.MaxValidNumber {
			return false
		}
		p = next
		switch {
%[3]s		}
	}
	return true
}

`, sub.GoName, f.Name, cases, v, az)
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
// into the SpanSummary s, the field read by readField from buf.
func (g *protoDecode) scanCases(m *Message, s, buf string) (string, error) {
	var b strings.Builder
	for _, f := range m.Fields {
		c := f.Choice.Scan
		if c == "" {
			continue
		}
		if f.Repeated != (c == "attributes") {
			return "", fmt.Errorf("field %s: Scan %q on a field that is repeated is only attributes", f.FullName(), c)
		}
		fmt.Fprintf(&b, "case num == %d && typ == %s:\n", f.Number, wireTypeOf(f.Kind))
		switch {
		case c == "attributes":
			if f.Message == nil || f.Message.Choice.AllocWith == "" {
				return "", fmt.Errorf("field %s: Scan attributes on what is not KeyValues", f.FullName())
			}
			fmt.Fprintf(&b, "if len(keys) > 0 && !scanAttr(%s[a:z:z], keys, vals) {\nreturn false\n}\n", buf)
		case c == "message":
			if f.Message == nil {
				return "", fmt.Errorf("field %s: Scan message on a scalar", f.FullName())
			}
			fmt.Fprintf(&b, "if !scan%s(%s[a:z:z], %s) {\nreturn false\n}\n", f.Message.GoName, buf, s)
		case f.Kind == protoreflect.StringKind || f.Kind == protoreflect.BytesKind:
			fmt.Fprintf(&b, "%s.%s = %s[a:z:z]\n", s, c, buf)
		case f.Kind == protoreflect.EnumKind:
			fmt.Fprintf(&b, "%s.%s = %s(int32(v))\n", s, c, f.Enum)
		case f.Kind == protoreflect.Fixed64Kind || f.Kind == protoreflect.Uint64Kind:
			fmt.Fprintf(&b, "%s.%s = v\n", s, c)
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
		byType[wt] = append(byType[wt], fmt.Sprintf("num == %d", f.Number))
	}
	g.p(")\n\n")
	var bytesCase, bitsCase []string
	for _, wt := range types {
		c := fmt.Sprintf("(%s) && typ == %s", strings.Join(byType[wt], " || "), wt)
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
	for p := 0; p < len(b); {
		num, typ, v, a, z, next := readField(b, p)
		if next < 0 || num < protowire.MinValidNumber || num > protowire.MaxValidNumber {
			return ScannedValue{}
		}
		p = next
		switch {
		case %s:
			w = ScannedValue{Kind: ValueKind(num), Bytes: b[a:z:z]}
		case %s:
			w = ScannedValue{Kind: ValueKind(num), Bits: v}
		}
	}
	return w
}
`, strings.Join(bytesCase, ",\n"), strings.Join(bitsCase, ",\n"))
	return nil
}
