package otlpwire

import (
	"bytes"
	"encoding/base64"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// This file holds the byte-level JSON scanner under the decoders. It accepts
// exactly the JSON that protojson's tokenizer accepts (including its number
// grammar and its rejection of invalid UTF-8 and lone surrogates), so that
// everything the protojson path decoded still decodes.

// maxJSONDepth bounds message nesting the way protojson's default recursion limit
// (protowire.DefaultRecursionLimit) does: hostile input cannot exhaust the
// stack, and nothing protojson accepts is refused.
const maxJSONDepth = 10000

// jsonDecoder scans one OTLP/JSON document in b. Each string value is copied
// out of b on its own, so decoded messages do not keep the input alive.
type jsonDecoder struct {
	b     []byte
	pos   int    // next byte to read
	depth int    // messages open, counted as protojson counts them
	buf   []byte // scratch for unescaping strings
	pools        // storage for the decoded messages

	strCache [internBuckets]string // see intern
}

// decodeError locates a decoding failure by byte offset and by the path of
// field names from the request down. It never holds input text: attribute
// values can be secrets.
type decodeError struct {
	off  int
	msg  string
	path []string // innermost first; list indexes are separate "[i]" segments
}

func (e *decodeError) Error() string {
	var b strings.Builder
	for i := len(e.path) - 1; i >= 0; i-- {
		seg := e.path[i]
		if b.Len() > 0 && seg[0] != '[' {
			b.WriteByte('.')
		}
		b.WriteString(seg)
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	b.WriteString("at byte ")
	b.WriteString(strconv.Itoa(e.off))
	b.WriteString(": ")
	b.WriteString(e.msg)
	return b.String()
}

// fail returns an error at byte off. At the end of the input the message
// says so, whatever the caller expected.
func (d *jsonDecoder) fail(off int, msg string) error {
	if off >= len(d.b) {
		msg = "unexpected end of input"
	}
	return &decodeError{off: off, msg: msg}
}

// within adds a path segment (a field name) to err on its way up.
func within(err error, seg string) error {
	if e, ok := err.(*decodeError); ok {
		e.path = append(e.path, seg)
	}
	return err
}

// withinIndex adds a list index segment to err on its way up.
func withinIndex(err error, i int) error {
	return within(err, "["+strconv.Itoa(i)+"]")
}

// typeError reports that the value at off has the wrong type for its field.
// A syntax error inside that value takes precedence: it is what protojson
// reports and the more useful message for a truncated or mangled line.
func (d *jsonDecoder) typeError(off int, want string) error {
	d.pos = off
	if err := d.skip(maxJSONDepth); err != nil {
		return err
	}
	return d.fail(off, "want "+want)
}

// peek returns the byte at d.pos, or 0 at the end of the input (NUL is never
// valid outside strings, so callers treat both as unexpected).
func (d *jsonDecoder) peek() byte {
	if d.pos < len(d.b) {
		return d.b[d.pos]
	}
	return 0
}

// skipWS skips the four JSON whitespace bytes. Compact JSON has none, so
// the first test usually returns.
func (d *jsonDecoder) skipWS() {
	if d.pos < len(d.b) && d.b[d.pos] > ' ' {
		return
	}
	for d.pos < len(d.b) {
		switch d.b[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// separator consumes whitespace and a ',' (true) or the closing byte (false)
// after an object member or array element.
func (d *jsonDecoder) separator(closing byte) (bool, error) {
	if d.pos < len(d.b) {
		switch d.b[d.pos] {
		case ',':
			d.pos++
			d.skipWS()
			return true, nil
		case closing:
			d.pos++
			return false, nil
		}
	}
	return d.separatorSlow(closing)
}

// separatorSlow is separator after whitespace or at an error.
func (d *jsonDecoder) separatorSlow(closing byte) (bool, error) {
	d.skipWS()
	switch d.peek() {
	case ',':
		d.pos++
		d.skipWS()
		return true, nil
	case closing:
		d.pos++
		return false, nil
	}
	return false, d.fail(d.pos, "want ',' or '"+string(closing)+"'")
}

// isNotDelim reports whether c may not directly follow a literal or number,
// as in protojson's tokenizer ("truex" and "1a" are errors).
func isNotDelim(c byte) bool {
	return c == '-' || c == '+' || c == '.' || c == '_' ||
		('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// literal consumes word (true, false or null) if it is next and followed by
// a delimiter.
func (d *jsonDecoder) literal(word string) bool {
	end := d.pos + len(word)
	if end > len(d.b) || string(d.b[d.pos:end]) != word || (end < len(d.b) && isNotDelim(d.b[end])) {
		return false
	}
	d.pos = end
	return true
}

// null consumes a null if it is next.
func (d *jsonDecoder) null() bool {
	return d.pos < len(d.b) && d.b[d.pos] == 'n' && d.literal("null")
}

// ---- strings ----

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

// ---- skipping ----

// skip consumes one JSON value of any type, checking its syntax. rem is how
// many more arrays and objects may open inside it; protojson bounds skipped
// values by its remaining recursion budget in the same way.
func (d *jsonDecoder) skip(rem int) error {
	start := d.pos
	switch c := d.peek(); c {
	case '"':
		end, _, err := d.scanString(start)
		d.pos = end
		return err
	case '{', '[':
		if rem < 1 {
			return d.fail(start, "nesting too deep")
		}
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		d.pos++
		d.skipWS()
		if d.peek() == closing {
			d.pos++
			return nil
		}
		for {
			if c == '{' {
				if _, err := d.key(); err != nil {
					return err
				}
			}
			if err := d.skip(rem - 1); err != nil {
				return err
			}
			more, err := d.separator(closing)
			if !more {
				return err
			}
		}
	case 't', 'f', 'n':
		if d.literal("true") || d.literal("false") || d.literal("null") {
			return nil
		}
	default:
		if c == '-' || isDigit(c) {
			if n, ok := scanNumber(d.b[start:]); ok {
				d.pos += n
				return nil
			}
		}
	}
	return d.fail(start, "invalid value")
}

// ---- numbers ----

// scanNumber returns the length of the JSON number at the start of s and
// whether there is one followed by a delimiter. It is protojson's grammar,
// quirks included: an exponent may have no digits when a delimiter follows
// ("1e}" scans as "1e"), which later conversion decides about.
func scanNumber(s []byte) (int, bool) {
	n := 0
	if n < len(s) && s[n] == '-' {
		n++
	}
	switch {
	case n < len(s) && s[n] == '0':
		n++
	case n < len(s) && '1' <= s[n] && s[n] <= '9':
		n++
		for n < len(s) && isDigit(s[n]) {
			n++
		}
	default:
		return 0, false
	}
	if n+1 < len(s) && s[n] == '.' && isDigit(s[n+1]) {
		n += 2
		for n < len(s) && isDigit(s[n]) {
			n++
		}
	}
	if n+1 < len(s) && (s[n] == 'e' || s[n] == 'E') {
		n++
		if s[n] == '+' || s[n] == '-' {
			n++
			if n == len(s) {
				return 0, false
			}
		}
		for n < len(s) && isDigit(s[n]) {
			n++
		}
	}
	if n < len(s) && isNotDelim(s[n]) {
		return 0, false
	}
	return n, true
}

// isNumber reports whether all of s is one JSON number, the test protojson
// applies to numbers written as strings.
func isNumber(s []byte) bool {
	n, ok := scanNumber(s)
	return ok && n == len(s)
}

// numberText reads a numeric field: a JSON number or a string (protojson
// takes both for every numeric type). It returns the text of the number or
// the string's content (valid until the next rawString call), and whether
// it was quoted.
func (d *jsonDecoder) numberText(want string) (text []byte, quoted bool, err error) {
	start := d.pos
	c := d.peek()
	if c == '"' {
		text, err = d.rawString(want)
		return text, true, err
	}
	if c == '-' || isDigit(c) {
		if n, ok := scanNumber(d.b[start:]); ok {
			d.pos += n
			return d.b[start:d.pos], false, nil
		}
		return nil, false, d.fail(start, "invalid number")
	}
	return nil, false, d.typeError(start, want)
}

// integerText reads an integer field's number text; a string must hold
// exactly one JSON number.
func (d *jsonDecoder) integerText(want string) ([]byte, int, error) {
	start := d.pos
	text, quoted, err := d.numberText(want)
	if err == nil && quoted && !isNumber(text) {
		err = d.fail(start, "want "+want)
	}
	return text, start, err
}

// uintValue reads an unsigned integer of the given bit size.
func (d *jsonDecoder) uintValue(bits int, want string) (uint64, error) {
	text, start, err := d.integerText(want)
	if err != nil {
		return 0, err
	}
	v, ok := parseUint(text, bits)
	if !ok {
		return 0, d.fail(start, "want "+want)
	}
	return v, nil
}

// intValue reads a signed integer of the given bit size.
func (d *jsonDecoder) intValue(bits int, want string) (int64, error) {
	text, start, err := d.integerText(want)
	if err != nil {
		return 0, err
	}
	v, ok := parseInt(text, bits)
	if !ok {
		return 0, d.fail(start, "want "+want)
	}
	return v, nil
}

func (d *jsonDecoder) uint64Value() (uint64, error) {
	return d.uintValue(64, "an unsigned 64-bit integer")
}

func (d *jsonDecoder) uint32Value() (uint32, error) {
	v, err := d.uintValue(32, "an unsigned 32-bit integer")
	return uint32(v), err
}

func (d *jsonDecoder) int64Value() (int64, error) {
	return d.intValue(64, "a 64-bit integer")
}

func (d *jsonDecoder) int32Value() (int32, error) {
	v, err := d.intValue(32, "a 32-bit integer")
	return int32(v), err
}

// doubleValue reads a double: a JSON number, or a string holding one or
// "NaN", "Infinity" or "-Infinity". Numbers out of range are errors, as in
// protojson.
func (d *jsonDecoder) doubleValue() (float64, error) {
	start := d.pos
	text, quoted, err := d.numberText("a number")
	if err != nil {
		return 0, err
	}
	if quoted {
		switch string(text) {
		case "NaN":
			return math.NaN(), nil
		case "Infinity":
			return math.Inf(1), nil
		case "-Infinity":
			return math.Inf(-1), nil
		}
		if !isNumber(text) {
			return 0, d.fail(start, "want a number")
		}
	}
	if f, ok := exactFloat(text); ok {
		return f, nil
	}
	// The conversion does not allocate for numbers of up to 32 bytes:
	// strconv copies its argument into errors, so it does not escape.
	f, err := strconv.ParseFloat(string(text), 64)
	if err != nil {
		return 0, d.fail(start, "want a number in the range of a double")
	}
	return f, nil
}

// exactFloat converts a plain decimal such as "1796202765.123" or "-42"
// (no exponent, at most 15 digits) without strconv's general parser. Such a
// value is an integer below 2^53 scaled by a power of ten up to 1e15, both
// exact doubles, so one division rounds correctly and the result equals
// strconv.ParseFloat's (Clinger's fast path, which strconv also takes).
func exactFloat(text []byte) (float64, bool) {
	i, neg := 0, false
	if len(text) > 0 && text[0] == '-' {
		i, neg = 1, true
	}
	var m uint64
	digits, scale := 0, -1
	for ; i < len(text); i++ {
		c := text[i]
		switch {
		case isDigit(c):
			m = m*10 + uint64(c-'0')
			digits++
			if scale >= 0 {
				scale++
			}
		case c == '.' && scale < 0:
			scale = 0
		default:
			return 0, false // exponent, or not a number
		}
	}
	if digits == 0 || digits > 15 {
		return 0, false
	}
	f := float64(m)
	if scale > 0 {
		f /= math.Pow10(scale)
	}
	if neg {
		f = -f
	}
	return f, true
}

// parseUint converts the text of a JSON number to an unsigned integer like
// protojson: an integral value in any notation ("1e3", "5.0") is accepted.
func parseUint(text []byte, bits int) (uint64, bool) {
	// Fast path: plain digits that cannot overflow 64 bits.
	if len(text) > 0 && len(text) <= 19 {
		var v uint64
		i := 0
		for ; i < len(text) && isDigit(text[i]); i++ {
			v = v*10 + uint64(text[i]-'0')
		}
		if i == len(text) {
			return v, bits == 64 || v <= math.MaxUint32
		}
	}
	s, ok := integralString(text)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 10, bits)
	return v, err == nil
}

// parseInt converts the text of a JSON number to a signed integer; see
// parseUint.
func parseInt(text []byte, bits int) (int64, bool) {
	// Fast path: an optional sign and plain digits that cannot overflow.
	if digits := bytes.TrimPrefix(text, []byte("-")); len(digits) > 0 && len(digits) <= 18 {
		var v int64
		i := 0
		for ; i < len(digits) && isDigit(digits[i]); i++ {
			v = v*10 + int64(digits[i]-'0')
		}
		if i == len(digits) {
			if len(digits) < len(text) {
				v = -v
			}
			return v, bits == 64 || (v >= math.MinInt32 && v <= math.MaxInt32)
		}
	}
	s, ok := integralString(text)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, bits)
	return v, err == nil
}

// integralString rewrites a JSON number (as scanNumber delimits it) to plain
// decimal digits with an optional '-', or reports that it is not an integer.
// It follows protojson's normalizeToIntString so both accept the same
// spellings: "-0" is "0", "1.50e1" is "15", "1e}" counts as "1".
func integralString(text []byte) (string, bool) {
	s := string(text)
	neg := false
	if s[0] == '-' {
		neg = true
		s = s[1:]
	}
	var intp, frac, exp string
	if s[0] == '0' {
		s = s[1:]
	} else {
		n := 1
		for n < len(s) && isDigit(s[n]) {
			n++
		}
		intp, s = s[:n], s[n:]
	}
	if len(s) >= 2 && s[0] == '.' && isDigit(s[1]) {
		n := 2
		for n < len(s) && isDigit(s[n]) {
			n++
		}
		frac, s = s[1:n], s[n:]
	}
	if len(s) >= 2 && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		n := 0
		if s[0] == '+' || s[0] == '-' {
			n++
			if len(s) == 1 {
				return "", false
			}
		}
		for n < len(s) && isDigit(s[n]) {
			n++
		}
		exp = s[:n]
	}
	frac = strings.TrimRight(frac, "0")
	if intp == "" && frac == "" {
		return "0", true
	}
	e := 0
	if exp != "" {
		v, err := strconv.ParseInt(exp, 10, 32)
		if err != nil {
			return "", false
		}
		e = int(v)
	}
	var num string
	if e >= 0 {
		// Shift the fraction into the integer part; the 20 digit cap (the
		// length of MaxUint64) keeps huge exponents from building huge strings.
		if len(frac) > e || len(intp)+e > 20 {
			return "", false
		}
		num = intp + frac + strings.Repeat("0", e-len(frac))
	} else {
		// Shift digits out; they must all be zeros.
		index := len(intp) + e
		if len(frac) > 0 || index < 0 || strings.TrimRight(intp[index:], "0") != "" {
			return "", false
		}
		num = intp[:index]
	}
	if neg {
		return "-" + num, true
	}
	return num, true
}

// ---- other scalars ----

// boolValue reads true or false.
func (d *jsonDecoder) boolValue() (bool, error) {
	if d.peek() == 't' && d.literal("true") {
		return true, nil
	}
	if d.peek() == 'f' && d.literal("false") {
		return false, nil
	}
	return false, d.typeError(d.pos, "true or false")
}

// enumValue reads an enum as a number or a value name. An unknown name means
// the default value, as with protojson's DiscardUnknown.
func (d *jsonDecoder) enumValue(names map[string]int32) (int32, error) {
	const want = "an enum name or 32-bit integer"
	start := d.pos
	switch c := d.peek(); {
	case c == '"':
		name, err := d.rawString(want)
		if err != nil {
			return 0, err
		}
		v, ok := names[string(name)]
		if !ok {
			// As the collector does (and protojson without
			// DiscardUnknown): a name the enum does not have is an
			// error, not the default value.
			// The value is not quoted: errors never quote the input.
			return 0, d.fail(start, "unknown enum name: want one of the enum's names or a 32-bit integer")
		}
		return v, nil
	case c == '-' || isDigit(c):
		n, ok := scanNumber(d.b[start:])
		if !ok {
			return 0, d.fail(start, "invalid number")
		}
		d.pos += n
		v, ok := parseInt(d.b[start:d.pos], 32)
		if !ok {
			return 0, d.fail(start, "want "+want)
		}
		return int32(v), nil
	}
	return 0, d.typeError(start, want)
}

// idValue reads a trace or span id of size bytes (TraceIDSize or
// SpanIDSize) in hex (either case), as OTLP/JSON writes them. An empty
// string is an empty id; any other length is refused, as the collector
// refuses it (ValidID).
func (d *jsonDecoder) idValue(size int) ([]byte, error) {
	start := d.pos
	s, err := d.rawString("a hex string")
	if err != nil || len(s) == 0 {
		return nil, err
	}
	if len(s)%2 != 0 || !ValidID(len(s)/2, size) {
		for _, c := range s {
			if _, ok := fromHex(c); !ok {
				return nil, d.fail(start, "not hex")
			}
		}
		return nil, d.fail(start, IDSizeError(len(s), size, true))
	}
	id := d.bytes(len(s) / 2)
	for i := range id {
		hi, ok1 := fromHex(s[2*i])
		lo, ok2 := fromHex(s[2*i+1])
		if !ok1 || !ok2 {
			return nil, d.fail(start, "not hex")
		}
		id[i] = hi<<4 | lo
	}
	return id, nil
}

// bytesValue reads a base64 bytes value exactly as protojson does: standard
// or URL alphabet, padded or not (and, as base64 does, ignoring newlines).
func (d *jsonDecoder) bytesValue() ([]byte, error) {
	start := d.pos
	s, err := d.rawString("a base64 string")
	if err != nil {
		return nil, err
	}
	enc := base64.StdEncoding
	if bytes.ContainsAny(s, "-_") {
		enc = base64.URLEncoding
	}
	if len(s)%4 != 0 {
		enc = enc.WithPadding(base64.NoPadding)
	}
	b := make([]byte, enc.DecodedLen(len(s)))
	n, err := enc.Decode(b, s)
	if err != nil {
		return nil, d.fail(start, "not base64")
	}
	return b[:n], nil
}
