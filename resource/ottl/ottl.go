// Package ottl parses and evaluates the subset of the OpenTelemetry
// Transformation Language that the transform processor's statements in the
// orchestrator's configs use. Parse is called while the config loads, so a
// statement outside the subset is refused at startup, naming it; nothing is
// silently ignored.
//
// The subset, by context:
//
//	metric:    replace_pattern(metric.name, "<regexp>", "<replacement>")
//	resource:  set(<path>, <value>) [where <condition>]
//
//	<path>      := resource.attributes["key"]   (or attributes["key"] in context resource)
//	<value>     := <path> | "string" | integer | float | true | false | nil
//	<condition> := <condition> or <condition> | <condition> and <condition>
//	             | not <condition> | ( <condition> ) | <value> == <value> | <value> != <value>
//	             | true | false
//
// "and" binds tighter than "or", and "not" tighter than both, as in OTTL.
// Comparisons follow OTTL: a missing attribute is nil; integers and floats
// compare by value (1 == 1.0); values of different types are never equal.
// replace_pattern's replacement uses Go's regexp expansion ($1, ${1}), as
// OTTL does.
package ottl

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
)

// Context is the OTTL context a statement runs in.
type Context string

const (
	ContextMetric   Context = "metric"
	ContextResource Context = "resource"
)

// Func is the function a statement calls.
type Func string

const (
	FuncReplacePattern Func = "replace_pattern"
	FuncSet            Func = "set"
)

// Field is what a path names.
type Field uint8

const (
	FieldMetricName         Field = iota + 1 // metric.name
	FieldResourceAttributes                  // resource.attributes["Key"]
)

// Path is a field a statement reads or writes.
type Path struct {
	Field Field
	Key   string // the attribute's key, for FieldResourceAttributes
}

func (p Path) String() string {
	if p.Field == FieldMetricName {
		return "metric.name"
	}
	return fmt.Sprintf("resource.attributes[%q]", p.Key)
}

// Value is an operand: a path or a literal. Exactly one of Path and Lit is
// set, or neither for nil.
type Value struct {
	Path *Path
	Lit  *commonpb.AnyValue // string, int, double or bool
}

// Cond is a where clause's boolean expression: a tree of And, Or and Not
// over comparisons and constants.
type Cond interface {
	// eval reports whether the condition holds for the resource r.
	eval(r *resourcepb.Resource) bool
}

// And holds when both sides hold.
type And struct{ L, R Cond }

// Or holds when either side holds.
type Or struct{ L, R Cond }

// Not holds when X does not.
type Not struct{ X Cond }

// Const is true or false.
type Const bool

// Compare is L == R, or L != R when Negate.
type Compare struct {
	L, R   Value
	Negate bool
}

func (c And) eval(r *resourcepb.Resource) bool { return c.L.eval(r) && c.R.eval(r) }
func (c Or) eval(r *resourcepb.Resource) bool  { return c.L.eval(r) || c.R.eval(r) }
func (c Not) eval(r *resourcepb.Resource) bool { return !c.X.eval(r) }
func (c Const) eval(*resourcepb.Resource) bool { return bool(c) }
func (c Compare) eval(r *resourcepb.Resource) bool {
	return equal(c.L.get(r), c.R.get(r)) != c.Negate
}

// Statement is one parsed transform statement.
type Statement struct {
	Context Context
	Text    string // as written, for messages
	Func    Func
	Target  Path
	// replace_pattern
	Pattern     *regexp.Regexp
	Replacement string
	// set
	Value Value
	Where Cond // nil: always
}

// Parse parses one statement of context ctx. The error says what is wrong
// and at which offset of text; the caller adds the statement's place in the
// file.
func Parse(text string, ctx Context) (*Statement, error) {
	switch ctx {
	case ContextMetric, ContextResource:
	default:
		return nil, fmt.Errorf("context %q is not implemented (metric, resource)", ctx)
	}
	p := &parser{lex: lexer{s: text}, ctx: ctx}
	st := &Statement{Context: ctx, Text: text}
	if err := p.statement(st); err != nil {
		return nil, err
	}
	return st, nil
}

