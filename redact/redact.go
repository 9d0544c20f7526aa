// Package redact hides secrets (the ingest token, header values) in text
// before it reaches a log line, an error message or the terminal: the one
// redactor every such path goes through (the log handler, the OTLP/HTTP
// sink's reading of a backend's answer, replay's messages, validate's
// output).
//
// A secret is hidden in the forms text may carry it in, not only as its
// exact value:
//
//   - any piece of it of Window(len) bytes or more: a backend's message cut
//     short (by the backend, or by us) leaks less than that;
//   - standard and URL-safe base64, at each of the three alignments a
//     secret can have inside the encoded text (so the base64 of
//     "Bearer <token>", of "user:<token>" or of a whole request header
//     is caught as well as the token's own), and hexadecimal;
//   - percent-encoded (URL query or path, any hex case, any choice of
//     escaped characters) and backslash-escaped (JSON and Go quoting:
//     \uXXXX, \xXX, \/, ...): the text is decoded and searched as well.
//
// Whatever matches is replaced with "<redacted>", a run of overlapping
// matches once. A secret written "Scheme credentials" (Bearer, Basic) is
// searched for by its credentials: the scheme alone is no secret, and its
// pieces would hide ordinary words.
package redact

import (
	"encoding/base64"
	"encoding/hex"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Mask is what a secret is replaced with.
const Mask = "<redacted>"

// Redactor hides a set of secrets. The zero value and nil hide nothing. It
// is safe for concurrent use.
type Redactor struct {
	// windows[w] are the pieces of w bytes of every form of every secret.
	windows map[int]map[string]struct{}
	lens    []int // the keys of windows, longest first
	// first marks the bytes a piece starts with: positions starting with
	// another byte are not looked up.
	first [256]bool
}

// schemeRE is an HTTP authorization value: a scheme, then the credentials.
var schemeRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9._~+/-]* +(\S.*)$`)

// Window is the length of the shortest piece of a secret (or of one of its
// encoded forms) of n bytes that is hidden: half of it, at least 4 bytes
// and at most 8 (the whole of a secret shorter than 4).
func Window(n int) int {
	return min(n, max(4, min(8, (n+1)/2)))
}

// minEncoded is the shortest secret whose encoded forms are searched for:
// a shorter one's would be too short to tell from other text.
const minEncoded = 6

// New returns a Redactor of secrets; empty strings are ignored.
func New(secrets ...string) *Redactor {
	r := &Redactor{windows: map[int]map[string]struct{}{}}
	for _, s := range secrets {
		if s == "" {
			continue
		}
		if m := schemeRE.FindStringSubmatch(s); m != nil && len(m[1]) >= 4 {
			s = m[1]
		}
		r.add(s)
		if len(s) < minEncoded {
			continue
		}
		for k := range 3 {
			pre := append(make([]byte, k, k+len(s)), s...)
			for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
				if core := base64Core(enc.EncodeToString(pre), k, len(pre)); len(core) >= 4 {
					r.add(core)
				}
			}
		}
		h := hex.EncodeToString([]byte(s))
		r.add(h)
		r.add(strings.ToUpper(h))
	}
	for w := range r.windows {
		r.lens = append(r.lens, w)
	}
	slices.Sort(r.lens)
	slices.Reverse(r.lens)
	return r
}

// base64Core is the part of enc, the base64 of k bytes of anything then a
// secret (n bytes in all), that depends on the secret's bytes only: the
// characters of the k bytes before it, or shared with them, differ with
// what precedes the secret in the encoded text, and so do the last, shared
// with what follows it (or padding).
func base64Core(enc string, k, n int) string {
	from := (8*k + 5) / 6 // the first character with none of the k bytes' bits
	to := 8 * n / 6       // characters wholly within the n bytes
	if from >= to {
		return ""
	}
	return enc[from:to]
}

// add hides every piece of f of Window(len(f)) bytes.
func (r *Redactor) add(f string) {
	w := Window(len(f))
	set := r.windows[w]
	if set == nil {
		set = map[string]struct{}{}
		r.windows[w] = set
	}
	for i := 0; i+w <= len(f); i++ {
		set[f[i:i+w]] = struct{}{}
		r.first[f[i]] = true
	}
}

// Empty reports whether r hides nothing.
func (r *Redactor) Empty() bool { return r == nil || len(r.lens) == 0 }

// Replace returns s with every secret in it, in any of the forms the
// package documentation lists, replaced with Mask.
func (r *Redactor) Replace(s string) string {
	if r.Empty() || s == "" {
		return s
	}
	var spans []span
	mark := func(a, b int) { spans = append(spans, span{a, b}) }
	r.scan(s, mark)
	if strings.IndexByte(s, '%') >= 0 {
		r.scanDecoded(s, percentDecode, mark)
	}
	if strings.IndexByte(s, '\\') >= 0 {
		r.scanDecoded(s, backslashDecode, mark)
	}
	if len(spans) == 0 {
		return s
	}
	slices.SortFunc(spans, func(x, y span) int { return x.a - y.a })
	var b strings.Builder
	b.Grow(len(s))
	at := 0
	for i := 0; i < len(spans); {
		a, e := spans[i].a, spans[i].b
		for i++; i < len(spans) && spans[i].a <= e; i++ {
			e = max(e, spans[i].b)
		}
		b.WriteString(s[at:a])
		b.WriteString(Mask)
		at = e
	}
	b.WriteString(s[at:])
	out := b.String()
	if !utf8.ValidString(out) && utf8.ValidString(s) {
		// A piece cut a character of s in two: keep what is left valid.
		out = strings.ToValidUTF8(out, "")
	}
	return out
}

// Error returns err with its message redacted, or err itself when there is
// nothing to hide in it; errors.Is and errors.As still see err.
func (r *Redactor) Error(err error) error {
	if err == nil || r.Empty() {
		return err
	}
	msg := err.Error()
	red := r.Replace(msg)
	if red == msg {
		return err
	}
	return &redacted{msg: red, err: err}
}

// redacted is an error shown with its secrets hidden.
type redacted struct {
	msg string
	err error
}

func (e *redacted) Error() string { return e.msg }
func (e *redacted) Unwrap() error { return e.err }

type span struct{ a, b int }

// scan marks every piece of a secret in v.
func (r *Redactor) scan(v string, mark func(a, b int)) {
	for _, w := range r.lens {
		set := r.windows[w]
		for i := 0; i+w <= len(v); i++ {
			if !r.first[v[i]] {
				continue
			}
			if _, ok := set[v[i:i+w]]; ok {
				mark(i, i+w)
			}
		}
	}
}

// scanDecoded scans s decoded by decode and marks, in s, the text the
// pieces found were decoded from.
func (r *Redactor) scanDecoded(s string, decode func(string) (string, []int, []int), mark func(a, b int)) {
	v, from, to := decode(s)
	if v == s {
		return
	}
	r.scan(v, func(a, b int) { mark(from[a], to[b-1]) })
}

// percentDecode decodes every %XX of s (either hex case), leaving the rest
// as it is. from[i] and to[i] are the bytes of s the i'th decoded byte
// comes from.
func percentDecode(s string) (string, []int, []int) {
	out := make([]byte, 0, len(s))
	from, to := make([]int, 0, len(s)), make([]int, 0, len(s))
	for i := 0; i < len(s); {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			out = append(out, unhex(s[i+1])<<4|unhex(s[i+2]))
			from, to = append(from, i), append(to, i+3)
			i += 3
			continue
		}
		out = append(out, s[i])
		from, to = append(from, i), append(to, i+1)
		i++
	}
	return string(out), from, to
}

// backslashDecode decodes the backslash escapes of JSON and Go string
// literals in s (\n, \", \\, \/, \xXX, \uXXXX with surrogate pairs,
// \UXXXXXXXX), leaving the rest, and an escape it does not know, as it is.
func backslashDecode(s string) (string, []int, []int) {
	out := make([]byte, 0, len(s))
	from, to := make([]int, 0, len(s)), make([]int, 0, len(s))
	emit := func(b []byte, a, e int) {
		for _, c := range b {
			out = append(out, c)
			from, to = append(from, a), append(to, e)
		}
	}
	var buf [utf8.UTFMax]byte
	for i := 0; i < len(s); {
		if s[i] != '\\' || i+1 >= len(s) {
			emit([]byte{s[i]}, i, i+1)
			i++
			continue
		}
		switch c := s[i+1]; c {
		case 'n', 't', 'r', 'b', 'f', 'v', 'a', '"', '\'', '\\', '/':
			emit([]byte{unescape(c)}, i, i+2)
			i += 2
			continue
		case 'x':
			if v, ok := hexN(s, i+2, 2); ok {
				emit([]byte{byte(v)}, i, i+4)
				i += 4
				continue
			}
		case 'u', 'U':
			n := 4
			if c == 'U' {
				n = 8
			}
			if v, ok := hexN(s, i+2, n); ok {
				end := i + 2 + n
				if c == 'u' && v >= 0xd800 && v < 0xdc00 && end+6 <= len(s) && s[end] == '\\' && s[end+1] == 'u' {
					if lo, ok := hexN(s, end+2, 4); ok && lo >= 0xdc00 && lo < 0xe000 {
						v = 0x10000 + (v-0xd800)<<10 + (lo - 0xdc00)
						end += 6
					}
				}
				k := utf8.EncodeRune(buf[:], rune(v))
				emit(buf[:k], i, end)
				i = end
				continue
			}
		}
		emit([]byte{s[i]}, i, i+1)
		i++
	}
	return string(out), from, to
}

// unescape is the byte the escape \c stands for.
func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 't':
		return '\t'
	case 'r':
		return '\r'
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'v':
		return '\v'
	case 'a':
		return '\a'
	}
	return c // ", ', \, /
}

// hexN reads n hex digits of s at i.
func hexN(s string, i, n int) (uint32, bool) {
	if i+n > len(s) {
		return 0, false
	}
	var v uint32
	for j := i; j < i+n; j++ {
		if !isHex(s[j]) {
			return 0, false
		}
		v = v<<4 | uint32(unhex(s[j]))
	}
	return v, true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}
