package otlpwire

import (
	"bytes"
	"math"
	"strconv"
	"strings"

	"github.com/otelstep/otelstep/internal/fastfloat"
)

// JSON numbers: protojson's number grammar, and the conversions to the
// protobuf integer and double types it allows, from numbers and from strings.

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
	if f, ok := fastfloat.Parse(text); ok {
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
