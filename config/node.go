package config

import (
	"errors"
	"fmt"
	"math"
	"sort"
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

// errList is several config errors. A decoder goes on past an error to
// the next key or list item, so that one run reports every error the file
// holds: each mapping and list returns what its entries failed with.
type errList []error

func (l errList) Error() string {
	s := make([]string, len(l))
	for i, e := range l {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

func (l errList) Unwrap() []error { return l }

// add appends err, or the errors it holds.
func (l errList) add(err error) errList {
	switch e := err.(type) {
	case nil:
		return l
	case errList:
		for _, x := range e {
			l = l.add(x)
		}
		return l
	}
	return append(l, err)
}

// err is l as an error: nil, its one error, or l.
func (l errList) err() error {
	switch len(l) {
	case 0:
		return nil
	case 1:
		return l[0]
	}
	return l
}

// errReported stands for errors already reported (a component whose
// variable did not expand): non-nil, so decoding stops where it would,
// and never printed.
var errReported = errors.New("reported above")

// Errors returns each error err holds, one per problem in the file, in
// the file's order: a config refused by Load or Parse may have several.
func Errors(err error) []error {
	if err == nil {
		return nil
	}
	var out []error
	for _, e := range errList(nil).add(err) {
		if e != errReported {
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return lineOf(out[i]) < lineOf(out[j]) })
	return out
}

func lineOf(err error) int {
	var ce *Error
	if errors.As(err, &ce) && ce.Line > 0 {
		return ce.Line
	}
	return math.MaxInt // no line: after those with one
}

// dec walks a yaml.Node tree, checking keys strictly.
type dec struct {
	file string
	// failed holds the scalars whose variables did not expand.
	failed map[*yaml.Node]bool
	// failedLines are their lines: an error there is the failed value's.
	failedLines map[int]bool
	// ids are the component ids defined, valid or not: a reference to one
	// that failed is not reported again.
	ids map[string]bool
	// lines are the lines of the keys read, by dotted path (Check).
	lines map[string]int
	// emptyVars names, by the scalar expanded from it, a variable that is
	// set but empty.
	emptyVars map[*yaml.Node]string
	// warnings are what is accepted but likely a mistake.
	warnings []Problem
	// secretVals are the values of the variables used in secret places
	// (secrets.go); badVar names, by the scalar expanded from it, a
	// variable whose value no HTTP header may hold.
	secretVals []string
	badVar     map[*yaml.Node]string
	// vars names the variables each scalar was expanded from.
	vars map[*yaml.Node][]string
}

// varsOf is, by key of mapping n, the variables its value was expanded
// from; nil when none was.
func (d *dec) varsOf(n *yaml.Node) map[string][]string {
	var out map[string][]string
	for i := 0; n != nil && n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
		if vs := d.vars[n.Content[i+1]]; len(vs) > 0 {
			if out == nil {
				out = map[string][]string{}
			}
			out[n.Content[i].Value] = vs
		}
	}
	return out
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
	var errs errList
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := k.Value
		if seen[key] {
			errs = errs.add(d.errf(k, join(path, key), "duplicate key %q", key))
			continue
		}
		seen[key] = true
		if d.lines != nil {
			d.lines[join(path, key)] = k.Line
		}
		if known != nil && !contains(known, key) {
			errs = errs.add(d.errf(k, join(path, key), "unknown key %q (known: %s)", key, strings.Join(known, ", ")))
			continue
		}
		errs = errs.add(fn(key, k, v))
	}
	return errs.err()
}

// tainted reports whether a variable under n did not expand.
func (d *dec) tainted(n *yaml.Node) bool {
	if n == nil || len(d.failed) == 0 {
		return false
	}
	if d.failed[n] {
		return true
	}
	for _, c := range n.Content {
		if d.tainted(c) {
			return true
		}
	}
	return false
}

func (d *dec) sequence(n *yaml.Node, path string, fn func(i int, v *yaml.Node) error) error {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		return d.errf(n, path, "expected a list, got %s", kindName(n))
	}
	var errs errList
	for i, v := range n.Content {
		errs = errs.add(fn(i, v))
	}
	return errs.err()
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
