package config

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The transform processor's statements are OTTL. otelstep implements the
// subset the orchestrator renders, parsed here at load time so a statement
// outside it is refused at startup with its line:
//
//	replace_pattern(metric.name, "<regexp>", "<replacement>")          context metric
//	set(<path>, <path> | "<string>") [where <cond> (and <cond>)*]        context resource
//	  <path> := resource.attributes["key"] | attributes["key"] (resource context)
//	  <cond> := <operand> (== | !=) <operand>, <operand> := <path> | "<string>" | nil
//
// The replacement uses Go's regexp expansion ($1, ${1}), as OTTL does.

func (d *dec) transform(v *yaml.Node, path string) (*Transform, error) {
	t := &Transform{ErrorMode: "propagate"}
	err := d.mapping(v, path, []string{"error_mode", "metric_statements", "trace_statements", "log_statements"}, func(key string, kn, vn *yaml.Node) error {
		kp := join(path, key)
		if key == "error_mode" {
			s, err := d.str(vn, kp)
			if err == nil && s != "propagate" && s != "ignore" && s != "silent" {
				err = d.errf(vn, kp, "unknown error_mode %q (propagate, ignore or silent)", s)
			}
			t.ErrorMode = s
			return err
		}
		signal := map[string]string{"metric_statements": "metrics", "trace_statements": "traces", "log_statements": "logs"}[key]
		return d.sequence(vn, kp, func(i int, vn *yaml.Node) error {
			gp := fmt.Sprintf("%s[%d]", kp, i)
			if vn.Kind == yaml.ScalarNode {
				return d.errf(vn, gp, "statements without a context are not implemented: use {context: ..., statements: [...]}")
			}
			var ctx string
			var stmts *yaml.Node
			err := d.mapping(vn, gp, []string{"context", "statements", "conditions"}, func(key string, kn, vn *yaml.Node) error {
				var err error
				switch key {
				case "context":
					ctx, err = d.str(vn, join(gp, key))
				case "statements":
					stmts = vn
				case "conditions":
					err = d.errf(kn, join(gp, key), "conditions are not implemented")
				}
				return err
			})
			if err != nil {
				return err
			}
			switch ctx {
			case "metric", "resource":
				if ctx == "metric" && signal != "metrics" {
					return d.errf(vn, join(gp, "context"), "context metric is only valid in metric_statements")
				}
			case "":
				return d.errf(vn, gp, "context is required")
			default:
				return d.errf(vn, join(gp, "context"), "context %q is not implemented (metric, resource)", ctx)
			}
			return d.sequence(stmts, join(gp, "statements"), func(j int, sn *yaml.Node) error {
				sp := fmt.Sprintf("%s.statements[%d]", gp, j)
				text, err := d.str(sn, sp)
				if err != nil {
					return err
				}
				st, perr := parseStatement(text, ctx)
				if perr != nil {
					return d.errf(sn, sp, "statement %q: %v", text, perr)
				}
				st.Signal, st.Context, st.Text, st.Line = signal, ctx, text, sn.Line
				t.Statements = append(t.Statements, st)
				return nil
			})
		})
	})
	return t, err
}

type lexer struct {
	s   string
	pos int
}

func (l *lexer) skip() {
	for l.pos < len(l.s) && (l.s[l.pos] == ' ' || l.s[l.pos] == '\t' || l.s[l.pos] == '\n' || l.s[l.pos] == '\r') {
		l.pos++
	}
}

func (l *lexer) eof() bool { l.skip(); return l.pos >= len(l.s) }

func (l *lexer) peek(tok string) bool {
	l.skip()
	return strings.HasPrefix(l.s[l.pos:], tok)
}

func (l *lexer) expect(tok string) error {
	if !l.peek(tok) {
		return fmt.Errorf("expected %q at offset %d", tok, l.pos)
	}
	l.pos += len(tok)
	return nil
}

func (l *lexer) ident() string {
	l.skip()
	start := l.pos
	for l.pos < len(l.s) {
		c := l.s[l.pos]
		if c == '_' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			l.pos++
			continue
		}
		break
	}
	return l.s[start:l.pos]
}

