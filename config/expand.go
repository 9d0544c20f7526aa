package config

import (
	"fmt"
	"strings"
)

// Lookup finds an environment variable; os.LookupEnv in production.
type Lookup func(name string) (string, bool)

// expand replaces ${env:NAME}, ${NAME}, ${env:NAME:-default} and ${NAME:-default}
// in s, and turns $$ into a literal $. It returns the names of the variables
// it used so their values can be treated as secrets where needed.
//
// Unlike the collector, an unset variable without a default is an error: the
// collector substitutes "" and fails much later with a message that does not
// name the variable.
func expand(s string, env Lookup) (out string, used []string, err error) {
	if !strings.Contains(s, "$") {
		return s, nil, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '$' {
			b.WriteByte(c)
			continue
		}
		if i+1 < len(s) && s[i+1] == '$' {
			b.WriteByte('$')
			i++
			continue
		}
		if i+1 >= len(s) || s[i+1] != '{' {
			b.WriteByte('$')
			continue
		}
		end := strings.IndexByte(s[i+2:], '}')
		if end < 0 {
			return "", nil, fmt.Errorf("unterminated variable reference %q", s[i:])
		}
		ref := s[i+2 : i+2+end]
		name, def, hasDef := strings.Cut(ref, ":-")
		if n, ok := strings.CutPrefix(name, "env:"); ok {
			name = n
		} else if strings.Contains(name, ":") {
			scheme, _, _ := strings.Cut(name, ":")
			return "", nil, fmt.Errorf("unsupported config provider %q in ${%s} (only env is implemented)", scheme, ref)
		}
		if !validEnvName(name) {
			return "", nil, fmt.Errorf("invalid environment variable name %q in ${%s}", name, ref)
		}
		v, ok := env(name)
		if !ok {
			if !hasDef {
				return "", nil, fmt.Errorf("environment variable %s is not set (referenced as ${%s})", name, ref)
			}
			v = def
		}
		used = append(used, name)
		b.WriteString(v)
		i += 2 + end
	}
	return b.String(), used, nil
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// isWholeReference reports whether s is exactly one ${...} reference, in
// which case the expanded value is typed as YAML would type it (the collector
// does the same: ${env:SLURM_JOB_ID} becomes an int, hence the orchestrator's
// convert action).
func isWholeReference(s string) bool {
	return strings.HasPrefix(s, "${") && strings.IndexByte(s, '}') == len(s)-1
}