// ApplyResource runs a resource-context set statement on r: when the where
// clause holds and the value is not nil, the target attribute is replaced
// in place or appended. Setting from a missing attribute does nothing, as
// in OTTL.
func (s *Statement) ApplyResource(r *resourcepb.Resource) {
	if s.Func != FuncSet || s.Target.Field != FieldResourceAttributes {
		return
	}
	if s.Where != nil && !s.Where.eval(r) {
		return
	}
	v := s.Value.get(r)
	if v == nil {
		return
	}
	kv := &commonpb.KeyValue{Key: s.Target.Key, Value: v}
	if i := find(r.GetAttributes(), s.Target.Key); i >= 0 {
		r.Attributes[i] = kv
	} else {
		r.Attributes = append(r.Attributes, kv)
	}
}

// Holds reports whether the statement's where clause holds for r (true
// without one).
func (s *Statement) Holds(r *resourcepb.Resource) bool {
	return s.Where == nil || s.Where.eval(r)
}

// get evaluates v against r: nil for nil, a missing attribute, or a path
// that has no value in a resource.
func (v Value) get(r *resourcepb.Resource) *commonpb.AnyValue {
	switch {
	case v.Lit != nil:
		return v.Lit
	case v.Path != nil && v.Path.Field == FieldResourceAttributes:
		if i := find(r.GetAttributes(), v.Path.Key); i >= 0 {
			return r.Attributes[i].Value
		}
	}
	return nil
}

func find(kvs []*commonpb.KeyValue, key string) int {
	for i, kv := range kvs {
		if kv.GetKey() == key {
			return i
		}
	}
	return -1
}

// equal is OTTL's ==: nil equals only nil (an attribute holding an empty
// AnyValue counts as nil), numbers compare by value across int and double,
// and values of other differing types are not equal. Bytes, arrays and
// maps compare by their encoding.
func equal(a, b *commonpb.AnyValue) bool {
	a, b = nilIfEmpty(a), nilIfEmpty(b)
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if x, ok := number(a); ok {
		y, ok := number(b)
		return ok && x == y
	}
	switch x := a.Value.(type) {
	case *commonpb.AnyValue_StringValue:
		y, ok := b.Value.(*commonpb.AnyValue_StringValue)
		return ok && x.StringValue == y.StringValue
	case *commonpb.AnyValue_BoolValue:
		y, ok := b.Value.(*commonpb.AnyValue_BoolValue)
		return ok && x.BoolValue == y.BoolValue
	case *commonpb.AnyValue_BytesValue:
		y, ok := b.Value.(*commonpb.AnyValue_BytesValue)
		return ok && string(x.BytesValue) == string(y.BytesValue)
	}
	return false
}

func nilIfEmpty(v *commonpb.AnyValue) *commonpb.AnyValue {
	if v == nil || v.Value == nil {
		return nil
	}
	return v
}

func number(v *commonpb.AnyValue) (float64, bool) {
	switch x := v.Value.(type) {
	case *commonpb.AnyValue_IntValue:
		return float64(x.IntValue), true
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue, true
	}
	return 0, false
}

// parser is a recursive-descent parser over lexer's tokens.
type parser struct {
	lex lexer
	ctx Context
}

func (p *parser) statement(st *Statement) error {
	name := p.lex.ident()
	if name == "" {
		return fmt.Errorf("expected a function call at offset %d", p.lex.pos)
	}
	if err := p.lex.expect("("); err != nil {
		return err
	}
	st.Func = Func(name)
	switch {
	case st.Func == FuncReplacePattern && p.ctx == ContextMetric:
		if err := p.replacePattern(st); err != nil {
			return err
		}
	case st.Func == FuncSet && p.ctx == ContextResource:
		if err := p.set(st); err != nil {
			return err
		}
	case st.Func == FuncReplacePattern || st.Func == FuncSet:
		return fmt.Errorf("function %s is not implemented in context %s (metric: replace_pattern; resource: set)", name, p.ctx)
	default:
		return fmt.Errorf("function %q is not implemented (metric: replace_pattern; resource: set)", name)
	}
	if err := p.lex.expect(")"); err != nil {
		return err
	}
	if p.lex.eof() {
		return nil
	}
	at := p.lex.pos
	if w := p.lex.ident(); w != "where" {
		return fmt.Errorf("unexpected %q at offset %d (expected where or the end)", p.lex.rest(at), at)
	}
	if p.ctx == ContextMetric {
		return fmt.Errorf("where in context metric is not implemented")
	}
	c, err := p.or()
	if err != nil {
		return err
	}
	if !p.lex.eof() {
		return fmt.Errorf("unexpected %q at offset %d", p.lex.rest(p.lex.pos), p.lex.pos)
	}
	st.Where = c
	return nil
}

