// Package fastfloat converts the decimal numbers that exporters write most
// (plain decimals and exponent forms with at most 16 significant digits) to
// float64 without strconv's general parser, and only where the result is
// the one strconv.ParseFloat returns, bit for bit. Both of otelstep's
// number readers use it before strconv: the scraper's line cache (sample
// values) and otlpwire's OTLP/JSON decoder (doubles).
package fastfloat

// pow10 are the powers of ten a float64 holds exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// Parse parses [+-]digits[.digits][(e|E)[+-]digits] whose digits,
// without the point, make an integer m of at most 16 digits and at most
// 2^53, scaled by a power of ten 10^k: for |k| <= 22 both m and 10^k are
// exact float64s, so their product or quotient, rounded once, is the
// correctly rounded value that strconv.ParseFloat returns (its own exact
// fast path is this one, and so is the step below: for k above 22, m times
// 10^(k-22) is an exact integer while it stays under 10^15). ok is false
// for anything else, which strconv parses.
func Parse(tok []byte) (v float64, ok bool) {
	i, neg := 0, false
	if len(tok) > 0 && (tok[0] == '-' || tok[0] == '+') {
		neg, i = tok[0] == '-', 1
	}
	start := i
	i, m := readDigits(tok, i, 0)
	digits, frac := i-start, 0
	if i < len(tok) && tok[i] == '.' {
		fs := i + 1
		i, m = readDigits(tok, fs, m)
		frac = i - fs
		digits += frac
	}
	if digits == 0 || digits > 16 || m > 1<<53 { // 16 digits: m cannot have overflowed
		return 0, false
	}
	k := -frac
	if i < len(tok) && tok[i]|0x20 == 'e' {
		i++
		eneg := false
		if i < len(tok) && (tok[i] == '-' || tok[i] == '+') {
			eneg, i = tok[i] == '-', i+1
		}
		es, e := i, 0
		for ; i < len(tok) && i-es < 4; i++ {
			d := tok[i] - '0'
			if d > 9 {
				break
			}
			e = e*10 + int(d)
		}
		if i == es {
			return 0, false
		}
		if eneg {
			e = -e
		}
		k += e
	}
	if i != len(tok) {
		return 0, false
	}
	v = float64(m)
	switch {
	case m == 0 || k == 0:
	case k < 0 && k >= -22:
		v /= pow10[-k]
	case k > 0 && k <= 22:
		v *= pow10[k]
	case k > 22 && k <= 22+15:
		if v *= pow10[k-22]; v > 1e15 {
			return 0, false
		}
		v *= pow10[22]
	default:
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}

// readDigits reads the decimal digits of tok from i on into m, each as
// m*10+d, and returns where they end and m.
func readDigits(tok []byte, i int, m uint64) (int, uint64) {
	for ; i < len(tok); i++ {
		d := tok[i] - '0'
		if d > 9 {
			break
		}
		m = m*10 + uint64(d)
	}
	return i, m
}
