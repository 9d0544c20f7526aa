// The collector's translations of a page's words and numbers: unit
// words to UCUM, _created seconds to nanoseconds, le and quantile
// labels to floats.

package scraper

import (
	"math"
	"strconv"
	"strings"
)

// unitTable is the collector's word-to-UCUM table (pkg/translator/prometheus).
var unitTable = map[string]string{
	"days": "d", "hours": "h", "minutes": "min", "seconds": "s",
	"milliseconds": "ms", "microseconds": "us", "nanoseconds": "ns",
	"bytes": "By", "kibibytes": "KiBy", "mebibytes": "MiBy", "gibibytes": "GiBy", "tibibytes": "TiBy",
	"kilobytes": "KBy", "megabytes": "MBy", "gigabytes": "GBy", "terabytes": "TBy",
	"meters": "m", "volts": "V", "amperes": "A", "joules": "J", "watts": "W", "grams": "g",
	"celsius": "Cel", "hertz": "Hz", "ratio": "1", "percent": "%",
}

// perUnitTable translates the word after "_per_" (meters_per_second → m/s).
var perUnitTable = map[string]string{
	"second": "s", "minute": "m", "hour": "h", "day": "d", "week": "w", "month": "mo", "year": "y",
}

// unitOf is the collector's UnitWordToUCUM: unknown words pass unchanged.
func unitOf(u string) string {
	word, per, hasPer := strings.Cut(u, "_per_")
	out := word
	if v, ok := unitTable[word]; ok {
		out = v
	}
	if hasPer && per != "" {
		if v, ok := perUnitTable[per]; ok {
			per = v
		}
		out += "/" + per
	}
	return out
}

// secondsToNs converts a _created value (seconds since the epoch) to
// nanoseconds the way the collector does: whole seconds plus the fraction.
func secondsToNs(v float64) uint64 {
	if math.IsNaN(v) || v <= 0 || v >= math.MaxInt64/1e9 {
		return 0
	}
	s := int64(v)
	return uint64(s*1e9 + int64((v-float64(s))*1e9))
}

func parseFloat(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return math.NaN()
	}
	return v
}