func (p *parser) replacePattern(st *Statement) error {
	at := p.lex.pos
	path, err := p.path(p.lex.ident(), at)
	if err != nil {
		return err
	}
	if path.Field != FieldMetricName {
		return fmt.Errorf("replace_pattern is implemented for metric.name only")
	}
	st.Target = *path
	if err := p.lex.expect(","); err != nil {
		return err
	}
	pat, err := p.lex.str()
	if err != nil {
		return err
	}
	if st.Pattern, err = regexp.Compile(pat); err != nil {
		return fmt.Errorf("bad pattern %q: %w", pat, err)
	}
	if err := p.lex.expect(","); err != nil {
		return err
	}
	st.Replacement, err = p.lex.str()
	return err
}

func (p *parser) set(st *Statement) error {
	at := p.lex.pos
	target, err := p.value()
	if err != nil {
		return err
	}
	if target.Path == nil || target.Path.Field != FieldResourceAttributes {
		return fmt.Errorf("set's target at offset %d must be resource.attributes[\"key\"]", at)
	}
	st.Target = *target.Path
	if err := p.lex.expect(","); err != nil {
		return err
	}
	at = p.lex.pos
	if st.Value, err = p.value(); err != nil {
		return err
	}
	if st.Value.Path == nil && st.Value.Lit == nil {
		return fmt.Errorf("set to nil at offset %d is not implemented (delete_key is not either)", at)
	}
	return nil
}

// or := and { "or" and }
func (p *parser) or() (Cond, error) {
	l, err := p.and()
	if err != nil {
		return nil, err
	}
	for p.lex.keyword("or") {
		r, err := p.and()
		if err != nil {
			return nil, err
		}
		l = Or{l, r}
	}
	return l, nil
}

// and := not { "and" not }
func (p *parser) and() (Cond, error) {
	l, err := p.not()
	if err != nil {
		return nil, err
	}
	for p.lex.keyword("and") {
		r, err := p.not()
		if err != nil {
			return nil, err
		}
		l = And{l, r}
	}
	return l, nil
}

// not := "not" not | "(" or ")" | comparison | true | false
func (p *parser) not() (Cond, error) {
	if p.lex.keyword("not") {
		x, err := p.not()
		if err != nil {
			return nil, err
		}
		return Not{x}, nil
	}
	if p.lex.peek("(") {
		p.lex.pos++
		c, err := p.or()
		if err != nil {
			return nil, err
		}
		return c, p.lex.expect(")")
	}
	at := p.lex.pos
	l, err := p.value()
	if err != nil {
		return nil, err
	}
	op := p.lex.op()
	switch op {
	case "==", "!=":
	case "":
		if b, ok := l.Lit.GetValue().(*commonpb.AnyValue_BoolValue); ok && l.Path == nil {
			return Const(b.BoolValue), nil
		}
		return nil, fmt.Errorf("expected == or != after the operand at offset %d", at)
	default:
		return nil, fmt.Errorf("comparison %s at offset %d is not implemented (== and != are)", op, p.lex.pos-len(op))
	}
	r, err := p.value()
	if err != nil {
		return nil, err
	}
	return Compare{L: l, R: r, Negate: op == "!="}, nil
}

// value := path | string | number | true | false | nil
func (p *parser) value() (Value, error) {
	p.lex.skip()
	at := p.lex.pos
	if p.lex.peek(`"`) {
		s, err := p.lex.str()
		return Value{Lit: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}}, err
	}
	if n := p.lex.number(); n != "" {
		if i, err := strconv.ParseInt(n, 10, 64); err == nil {
			return Value{Lit: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: i}}}, nil
		}
		f, err := strconv.ParseFloat(n, 64)
		if err != nil {
			return Value{}, fmt.Errorf("bad number %q at offset %d", n, at)
		}
		return Value{Lit: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: f}}}, nil
	}
	id := p.lex.ident()
	switch id {
	case "nil":
		return Value{}, nil
	case "true", "false":
		return Value{Lit: &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: id == "true"}}}, nil
	}
	path, err := p.path(id, at)
	return Value{Path: path}, err
}

