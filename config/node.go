package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Error is a config error with the place in the file it refers to.
type Error struct {
	File string
	Line int    // 0 when unknown
	Path string // dotted path of the key, e.g. receivers.prometheus.config
	Msg  string
}

func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	if e.Path != "" {
		return fmt.Sprintf("%s: %s: %s", loc, e.Path, e.Msg)
	}
	return fmt.Sprintf("%s: %s", loc, e.Msg)
}

// dec walks a yaml.Node tree, checking keys strictly.
type dec struct {
	file string
	// secretVals are the values of the variables used in secret places
	// (secrets.go); badVar names, by the scalar expanded from it, a
	// variable whose value no HTTP header may hold.
	secretVals []string
	badVar     map[*yaml.Node]string
}

func (d *dec) errf(n *yaml.Node, path, format string, args ...any) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &Error{File: d.file, Line: line, Path: path, Msg: fmt.Sprintf(format, args...)}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

// mapping calls fn for each key of a mapping node, refusing keys not in
// known (when known is non-nil). A null node is an empty mapping.
func (d *dec) mapping(n *yaml.Node, path string, known []string, fn func(key string, k, v *yaml.Node) error) error {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return d.errf(n, path, "expected a mapping, got %s", kindName(n))
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := k.Value
		if seen[key] {
			return d.errf(k, join(path, key), "duplicate key %q", key)
		}
		seen[key] = true
		if known != nil && !contains(known, key) {
			return d.errf(k, join(path, key), "unknown key %q (known: %s)", key, strings.Join(known, ", "))
		}
		if err := fn(key, k, v); err != nil {
			return err
		}
	}
	return nil
}

func (d *dec) sequence(n *yaml.Node, path string, fn func(i int, v *yaml.Node) error) error {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		return d.errf(n, path, "expected a list, got %s", kindName(n))
	}
	for i, v := range n.Content {
		if err := fn(i, v); err != nil {
			return err
		}
	}
	return nil
}

func (d *dec) str(n *yaml.Node, path string) (string, error) {
	if isNull(n) {
		return "", nil
	}
	if n.Kind != yaml.ScalarNode {
		return "", d.errf(n, path, "expected a string, got %s", kindName(n))
	}
	return n.Value, nil
}

func (d *dec) strList(n *yaml.Node, path string) ([]string, error) {
	var out []string
	err := d.sequence(n, path, func(i int, v *yaml.Node) error {
		s, err := d.str(v, fmt.Sprintf("%s[%d]", path, i))
		out = append(out, s)
		return err
	})
	return out, err
}

func (d *dec) boolean(n *yaml.Node, path string) (bool, error) {
	if n.Kind != yaml.ScalarNode {
		return false, d.errf(n, path, "expected true or false, got %s", kindName(n))
	}
	b, err := strconv.ParseBool(n.Value)
	if err != nil {
		return false, d.errf(n, path, "expected true or false, got %q", n.Value)
	}
	return b, nil
}

func (d *dec) integer(n *yaml.Node, path string) (int, error) {
	if n.Kind != yaml.ScalarNode {
		return 0, d.errf(n, path, "expected an integer, got %s", kindName(n))
	}
	v, err := strconv.Atoi(n.Value)
	if err != nil {
		return 0, d.errf(n, path, "expected an integer, got %q", n.Value)
	}
	if v < 0 {
		return 0, d.errf(n, path, "must not be negative, got %d", v)
	}
	return v, nil
}

// duration accepts Go durations ("15s", "1m30s") and Prometheus ones ("1d").
func (d *dec) duration(n *yaml.Node, path string) (time.Duration, error) {
	if n.Kind != yaml.ScalarNode {
		return 0, d.errf(n, path, "expected a duration, got %s", kindName(n))
	}
	s := n.Value
	if v, err := time.ParseDuration(s); err == nil {
		if v < 0 {
			return 0, d.errf(n, path, "duration must not be negative, got %q", s)
		}
		return v, nil
	}
	if v, ok := promDuration(s); ok {
		return v, nil
	}
	return 0, d.errf(n, path, "expected a duration like 15s or 1m, got %q", s)
}

func promDuration(s string) (time.Duration, bool) {
	units := map[byte]time.Duration{'d': 24 * time.Hour, 'w': 7 * 24 * time.Hour, 'y': 365 * 24 * time.Hour}
	if len(s) < 2 {
		return 0, false
	}
	u, ok := units[s[len(s)-1]]
	if !ok {
		return 0, false
	}
	v, err := strconv.Atoi(s[:len(s)-1])
	if err != nil || v < 0 {
		return 0, false
	}
	return time.Duration(v) * u, true
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	case yaml.AliasNode:
		return "an alias"
	}
	return "nothing"
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
