// Package redacttest tells whether a text leaks a secret, for tests: by
// decoding what the text could carry it in, not by the redactor's own
// rules, so that it checks them.
package redacttest

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/otelstep/otelstep/redact"
)

var (
	percentRE   = regexp.MustCompile(`%[0-9A-Fa-f]{2}`)
	backslashRE = regexp.MustCompile(`\\(u[0-9A-Fa-f]{4}|x[0-9A-Fa-f]{2}|[nrtbfv"'\\/])`)
	base64RE    = regexp.MustCompile(`[A-Za-z0-9+/_-]{4,}`)
	hexRE       = regexp.MustCompile(`[0-9A-Fa-f]{8,}`)
)

// Leak describes where text holds a piece of secret of
// redact.Window(len(secret)) bytes or more, as it is, percent-encoded,
// backslash-escaped, base64 (standard or URL-safe) or hex; "" when it holds
// none. The description never holds the secret.
func Leak(text, secret string) string {
	if secret == "" {
		return ""
	}
	w := redact.Window(len(secret))
	views := []struct{ name, v string }{
		{"as it is", text},
		{"percent-encoded", percentRE.ReplaceAllStringFunc(text, func(m string) string {
			b, _ := hex.DecodeString(m[1:])
			return string(b)
		})},
		{"backslash-escaped", backslashRE.ReplaceAllStringFunc(text, func(m string) string {
			if m[1] == 'u' {
				v, _ := strconv.ParseUint(m[2:], 16, 32)
				return string(rune(v))
			}
			if m[1] == 'x' {
				b, _ := hex.DecodeString(m[2:])
				return string(b)
			}
			s, err := strconv.Unquote(`"` + strings.ReplaceAll(m, `\/`, `/`) + `"`)
			if err != nil {
				return m
			}
			return s
		})},
	}
	for _, v := range views {
		if at, n := piece(v.v, secret, w); n > 0 {
			return fmt.Sprintf("a %d-byte piece of the %d-byte secret, %s, at byte %d of the (decoded) text", n, len(secret), v.name, at)
		}
		for _, loc := range base64RE.FindAllStringIndex(v.v, -1) {
			run := strings.NewReplacer("-", "+", "_", "/").Replace(v.v[loc[0]:loc[1]])
			for off := range 4 {
				r := run[min(off, len(run)):]
				r = r[:len(r)/4*4]
				b, err := base64.StdEncoding.DecodeString(r)
				if err != nil {
					continue
				}
				if _, n := piece(string(b), secret, w); n > 0 {
					return fmt.Sprintf("a %d-byte piece of the %d-byte secret, base64 (%s), in the run at byte %d", n, len(secret), v.name, loc[0])
				}
			}
		}
		for _, loc := range hexRE.FindAllStringIndex(v.v, -1) {
			for off := range 2 {
				r := v.v[loc[0]+off : loc[1]]
				r = r[:len(r)/2*2]
				b, err := hex.DecodeString(r)
				if err != nil {
					continue
				}
				if _, n := piece(string(b), secret, w); n > 0 {
					return fmt.Sprintf("a %d-byte piece of the %d-byte secret, hex (%s), in the run at byte %d", n, len(secret), v.name, loc[0])
				}
			}
		}
	}
	return ""
}

// piece finds the longest piece of secret of w bytes or more in v: where
// and how long (0: none).
func piece(v, secret string, w int) (at, n int) {
	for i := 0; i+w <= len(secret); i++ {
		if j := strings.Index(v, secret[i:i+w]); j >= 0 {
			n = w
			for i+n < len(secret) && j+n < len(v) && v[j+n] == secret[i+n] {
				n++
			}
			return j, n
		}
	}
	return 0, 0
}

// Describe is a text for a test's failure message: its length and whether
// it is valid UTF-8, never its content.
func Describe(text string) string {
	return fmt.Sprintf("%d bytes of text (valid UTF-8: %v)", len(text), utf8.ValidString(text))
}
