package otlpwire

import (
	"encoding/base64"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/otelstep/otelstep/pipeline"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
)

// Field helpers and primitives of the OTLP/JSON encoder: a key, the shared
// attribute sets' field, strings, floats, hex ids. The generated writers
// write each scalar field by its kind (internal/gen's jsonScalar).

// key writes the separator (if not first) and "name":. name must not need escaping.
func key(b []byte, first *bool, name string) []byte {
	if *first {
		*first = false
	} else {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, name...)
	return append(b, '"', ':')
}

// appendDoubles writes a JSON array of doubles.
func appendDoubles(b []byte, vs []float64) []byte {
	b = append(b, '[')
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendFloat(b, v)
	}
	return append(b, ']')
}

// fieldSharedAttrs writes a data point's attributes (or a metric's
// metadata) as field name, from the encoding stored with the slice's set
// when shared finds one (see MetricsEncoder). A set stores the array text
// only, not the key, since the separator before it depends on the
// position.
func fieldSharedAttrs(b []byte, first *bool, name string, kvs []*commonpb.KeyValue, shared *pipeline.SharedAttrs) []byte {
	if len(kvs) == 0 {
		return b
	}
	b = key(b, first, name)
	set := shared.Find(kvs)
	if set == nil {
		return appendKeyValues(b, kvs, nil)
	}
	if enc := set.JSON(); enc != nil {
		return append(b, enc...)
	}
	start := len(b)
	b = appendKeyValues(b, kvs, nil)
	set.StoreJSON(b[start:])
	return b
}

// ---- primitives ----

const hexDigits = "0123456789abcdef"

func appendHex(b []byte, id []byte) []byte {
	b = append(b, '"')
	for _, c := range id {
		b = append(b, hexDigits[c>>4], hexDigits[c&0xf])
	}
	return append(b, '"')
}

func appendBase64(b []byte, v []byte) []byte {
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, v)
	return append(b, '"')
}

// appendFloat formats like encoding/json and protojson: shortest repr, 'f'
// for exponents in [-6, 21), 'e' otherwise with a two digit minimum exponent
// dropped to one ("1e-07" becomes "1e-7"); non-finite values as strings.
func appendFloat(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(b, `"-Infinity"`...)
	}
	if f > -1<<53 && f < 1<<53 && f == float64(int64(f)) && f != 0 {
		// An integer (most gauges and every counter of whole units): its
		// shortest form is its digits, which AppendInt writes much faster
		// than AppendFloat. Zero is left to AppendFloat for its sign.
		return strconv.AppendInt(b, int64(f), 10)
	}
	fmt := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		fmt = 'e'
	}
	b = strconv.AppendFloat(b, f, fmt, -1, 64)
	if fmt == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// safe[c] is true for ASCII bytes that need no escaping.
var safe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// load8 is the first 8 bytes of s as a little-endian word: one load. It
// and plainWord are small enough to inline into appendString's loop: no
// call per 8 bytes.
func load8[S string | []byte](s S) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// load4 is the first 4 bytes of s as a little-endian word.
func load4[S string | []byte](s S) uint64 {
	_ = s[3]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24
}

// plainWord reports whether the 8 bytes of v are all ASCII, none below
// 0x20, none '"' or '\\': the bytes safe[] passes. It may say false for
// plain bytes (never true for others); the byte loop then decides.
func plainWord(v uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q := v ^ (ones * '"')
	bs := v ^ (ones * '\\')
	// v has a high bit set in each byte >= 0x80. When there is none, no
	// byte of v, q or bs is either, and then (x - ones) &^ x has one set in
	// (at least) each byte of x that is 0, as v - ones*0x20 has in each
	// byte of v below 0x20 (a borrow may mark the byte above too: false
	// positives, only next to a byte that is special anyway).
	special := v | (v - ones*0x20) | (q-ones)&^q | (bs-ones)&^bs
	return special&highs == 0
}

// appendString writes s as a JSON string. Escaping follows protojson
// (no HTML escaping, \b \f \n \r \t short forms, other control characters as
// \u00xx); invalid UTF-8 is replaced by U+FFFD like encoding/json does.
// s is a message's string or, for records, a payload's bytes.
func appendString[S string | []byte](b []byte, s S) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		// Eight bytes at a time while none needs a look: most values are
		// plain ASCII.
		for i+8 <= len(s) && plainWord(load8(s[i:])) {
			i += 8
		}
		// Fewer than 8 bytes left: the last 8 of s (or, in a string of 4
		// to 7, its first and last 4) as one word, which may look at bytes
		// already passed again. Keys and short values are most strings,
		// and the byte loop would be most of their cost.
		if n := len(s) - i; n > 0 && n < 8 {
			if len(s) >= 8 {
				if plainWord(load8(s[len(s)-8:])) {
					i = len(s)
				}
			} else if len(s) >= 4 && plainWord(load4(s)|load4(s[len(s)-4:])<<32) {
				i = len(s)
			}
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if safe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := decodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, "\ufffd"...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// decodeRune is utf8.DecodeRuneInString or utf8.DecodeRune, for either.
func decodeRune[S string | []byte](s S) (rune, int) {
	var buf [utf8.UTFMax]byte
	return utf8.DecodeRune(buf[:copy(buf[:], s)])
}
