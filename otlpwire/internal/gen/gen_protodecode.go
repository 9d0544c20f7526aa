package main

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// genProtoDecode writes the protobuf decode: per message its decode switch
// and field table, the validator and the record scanners.
func genProtoDecode(s *Schema) ([]File, error) {
	var b bytes.Buffer
	b.WriteString("package otlpwire\n\n")
	if err := fieldTables(&b, s); err != nil {
		return nil, err
	}
	return []File{{Name: "generated_proto_decode.go", Src: b.Bytes()}}, nil
}

// fieldTables writes each message's field table: its handled fields' names
// by number, for errors (a known field with an unexpected wire type) and
// the schema test. Messages sharing a table must have the same fields.
func fieldTables(b *bytes.Buffer, s *Schema) error {
	tables, owner := map[string]string{}, map[string]*Message{}
	for _, m := range s.Messages {
		v := m.Choice.FieldsVar
		if v == "" {
			return fmt.Errorf("message %s: no FieldsVar in the choices", m.FullName)
		}
		var parts []string
		for _, f := range m.Fields {
			if f.Choice.Skip == "" {
				parts = append(parts, strconv.Itoa(f.Number)+": "+strconv.Quote(f.Name))
			}
		}
		table := "[]string{" + strings.Join(parts, ", ") + "}"
		if prev, ok := tables[v]; ok {
			if prev != table {
				return fmt.Errorf("messages %s and %s share %s but not their fields", owner[v].FullName, m.FullName, v)
			}
			continue
		}
		tables[v], owner[v] = table, m
		fmt.Fprintf(b, "// %s is %s's field names by number.\nvar %s = %s\n\n", v, m.GoName, v, table)
	}
	return nil
}
