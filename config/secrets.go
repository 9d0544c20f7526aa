package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/otelstep/otelstep/redact"
	"go.yaml.in/yaml/v3"
	"golang.org/x/net/http/httpguts"
)

// This file keeps secrets out of what the config says and refuses a secret
// no request could carry: header values (an ingest token with a line feed
// or a carriage return, from a token file read with its line end, say)
// are checked here, at startup, rather than failing every export for the
// length of the retry budget.

// secretPlace reports whether the value under key, in a mapping holding
// siblings, holds a secret: a header (exporters' headers and headers_list,
// the telemetry readers'), or the Authorization resource attribute.
func secretPlace(key string, siblings *yaml.Node) bool {
	switch {
	case key == "headers", key == "headers_list", IsSecretKey(key):
		return true
	case key == "value":
		for i := 0; i+1 < len(siblings.Content); i += 2 {
			k, v := siblings.Content[i].Value, siblings.Content[i+1]
			if (k == "key" || k == "name") && v.Kind == yaml.ScalarNode && IsSecretKey(v.Value) {
				return true
			}
		}
	}
	return false
}

// noteVariables records, for the scalar n expanded from the variables
// names, the values that are secrets (n is in a secret place) and the
// first variable whose value no HTTP header value may hold.
func (d *dec) noteVariables(n *yaml.Node, names []string, env Lookup, secret bool) {
	if len(names) > 0 {
		if d.vars == nil {
			d.vars = map[*yaml.Node][]string{}
		}
		d.vars[n] = names
	}
	for _, nm := range names {
		v, ok := env(nm)
		if !ok {
			continue // its default was used
		}
		if secret {
			d.secretVals = append(d.secretVals, v)
		}
		if v == "" {
			if d.emptyVars == nil {
				d.emptyVars = map[*yaml.Node]string{}
			}
			d.emptyVars[n] = nm
		}
		if !httpguts.ValidHeaderFieldValue(v) && d.badVar[n] == "" {
			if d.badVar == nil {
				d.badVar = map[*yaml.Node]string{}
			}
			d.badVar[n] = nm
		}
	}
}

// headerValue refuses s, the value of n, if an HTTP header may not hold it,
// naming the environment variable it came from; what is refused is not
// shown. what says what the value is for.
func (d *dec) headerValue(n *yaml.Node, path, what, s string) error {
	if httpguts.ValidHeaderFieldValue(s) {
		return nil
	}
	c := DescribeInvalidHeader(s)
	if nm := d.badVar[n]; nm != "" {
		return d.errf(n, path, "the environment variable %s holds %s, which %s may not hold: no HTTP header can carry it and every export would fail (its value is not shown); set %s without it", nm, c, what, nm)
	}
	return d.errf(n, path, "the value holds %s, which %s may not hold (the value is not shown)", c, what)
}

// DescribeInvalidHeader names the first byte of s an HTTP header value may
// not hold, never showing s ("" when it may hold all of s).
func DescribeInvalidHeader(s string) string {
	if httpguts.ValidHeaderFieldValue(s) {
		return ""
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\t' || c >= 0x20 && c != 0x7f {
			continue
		}
		switch c {
		case '\n':
			return `a line feed (\n)`
		case '\r':
			return `a carriage return (\r)`
		case 0:
			return "a NUL byte"
		}
		return fmt.Sprintf("the control character 0x%02x", c)
	}
	return "a character not allowed in a header"
}

// headerValues checks the header values of n: a mapping of name to value,
// or a list of {name, value}.
func (d *dec) headerValues(n *yaml.Node, path, what string) error {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if err := d.headerValue(v, join(path, k.Value), what, v.Value); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			if item.Kind != yaml.MappingNode {
				continue
			}
			for j := 0; j+1 < len(item.Content); j += 2 {
				if k, v := item.Content[j], item.Content[j+1]; k.Value == "value" {
					if err := d.headerValue(v, fmt.Sprintf("%s[%d].value", path, i), what, v.Value); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// redactErr hides, in a config error, the values of the variables used in
// secret places: a value misplaced (a token where a duration goes) would
// be quoted by the error otherwise.
func (d *dec) redactErr(err error) error {
	if err == nil || len(d.secretVals) == 0 {
		return err
	}
	r := redact.New(d.secretVals...)
	if l, ok := err.(errList); ok {
		out := make(errList, len(l))
		for i, e := range l {
			out[i] = d.redactErr(e)
		}
		return out
	}
	var ce *Error
	if errors.As(err, &ce) {
		c := *ce
		c.Msg = r.Replace(c.Msg)
		return &c
	}
	return r.Error(err)
}

// minTokenLen is the length under which a token draws a warning: the
// token is hidden from every log line, error text and file otelstep
// writes, wherever it appears, so a token of a few characters (a
// placeholder such as "x") is masked inside ordinary words too.
const minTokenLen = 8

// warnShortToken warns when s, the token stamped on resources or sent in a
// header at n, is shorter than minTokenLen, never showing it.
func (d *dec) warnShortToken(n *yaml.Node, path, s string) {
	tok := s
	if _, t, ok := strings.Cut(s, " "); ok {
		tok = t // "Bearer x": the token is what follows the scheme
	}
	tok = strings.TrimSpace(tok)
	if tok == "" || len(tok) >= minTokenLen {
		return
	}
	from := "the value"
	if vs := d.vars[n]; len(vs) > 0 {
		from = "the environment variable " + strings.Join(vs, ", ")
	}
	d.warnings = append(d.warnings, Problem{Warning: true, Err: d.errf(n, path,
		"the token from %s is shorter than %d characters (%d): it is hidden from every log line and error text, so so short a value is masked inside ordinary words too, mangling messages (its value is not shown); set the real token",
		from, minTokenLen, len(tok)).(*Error)})
}