func (l *lexer) str() (string, error) {
	l.skip()
	if l.pos >= len(l.s) || l.s[l.pos] != '"' {
		return "", fmt.Errorf("expected a string literal at offset %d", l.pos)
	}
	i := l.pos + 1
	for i < len(l.s) {
		if l.s[i] == '\\' {
			i += 2
			continue
		}
		if l.s[i] == '"' {
			break
		}
		i++
	}
	if i >= len(l.s) {
		return "", fmt.Errorf("unterminated string literal at offset %d", l.pos)
	}
	v, err := strconv.Unquote(l.s[l.pos : i+1])
	if err != nil {
		return "", fmt.Errorf("bad string literal %s: %v", l.s[l.pos:i+1], err)
	}
	l.pos = i + 1
	return v, nil
}

func (l *lexer) operand(ctx string) (Operand, error) {
	l.skip()
	if l.peek(`"`) {
		s, err := l.str()
		return Operand{Str: &s}, err
	}
	id := l.ident()
	if id == "nil" {
		return Operand{Nil: true}, nil
	}
	p, err := l.pathAfter(id, ctx)
	return Operand{Path: p}, err
}

func (l *lexer) pathAfter(id, ctx string) (*Path, error) {
	switch {
	case id == "metric.name" && ctx == "metric":
		return &Path{Field: "metric.name"}, nil
	case id == "resource.attributes" || (id == "attributes" && ctx == "resource"):
		if err := l.expect("["); err != nil {
			return nil, err
		}
		k, err := l.str()
		if err != nil {
			return nil, err
		}
		if err := l.expect("]"); err != nil {
			return nil, err
		}
		return &Path{Field: "resource.attributes", Key: k}, nil
	case id == "":
		return nil, fmt.Errorf("expected a path at offset %d", l.pos)
	}
	return nil, fmt.Errorf("path %q is not implemented in context %s (metric.name, resource.attributes[...])", id, ctx)
}

func parseStatement(text, ctx string) (Statement, error) {
	l := &lexer{s: text}
	var st Statement
	st.Func = l.ident()
	if err := l.expect("("); err != nil {
		return st, err
	}
	switch st.Func {
	case "replace_pattern":
		id := l.ident()
		p, err := l.pathAfter(id, ctx)
		if err != nil {
			return st, err
		}
		if p.Field != "metric.name" {
			return st, fmt.Errorf("replace_pattern is implemented for metric.name only")
		}
		st.Target = *p
		if err := l.expect(","); err != nil {
			return st, err
		}
		pat, err := l.str()
		if err != nil {
			return st, err
		}
		if st.Pattern, err = regexp.Compile(pat); err != nil {
			return st, fmt.Errorf("bad pattern: %v", err)
		}
		if err := l.expect(","); err != nil {
			return st, err
		}
		if st.Replacement, err = l.str(); err != nil {
			return st, err
		}
	case "set":
		op, err := l.operand(ctx)
		if err != nil {
			return st, err
		}
		if op.Path == nil || op.Path.Field != "resource.attributes" {
			return st, fmt.Errorf("set is implemented for resource.attributes[...] targets only")
		}
		st.Target = *op.Path
		if err := l.expect(","); err != nil {
			return st, err
		}
		if st.Value, err = l.operand(ctx); err != nil {
			return st, err
		}
		if st.Value.Nil {
			return st, fmt.Errorf("set to nil is not implemented (use delete_key)")
		}
	case "":
		return st, fmt.Errorf("expected a function call")
	default:
		return st, fmt.Errorf("function %q is not implemented (replace_pattern, set)", st.Func)
	}
	if err := l.expect(")"); err != nil {
		return st, err
	}
	if l.eof() {
		return st, nil
	}
	if l.ident() != "where" {
		return st, fmt.Errorf("unexpected text at offset %d", l.pos)
	}
	for {
		left, err := l.operand(ctx)
		if err != nil {
			return st, err
		}
		var op string
		switch {
		case l.peek("=="):
			op = "=="
		case l.peek("!="):
			op = "!="
		default:
			return st, fmt.Errorf("expected == or != at offset %d", l.pos)
		}
		l.pos += 2
		right, err := l.operand(ctx)
		if err != nil {
			return st, err
		}
		st.Where = append(st.Where, Cond{Left: left, Op: op, Right: right})
		if l.eof() {
			return st, nil
		}
		save := l.pos
		if w := l.ident(); w != "and" {
			l.pos = save
			return st, fmt.Errorf("only 'and' conditions are implemented, found %q at offset %d", w, save)
		}
	}
}
