package otlpwire

import (
	"bytes"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// JSON strings: scanning and validating them as protojson does, unescaping,
// and interning the short ones.

// scanString validates the JSON string starting at s[i] == '"' and returns
// the offset just past its closing quote and whether it holds escapes. Like
// protojson it rejects control characters, invalid UTF-8 and bad escapes
// (including unpaired surrogates).
func (d *jsonDecoder) scanString(i int) (end int, escaped bool, err error) {
	s := d.b
	start := i
	i++
	for i < len(s) {
		i = plainRun(s, i)
		if i >= len(s) {
			break
		}
		c := s[i]
		switch {
		case c == '"':
			return i + 1, escaped, nil
		case c == '\\':
			escaped = true
			n, ok := escapeLen(s[i:])
			if !ok {
				if i+n >= len(s) {
					return 0, false, d.fail(len(s), "")
				}
				return 0, false, d.fail(i, "invalid escape in string")
			}
			i += n
		case c < 0x20:
			return 0, false, d.fail(i, "control character in string")
		default:
			r, n := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && n == 1 {
				return 0, false, d.fail(i, "invalid UTF-8 in string")
			}
			i += n
		}
	}
	return 0, false, d.fail(start, "unterminated string")
}

// plainRun returns the offset of the first byte at or after i in s that
// ends a run of plain string bytes: '"', '\\', a control character or a
// non-ASCII byte (or len(s)). It tests eight bytes at a time, since string
// scanning is the largest part of decoding.
func plainRun(s []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(s); i += 8 {
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		// A byte's high bit is set in t if it is '"' or '\\' (found as zero
		// bytes of the XOR), below 0x20, or itself has the high bit set.
		// Borrows can flag bytes above a flagged one, never below, so the
		// lowest flag is exact.
		q := w ^ (ones * '"')
		b := w ^ (ones * '\\')
		t := ((q - ones) &^ q) | ((b - ones) &^ b) | ((w - ones*0x20) &^ w) | w
		if t &= highs; t != 0 {
			return i + bits.TrailingZeros64(t)/8
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			return i
		}
	}
	return i
}

// escapeLen returns the length of the escape sequence at the start of s
// (s[0] == '\\'), a surrogate pair counting as one. When it is invalid, the
// returned length is how far the input was read (reaching len(s) means it
// was cut short).
func escapeLen(s []byte) (int, bool) {
	if len(s) < 2 {
		return len(s), false
	}
	switch s[1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2, true
	case 'u':
		r, ok := hex4(s[2:])
		if !ok {
			return min(6, len(s)), false
		}
		if !utf16.IsSurrogate(r) {
			return 6, true
		}
		// protojson requires a valid pair: a lone or reversed surrogate is
		// an error, not U+FFFD.
		if len(s) < 12 {
			return len(s), false
		}
		r2, ok := hex4(s[8:])
		if s[6] != '\\' || s[7] != 'u' || !ok || utf16.DecodeRune(r, r2) == utf8.RuneError {
			return 12, false
		}
		return 12, true
	}
	return 2, false
}

// hex4 parses the four hex digits at the start of s.
func hex4(s []byte) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for i := range 4 {
		v, ok := fromHex(s[i])
		if !ok {
			return 0, false
		}
		r = r<<4 | rune(v)
	}
	return r, true
}

// fromHex returns the value of one hex digit, either case.
func fromHex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// unescape appends the decoded form of raw, the already validated content
// of a string with escapes, to dst.
func unescape(dst, raw []byte) []byte {
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			j := bytes.IndexByte(raw[i:], '\\')
			if j < 0 {
				return append(dst, raw[i:]...)
			}
			dst = append(dst, raw[i:i+j]...)
			i += j
			continue
		}
		switch e := raw[i+1]; e {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, _ := hex4(raw[i+2:])
			if utf16.IsSurrogate(r) {
				r2, _ := hex4(raw[i+8:])
				r = utf16.DecodeRune(r, r2)
				i += 6
			}
			dst = utf8.AppendRune(dst, r)
			i += 6
			continue
		default: // '"', '\\', '/'
			dst = append(dst, e)
		}
		i += 2
	}
	return dst
}

// rawString reads a string value and returns its content, unescaped. The
// result aliases the input or scratch space: it is valid until the next
// call, and callers that keep it copy it.
func (d *jsonDecoder) rawString(want string) ([]byte, error) {
	start := d.pos
	if d.peek() != '"' {
		return nil, d.typeError(start, want)
	}
	end, escaped, err := d.scanString(start)
	if err != nil {
		return nil, err
	}
	d.pos = end
	raw := d.b[start+1 : end-1]
	if !escaped {
		return raw, nil
	}
	d.buf = unescape(d.buf[:0], raw)
	return d.buf, nil
}

// str reads a string value.
func (d *jsonDecoder) str() (string, error) {
	raw, err := d.rawString("a string")
	if err != nil {
		return "", err
	}
	return d.intern(raw), nil
}

// Short strings repeat a lot in OTLP (attribute keys, and values such as
// units or label values repeated on every data point), so str keeps the
// last short string seen for each of a few hash buckets and reuses it: a
// hit costs a hash and a compare instead of an allocation.
const (
	internMaxLen  = 32
	internBuckets = 64 // a power of two
)

// intern returns raw as a string, reusing an equal earlier one if cached.
func (d *jsonDecoder) intern(raw []byte) string {
	n := len(raw)
	if n > internMaxLen || n == 0 {
		return string(raw)
	}
	// A cheap hash of the length and the first and last bytes: good enough
	// to spread attribute keys and values over the buckets.
	h := uint(n)*0x9E3779B1 ^ uint(raw[0])<<8 ^ uint(raw[n-1]) ^ uint(raw[n/2])<<16
	h ^= h >> 7
	slot := &d.strCache[h&(internBuckets-1)]
	if *slot == string(raw) {
		return *slot
	}
	*slot = string(raw)
	return *slot
}

// key reads an object member name and the ':' after it, leaving d.pos at the
// value. The name is valid until the next rawString call.
func (d *jsonDecoder) key() ([]byte, error) {
	start := d.pos
	if d.peek() != '"' {
		return nil, d.fail(start, "want a field name")
	}
	end, escaped, err := d.scanString(start)
	if err != nil {
		return nil, err
	}
	k := d.b[start+1 : end-1]
	if escaped {
		d.buf = unescape(d.buf[:0], k)
		k = d.buf
	}
	d.pos = end
	if end >= len(d.b) || d.b[end] != ':' {
		d.skipWS()
		if d.peek() != ':' {
			return nil, d.fail(d.pos, "want ':' after field name")
		}
	}
	d.pos++
	d.skipWS()
	return k, nil
}
