// Package shellquote quotes words for a POSIX shell, for the commands
// otelstep prints for an operator to paste (the replay command to run).
package shellquote

import "strings"

// Quote returns s as it is when a shell reads it as one word unchanged
// (letters, digits and _-./:=,@%+), else in single quotes.
func Quote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-./:=,@%+", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
