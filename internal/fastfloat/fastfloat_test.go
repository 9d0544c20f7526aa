package fastfloat

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// check fails when Parse takes s and gives anything but strconv's float,
// bit for bit; it reports whether Parse took it.
func check(t *testing.T, s string) bool {
	t.Helper()
	got, ok := Parse([]byte(s))
	if !ok {
		return false
	}
	want, err := strconv.ParseFloat(s, 64)
	if err != nil || math.Float64bits(got) != math.Float64bits(want) {
		t.Fatalf("Parse(%q) = %v (%x); strconv: %v (%x), %v", s, got, math.Float64bits(got), want, math.Float64bits(want), err)
	}
	return true
}

func TestParseMatchesStrconv(t *testing.T) {
	for _, s := range []string{"0", "-0", "+0", "0.0", "-0.000", "1", "1.5", "123456789012345", "999999999999999.9",
		"0.000000000000001", "1796202765.123", "9007199254740992", "1.5e+06", "2.0000001e+07", "1e22", "1e23",
		"999999999999999e22", "9007199254740992e-22", "123e-25", "-0e5", "0e999", "1E+0", ".5", "5."} {
		check(t, s)
	}
	// What it must leave to strconv: more digits than it reads exactly, no
	// digits, a malformed or out-of-range exponent, anything that is not a
	// decimal.
	for _, s := range []string{"", "-", ".", "9007199254740993", "12345678901234567", "1e", "1e+", "e5", "1e5e5",
		"1e400", "1e00001", "4.9e-324", "NaN", "Inf", "0x10", "1_0", "1.5.5"} {
		if _, ok := Parse([]byte(s)); ok {
			t.Errorf("Parse(%q) took it; strconv's to parse", s)
		}
	}
	r := rand.New(rand.NewPCG(7, 8))
	took := 0
	for range 200_000 {
		var b []byte
		if r.IntN(2) == 0 {
			b = append(b, '-')
		}
		n, point := 1+r.IntN(17), r.IntN(18)
		for k := range n {
			if k == point && k > 0 {
				b = append(b, '.')
			}
			b = append(b, byte('0'+r.IntN(10)))
		}
		if r.IntN(2) == 0 {
			b = append(b, "eE"[r.IntN(2)])
			if sign := r.IntN(3); sign < 2 {
				b = append(b, "+-"[sign])
			}
			b = strconv.AppendInt(b, int64(r.IntN(60)), 10)
		}
		if check(t, string(b)) {
			took++
		}
	}
	if took < 50_000 { // the shortcut must be taken for most of these, or it is worth nothing
		t.Errorf("Parse took %d of 200,000 random decimals", took)
	}
}