func (p *parser) path(id string, at int) (*Path, error) {
	switch {
	case id == "":
		return nil, fmt.Errorf("expected a path or a value at offset %d", at)
	case id == "metric.name" && p.ctx == ContextMetric:
		return &Path{Field: FieldMetricName}, nil
	case id == "resource.attributes" || id == "attributes" && p.ctx == ContextResource:
		if err := p.lex.expect("["); err != nil {
			return nil, err
		}
		k, err := p.lex.str()
		if err != nil {
			return nil, err
		}
		if err := p.lex.expect("]"); err != nil {
			return nil, err
		}
		if p.lex.peek("[") {
			return nil, fmt.Errorf("nested keys at offset %d are not implemented", p.lex.pos)
		}
		if id == "resource.attributes" && p.ctx == ContextMetric {
			return nil, fmt.Errorf("path resource.attributes at offset %d is not implemented in context metric", at)
		}
		return &Path{Field: FieldResourceAttributes, Key: k}, nil
	}
	if p.lex.peek("(") {
		return nil, fmt.Errorf("function %q at offset %d is not implemented in a value", id, at)
	}
	return nil, fmt.Errorf("path %q at offset %d is not implemented in context %s (metric: metric.name; resource: resource.attributes[\"key\"])", id, at, p.ctx)
}

type lexer struct {
	s   string
	pos int
}

func (l *lexer) skip() {
	for l.pos < len(l.s) && strings.IndexByte(" \t\r\n", l.s[l.pos]) >= 0 {
		l.pos++
	}
}

func (l *lexer) eof() bool { l.skip(); return l.pos >= len(l.s) }

func (l *lexer) rest(at int) string {
	r := l.s[at:]
	if len(r) > 20 {
		r = r[:20] + "…"
	}
	return r
}

func (l *lexer) peek(tok string) bool {
	l.skip()
	return strings.HasPrefix(l.s[l.pos:], tok)
}

func (l *lexer) expect(tok string) error {
	if !l.peek(tok) {
		if l.pos >= len(l.s) {
			return fmt.Errorf("expected %q at the end", tok)
		}
		return fmt.Errorf("expected %q at offset %d, found %q", tok, l.pos, l.rest(l.pos))
	}
	l.pos += len(tok)
	return nil
}

func isIdent(c byte) bool {
	return c == '_' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// ident consumes an identifier (dotted, like resource.attributes).
func (l *lexer) ident() string {
	l.skip()
	start := l.pos
	for l.pos < len(l.s) && isIdent(l.s[l.pos]) {
		l.pos++
	}
	return l.s[start:l.pos]
}

// keyword consumes the word kw if it comes next as a whole word.
func (l *lexer) keyword(kw string) bool {
	l.skip()
	if !strings.HasPrefix(l.s[l.pos:], kw) {
		return false
	}
	end := l.pos + len(kw)
	if end < len(l.s) && isIdent(l.s[end]) {
		return false
	}
	l.pos = end
	return true
}

// number consumes a numeric literal (an optional sign, digits, a fraction
// and an exponent), or nothing.
func (l *lexer) number() string {
	l.skip()
	i := l.pos
	if i < len(l.s) && (l.s[i] == '-' || l.s[i] == '+') {
		i++
	}
	if i >= len(l.s) || !(l.s[i] >= '0' && l.s[i] <= '9' || l.s[i] == '.' && i+1 < len(l.s) && l.s[i+1] >= '0' && l.s[i+1] <= '9') {
		return ""
	}
	for i < len(l.s) && (l.s[i] >= '0' && l.s[i] <= '9' || strings.IndexByte(".eE", l.s[i]) >= 0 ||
		(l.s[i] == '-' || l.s[i] == '+') && (l.s[i-1] == 'e' || l.s[i-1] == 'E')) {
		i++
	}
	n := l.s[l.pos:i]
	l.pos = i
	return n
}

// op consumes a comparison operator, or nothing.
func (l *lexer) op() string {
	l.skip()
	for _, op := range []string{"==", "!=", "<=", ">=", "<", ">"} {
		if strings.HasPrefix(l.s[l.pos:], op) {
			l.pos += len(op)
			return op
		}
	}
	return ""
}

func (l *lexer) str() (string, error) {
	l.skip()
	if l.pos >= len(l.s) || l.s[l.pos] != '"' {
		return "", fmt.Errorf("expected a string literal at offset %d", l.pos)
	}
	i := l.pos + 1
	for i < len(l.s) && l.s[i] != '"' {
		if l.s[i] == '\\' {
			i++
		}
		i++
	}
	if i >= len(l.s) {
		return "", fmt.Errorf("unterminated string literal at offset %d", l.pos)
	}
	v, err := strconv.Unquote(l.s[l.pos : i+1])
	if err != nil {
		return "", fmt.Errorf("bad string literal %s at offset %d: %w", l.s[l.pos:i+1], l.pos, err)
	}
	l.pos = i + 1
	return v, nil
}
