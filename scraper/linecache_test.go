package scraper

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/relabel"
	"github.com/prometheus/prometheus/model/value"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// convertBoth scrapes pages in turn with a Converter that uses the line
// cache and with one that parses every line with textparse, and fails on
// any difference in what they return, errors included. A nil page is a
// failed scrape (Down). It returns, per page, the lines the cached
// Converter took from its cache.
func convertBoth(t testing.TB, ct string, pages ...[]byte) []int {
	t.Helper()
	return convertBothAs(t, fixtureTarget("lc"), ct, pages...)
}

// convertBothAs is convertBoth for target tg.
func convertBothAs(t testing.TB, tg Target, ct string, pages ...[]byte) []int {
	t.Helper()
	cached := NewConverter(tg)
	plain := NewConverter(tg)
	plain.lc.off = true
	ts := time.Unix(1_800_000_000, 0)
	var taken []int
	for i, page := range pages {
		at := ts.Add(time.Duration(i) * time.Second)
		var a, b []*metricspb.ResourceMetrics
		var errA, errB error
		if page == nil {
			a, b = cached.DownAll(at, time.Millisecond), plain.DownAll(at, time.Millisecond)
		} else {
			a, errA = cached.ConvertAll(page, ct, at, time.Millisecond)
			b, errB = plain.ConvertAll(page, ct, at, time.Millisecond)
		}
		taken = append(taken, cached.lc.taken)
		if (errA == nil) != (errB == nil) || (errA != nil && errA.Error() != errB.Error()) {
			t.Fatalf("scrape %d: error with the line cache %v, without %v", i+1, errA, errB)
		}
		if len(a) != len(b) {
			t.Fatalf("scrape %d: %d resources with the line cache, %d without", i+1, len(a), len(b))
		}
		for j := range a {
			// Staleness markers come in map order, with or without the cache.
			a[j], b[j] = canonical(a[j]), canonical(b[j])
			if !proto.Equal(a[j], b[j]) {
				t.Fatalf("scrape %d resource %d differs with the line cache:\n%v\nwithout:\n%v", i+1, j, a[j], b[j])
			}
		}
	}
	return taken
}

// canonical is a copy of rm with its metrics sorted by name and their points
// by their encoding.
func canonical(rm *metricspb.ResourceMetrics) *metricspb.ResourceMetrics {
	rm = proto.Clone(rm).(*metricspb.ResourceMetrics)
	enc := func(m proto.Message) string {
		b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		return string(b)
	}
	byEnc := func(n int, at func(int) proto.Message, swap func(i, j int)) {
		keys := make([]string, n)
		for i := range keys {
			keys[i] = enc(at(i))
		}
		for i := 1; i < n; i++ { // insertion sort: keys and points together
			for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
				keys[j], keys[j-1] = keys[j-1], keys[j]
				swap(j, j-1)
			}
		}
	}
	for _, sm := range rm.ScopeMetrics {
		ms := sm.Metrics
		sort.SliceStable(ms, func(i, j int) bool { return ms[i].Name < ms[j].Name })
		for _, m := range ms {
			switch d := m.Data.(type) {
			case *metricspb.Metric_Gauge:
				p := d.Gauge.DataPoints
				byEnc(len(p), func(i int) proto.Message { return p[i] }, func(i, j int) { p[i], p[j] = p[j], p[i] })
			case *metricspb.Metric_Sum:
				p := d.Sum.DataPoints
				byEnc(len(p), func(i int) proto.Message { return p[i] }, func(i, j int) { p[i], p[j] = p[j], p[i] })
			case *metricspb.Metric_Histogram:
				p := d.Histogram.DataPoints
				byEnc(len(p), func(i int) proto.Message { return p[i] }, func(i, j int) { p[i], p[j] = p[j], p[i] })
			case *metricspb.Metric_Summary:
				p := d.Summary.DataPoints
				byEnc(len(p), func(i int) proto.Message { return p[i] }, func(i, j int) { p[i], p[j] = p[j], p[i] })
			}
		}
	}
	return rm
}

// sampleLines counts the entries textparse returns for a text page: sample,
// HELP, TYPE and comment lines.
func sampleLines(page []byte) int {
	n := 0
	for _, l := range bytes.Split(page, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			n++
		}
	}
	return n
}

// mapLines rewrites the sample lines of page (not comments) with f.
func mapLines(page []byte, f func(i int, line string) string) []byte {
	var out []byte
	i := 0
	for _, l := range strings.SplitAfter(string(page), "\n") {
		if l == "" {
			continue
		}
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			l = f(i, l)
			i++
		}
		out = append(out, l...)
	}
	return out
}

// valueAt splits a sample line around its value token.
func valueAt(line string) (head, val, tail string) {
	end := strings.IndexAny(line, " \t")
	if i := strings.LastIndexByte(line, '}'); i >= 0 {
		end = i + 1
	}
	j := end
	for j < len(line) && (line[j] == ' ' || line[j] == '\t') {
		j++
	}
	k := j
	for k < len(line) && line[k] != ' ' && line[k] != '\t' && line[k] != '\n' {
		k++
	}
	return line[:j], line[j:k], line[k:]
}

// setValue replaces a sample line's value, keeping its series bytes and
// timestamp.
func setValue(line, v string) string {
	head, _, tail := valueAt(line)
	return head + v + tail
}

func TestLineCacheMatchesTextparse(t *testing.T) {
	for _, file := range []string{"vllm.txt", "node.txt", "dcgm.txt", "edge.txt"} {
		page := read(t, file)
		lines := sampleLines(page)
		grown := mapLines(page, func(i int, l string) string {
			head, val, tail := valueAt(l)
			v, err := strconv.ParseFloat(val, 64)
			if err != nil {
				return l
			}
			return head + strconv.FormatFloat(v*2+1, 'g', -1, 64) + tail
		})
		reset := mapLines(page, func(i int, l string) string { return setValue(l, "0") })
		special := []string{"NaN", "+Inf", "-Inf", "1e3", "-0", "Nan", "inf", "0x1p3", "1_0", "1.5.5", "0x10"}
		specials := mapLines(page, func(i int, l string) string { return setValue(l, special[i%len(special)]) })
		stamped := mapLines(page, func(i int, l string) string {
			switch i % 4 {
			case 0:
				return strings.TrimSuffix(l, "\n") + " 1800000000123\n"
			case 1:
				return strings.TrimSuffix(l, "\n") + " \t\n"
			case 2:
				return strings.TrimSuffix(l, "\n") + " 99999999999999999999\n" // out of range
			}
			return strings.Replace(l, " ", "\t", 1)
		})
		dropped := mapLines(page, func(i int, l string) string {
			if i%7 == 3 {
				return ""
			}
			return l
		})
		added := mapLines(page, func(i int, l string) string {
			if i%11 == 5 {
				return "lc_added_total{n=\"" + strconv.Itoa(i) + "\"} 1\n" + l
			}
			return l
		})
		blank := bytes.ReplaceAll(page, []byte("\n# HELP"), []byte("\n\n  \n# HELP"))
		retyped := bytes.Replace(page, []byte(" counter\n"), []byte(" gauge\n"), 3)
		rehelp := bytes.Replace(page, []byte("# HELP "), []byte("# HELP lc_other changed\n# HELP "), 2)
		noNewline := page[:len(page)-1]
		mid := bytes.IndexByte(page[len(page)/2:], '\n') + len(page)/2 + 1
		garbage := append(append(append([]byte{}, page[:mid]...), "lc_bad{ 1\n"...), page[mid:]...)
		dup := append(append([]byte{}, page...), page[bytes.LastIndex(page[:len(page)-1], []byte("\n"))+1:]...)

		cases := []struct {
			name  string
			pages [][]byte
			// want: lines taken from the cache per scrape, -1 for "any"
			want []int
		}{
			{"same", [][]byte{page, page, page}, []int{0, lines, lines}},
			{"values", [][]byte{page, grown, reset, page}, []int{0, lines, lines, lines}},
			{"special values", [][]byte{page, specials, page, specials}, []int{0, -1, -1, -1}},
			{"timestamps and blanks", [][]byte{page, stamped, stamped, page}, []int{0, -1, -1, -1}},
			{"series go and come", [][]byte{page, dropped, page, added, added}, []int{0, -1, -1, -1, sampleLines(added)}},
			{"blank lines", [][]byte{page, blank, blank, page}, []int{0, -1, sampleLines(blank), -1}},
			{"type and help change", [][]byte{page, retyped, rehelp, page}, []int{0, -1, -1, -1}},
			{"no final newline", [][]byte{page, noNewline, noNewline, page}, []int{0, -1, 0, 0}},
			{"parse error", [][]byte{page, garbage, page, page}, []int{0, -1, 0, lines}},
			{"target down", [][]byte{page, nil, page, page}, []int{0, 0, 0, lines}},
			{"duplicate series", [][]byte{dup, dup}, []int{0, sampleLines(dup)}},
			{"empty page", [][]byte{page, {}, page}, []int{0, 0, 0}},
		}
		for _, tc := range cases {
			t.Run(file+"/"+tc.name, func(t *testing.T) {
				got := convertBoth(t, ctText, tc.pages...)
				for i, w := range tc.want {
					if w >= 0 && got[i] != w {
						t.Errorf("scrape %d took %d lines from the cache, want %d (all: %v)", i+1, got[i], w, got)
					}
				}
			})
		}
	}
}

func TestLineCacheOpenMetrics(t *testing.T) {
	withExemplars := read(t, "openmetrics.om")
	// Lines with an exemplar are always left to textparse: without them the
	// whole page can come from the cache.
	page := regexp.MustCompile(` # \{[^\n]*`).ReplaceAll(withExemplars, nil)
	if bytes.Equal(page, withExemplars) {
		t.Fatal("the fixture has no exemplars to strip")
	}
	lines := sampleLines(page) - 1 // "# EOF" is no entry
	body := page[:len(page)-len("# EOF\n")]
	eof := func(b []byte) []byte { return append(append([]byte{}, b...), "# EOF\n"...) }
	grown := mapLines(page, func(i int, l string) string {
		head, val, tail := valueAt(l)
		v, err := strconv.ParseFloat(val, 64)
		if err != nil {
			return l
		}
		return head + strconv.FormatFloat(v*2+1, 'g', -1, 64) + tail
	})
	// A new bucket series inside the histogram family: its le="1" must be
	// normalised to "1.0" by the family's type, as in the whole page.
	newBucket := bytes.Replace(page, []byte(`gym_step_seconds_bucket{env="math",le="+Inf"} 9`),
		[]byte("gym_step_seconds_bucket{env=\"math\",le=\"+Inf\"} 9\ngym_step_seconds_bucket{env=\"new\",le=\"1\"} 1\ngym_step_seconds_bucket{env=\"new\",le=\"+Inf\"} 1\ngym_step_seconds_count{env=\"new\"} 1"), 1)
	newQuantile := bytes.Replace(page, []byte("gym_latency_seconds_sum 120.5"), []byte("gym_latency_seconds{quantile=\"1\"} 2\ngym_latency_seconds_sum 120.5"), 1)
	blank := bytes.Replace(page, []byte("# TYPE gym_queue_depth"), []byte("\n# TYPE gym_queue_depth"), 1)
	tabbed := bytes.Replace(page, []byte(`{queue="judge"} 12.5`), []byte("{queue=\"judge\"}\t12.5"), 1)
	twoSpaces := bytes.Replace(page, []byte(`{queue="judge"} 12.5`), []byte(`{queue="judge"}  12.5`), 1)
	stamped := bytes.Replace(page, []byte(`{queue="judge"} 12.5`), []byte(`{queue="judge"} 12.5 1796200000.5`), 1)
	retyped := bytes.Replace(page, []byte("# TYPE gym_queue_depth gauge"), []byte("# TYPE gym_queue_depth counter"), 1)
	afterEOF := append(append([]byte{}, page...), "x 1\n"...)
	noEOF := body
	cases := []struct {
		name  string
		pages [][]byte
		want  []int
	}{
		{"same", [][]byte{page, page, page}, []int{0, lines, lines}},
		{"exemplars", [][]byte{withExemplars, withExemplars, page, withExemplars}, []int{0, 3, 43, 3}},
		{"values", [][]byte{page, grown, page}, []int{0, lines, lines}},
		{"new bucket mid-family", [][]byte{page, newBucket, newBucket, page}, []int{0, -1, -1, -1}},
		{"new quantile mid-family", [][]byte{page, newQuantile, newQuantile, page}, []int{0, -1, -1, -1}},
		{"blank line", [][]byte{page, blank, page}, []int{0, -1, 0}},
		{"blanks around the value", [][]byte{page, tabbed, twoSpaces, stamped, page}, []int{0, -1, -1, -1, -1}},
		{"type change", [][]byte{page, retyped, retyped, page}, []int{0, -1, -1, -1}},
		{"data after EOF", [][]byte{page, afterEOF, page}, []int{0, lines, 0}},
		{"no EOF", [][]byte{page, noEOF, page, eof(body)}, []int{0, lines, 0, lines}},
		{"target down", [][]byte{page, nil, page, page}, []int{0, 0, 0, lines}},
		{"empty page", [][]byte{page, {}, page}, []int{0, 0, 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := convertBoth(t, ctOM, tc.pages...)
			for i, w := range tc.want {
				if w >= 0 && got[i] != w {
					t.Errorf("scrape %d took %d lines from the cache, want %d (all: %v)", i+1, got[i], w, got)
				}
			}
		})
	}
}

// The target's settings act on cached lines as on parsed ones: dropped
// series stay dropped, honor_labels resources and ignored timestamps hold.
func TestLineCacheTargetSettings(t *testing.T) {
	page := read(t, "edge.txt")
	vllm := read(t, "vllm.txt")
	shift := func(p []byte) []byte {
		return mapLines(p, func(i int, l string) string {
			head, val, tail := valueAt(l)
			v, err := strconv.ParseFloat(val, 64)
			if err != nil {
				return l
			}
			return head + strconv.FormatFloat(v+1, 'g', -1, 64) + tail
		})
	}
	relabeled := fixtureTarget("lc")
	relabeled.MetricRelabelConfigs = []*relabel.Config{
		rc(t, relabel.Drop, "edge_special|vllm:num_requests_running", src("__name__")),
		rc(t, relabel.Replace, "(.*)", func(c *relabel.Config) {
			c.SourceLabels, c.TargetLabel, c.Replacement = []model.LabelName{"kind"}, "instance", "moved-$1"
		}),
	}
	honor := fixtureTarget("lc")
	honor.HonorLabels = true
	noTS := fixtureTarget("lc")
	noTS.HonorTimestamps = false
	for name, tg := range map[string]Target{"relabel": relabeled, "honor_labels": honor, "no honor_timestamps": noTS} {
		t.Run(name, func(t *testing.T) {
			for _, p := range [][]byte{page, vllm} {
				got := convertBothAs(t, tg, ctText, p, shift(p), shift(shift(p)))
				if got[2] != sampleLines(p) {
					t.Fatalf("took %v lines from the cache, want all %d on the third scrape", got, sampleLines(p))
				}
			}
		})
	}
}

// A target that changes format between scrapes starts the cache afresh.
func TestLineCacheFormatChange(t *testing.T) {
	om := regexp.MustCompile(` # \{[^\n]*`).ReplaceAll(read(t, "openmetrics.om"), nil)
	text := read(t, "edge.txt")
	c := NewConverter(fixtureTarget("lc"))
	ts := time.Unix(1_800_000_000, 0)
	for i, p := range []struct {
		page []byte
		ct   string
		want int
	}{{text, ctText, 0}, {om, ctOM, 0}, {text, ctText, 0}, {text, ctText, sampleLines(text)}, {om, ctOM, 0}, {om, ctOM, sampleLines(om) - 1}} {
		if _, err := c.ConvertAll(p.page, p.ct, ts.Add(time.Duration(i)*time.Second), 0); err != nil {
			t.Fatal(err)
		}
		if c.lc.taken != p.want {
			t.Fatalf("scrape %d took %d lines, want %d", i+1, c.lc.taken, p.want)
		}
	}
	convertBoth(t, ctText, text, om, text) // an OpenMetrics body served as text
}

// FuzzLineCache scrapes a, b, a and b again with and without the line cache:
// whatever the pages, both must agree.
func FuzzLineCache(f *testing.F) {
	for _, name := range []string{"edge.txt", "vllm.txt"} {
		page := read(f, name)
		head := page
		if i := bytes.Index(page[min(4096, len(page)):], []byte("\n# HELP")); i >= 0 {
			head = page[:min(4096, len(page))+i+1]
		}
		f.Add(head, mapLines(head, func(i int, l string) string { return setValue(l, fmt.Sprint(i)) }))
	}
	f.Add([]byte("# TYPE c counter\nc_total{a=\"x\"} 1\nc_total{a=\"y\"} 2 123\n"), []byte("# TYPE c counter\nc_total{a=\"x\"} 1\nc_total{a=\"y\"}\t2\n"))
	f.Add([]byte("a 1\n\n b 2\n#c\n"), []byte("a 1\n\n b NaN 5\n#c\n"))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		convertBoth(t, ctText, a, b, a, b, b)
	})
}

// FuzzLineCacheOpenMetrics is FuzzLineCache for OpenMetrics pages.
func FuzzLineCacheOpenMetrics(f *testing.F) {
	page := read(f, "openmetrics.om")
	f.Add(page, mapLines(page, func(i int, l string) string { return setValue(l, fmt.Sprint(i)) }))
	f.Add([]byte("# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_count 2\n# EOF\n"),
		[]byte("# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{a=\"x\",le=\"2\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_count 2\n# EOF\n"))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		convertBoth(t, ctOM, a, b, a, b, b)
	})
}

// One seriesEntry exists per sample line of every target: it stays in the
// 48-byte size class (see seriesEntry.created).
func TestSeriesEntrySize(t *testing.T) {
	if n := unsafe.Sizeof(seriesEntry{}); n > 48 {
		t.Errorf("seriesEntry is %d bytes, want at most 48", n)
	}
}

// parseValueRef is parseValue without its decimal shortcut.
func parseValueRef(tok []byte) (float64, bool) {
	if bytes.ContainsAny(tok, "pP") {
		return 0, false
	}
	v, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		return 0, false
	}
	if math.IsNaN(v) {
		v = math.Float64frombits(value.NormalNaN)
	}
	return v, true
}

func checkParseValue(t *testing.T, tok string) {
	t.Helper()
	got, ok := parseValue([]byte(tok))
	want, wok := parseValueRef([]byte(tok))
	if ok != wok || math.Float64bits(got) != math.Float64bits(want) {
		t.Fatalf("parseValue(%q) = %v (%x), %v; strconv: %v (%x), %v", tok, got, math.Float64bits(got), ok, want, math.Float64bits(want), wok)
	}
}

// The decimal shortcut gives strconv's float, bit for bit, and leaves
// everything else to it.
func TestParseValueMatchesStrconv(t *testing.T) {
	for _, tok := range []string{"0", "-0", "+0", "0.", ".5", "-.5", ".", "-", "+", "", "1e5", "1E-3", "00012", "-00.000",
		"9007199254740992", "9007199254740993", "-9007199254740992", "90071992547409921", "1234567890123456", "12345678901234567",
		"1.7976931348623157", "123456789012345.6", "0.0000000000000000000001", "0.00000000000000000000001", "1.5.5", "1..5",
		"Inf", "-Inf", "+Inf", "NaN", "nan", "1_0", "0x10", "0x1p-2", "1e400", "4.9e-324", "0.1", "0.2", "0.3", "2.675",
		"1410", "-273.15", "3.14159265358979", "100.00000000000001",
		"1.5e+06", "2.0000001e+07", "1e22", "1e23", "-1e23", "9e37", "1e37", "1e38", "999999999999999e22", "1000000000000000e22",
		"9007199254740992e-22", "9007199254740992e-23", "123e-25", "1E+0", "1e-0", "-0e5", "0e999", "1e", "1e+", "e5", "1e5e5",
		"1e5.5", "1e0001", "1e00001", "1e-0001", "4.9e-324", "1.7976931348623157e+308", "5e-324", ".5e1", "5.e1", "1.e"} {
		checkParseValue(t, tok)
	}
	r := rand.New(rand.NewPCG(4, 4))
	for range 200_000 {
		var b []byte
		switch r.IntN(3) {
		case 0:
			b = append(b, '-')
		case 1:
			if r.IntN(4) == 0 {
				b = append(b, '+')
			}
		}
		n, point := 1+r.IntN(18), r.IntN(19)
		for k := range n {
			if k == point {
				b = append(b, '.')
			}
			b = append(b, byte('0'+r.IntN(10)))
		}
		if r.IntN(2) == 0 { // an exponent
			b = append(b, "eE"[r.IntN(2)])
			if sign := r.IntN(3); sign < 2 {
				b = append(b, "+-"[sign])
			}
			b = strconv.AppendInt(b, int64(r.IntN(60)), 10)
		}
		checkParseValue(t, string(b))
	}
	for range 100_000 { // what the client libraries write: strconv's shortest
		v := math.Float64frombits(r.Uint64())
		if r.IntN(2) == 0 {
			v = float64(r.Int64N(1<<60)) * math.Pow(10, float64(r.IntN(40)-20))
		}
		checkParseValue(t, strconv.FormatFloat(v, 'g', -1, 64))
	}
}

func FuzzParseValue(f *testing.F) {
	for _, s := range []string{"0", "-1.5", "9007199254740993", "1e5", ".5", "NaN", "2.0000001e+07", "1e23", "123e-25"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) { checkParseValue(t, tok) })
}

// The line cache and the series index keep little room past their lines
// and entries once a scrape is done, whatever room appending them left.
func TestLineCacheRoomGivenBack(t *testing.T) {
	c := NewConverter(fixtureTarget("room"))
	ts := time.Unix(1_800_000_000, 0)
	for i, page := range [][]byte{read(t, "node.txt"), read(t, "node.txt"), read(t, "vllm.txt"), read(t, "node.txt")} {
		if _, err := c.ConvertAll(page, ctText, ts.Add(time.Duration(i)*time.Second), time.Millisecond); err != nil {
			t.Fatal(err)
		}
		n := len(c.lc.lines)
		if n < 100 {
			t.Fatalf("scrape %d: %d lines cached", i, n)
		}
		if room := cap(c.lc.lines) - n; room > n/8+64 {
			t.Errorf("scrape %d: %d lines cached with room for %d more", i, n, room)
		}
		if n, room := len(c.index.all), cap(c.index.all)-len(c.index.all); room > n/8+64 {
			t.Errorf("scrape %d: %d series with room for %d more", i, n, room)
		}
	}
}

// offsetIn finds where a slice of the page starts, through any slice of a
// slice (textparse is given page[from:]) and whatever room the page has
// past its length; a copy of the same bytes, or a slice of another array,
// is not in the page.
func TestOffsetIn(t *testing.T) {
	page := append(make([]byte, 0, 64), "a 1\nbc 2\nbc 2\n"...)
	for _, c := range []struct {
		sub  []byte
		off  int
		isIn bool
	}{
		{page[4:6], 4, true},
		{page[4:][5:7], 9, true},
		{page[0:1], 0, true},
		{page[len(page)-1:], len(page) - 1, true},
		{page[4:4], 0, false},                     // empty
		{[]byte("bc"), 0, false},                  // a copy
		{bytes.Clone(page)[4:6], 0, false},        // same offset, another array
		{page[len(page) : len(page)+1], 0, false}, // past the length
	} {
		off, ok := offsetIn(page, c.sub)
		if ok != c.isIn || ok && off != c.off {
			t.Errorf("offsetIn(%q) = %d, %v; want %d, %v", c.sub, off, ok, c.off, c.isIn)
		}
	}
}

// Reading a sample's value and timestamp allocates nothing, also for the
// values strconv parses (the string conversions handed to it stay on the
// stack).
func TestSampleTailNoAlloc(t *testing.T) {
	page := []byte("x 1.7976931348623157e+308 1700000000000\n")
	var v float64
	allocs := testing.AllocsPerRun(100, func() {
		var ok bool
		v, _, _, _, ok = sampleTail(page, 1)
		if !ok {
			t.Fatal("sampleTail refused the line")
		}
	})
	if allocs != 0 || v != math.MaxFloat64 {
		t.Fatalf("sampleTail: %v allocations a line, value %v", allocs, v)
	}
}

// The whole-value shortcut reads " DIGITS\n" of up to 15 digits as
// strconv does, and leaves every other tail to the general reading.
func TestIntTail(t *testing.T) {
	tails := map[string]bool{" 0\n": true, " 1001\n": true, " 000123\n": true, " 999999999999999\n": true,
		" 9999999999999999\n": false, " 1": false, " \n": false, "  1\n": false, "\t1\n": false, " -1\n": false,
		" +1\n": false, " 1.5\n": false, " 1e3\n": false, " 1 1700000000000\n": false, " 1 \n": false, " 1\t\n": false,
		"1\n": false, "": false, " 1\r\n": false, " 0x1\n": false}
	r := rand.New(rand.NewPCG(5, 5))
	for range 10_000 {
		b := []byte{' '}
		for range 1 + r.IntN(15) {
			b = append(b, byte('0'+r.IntN(10)))
		}
		tails[string(b)+"\n"] = true
	}
	for tail, want := range tails {
		page := []byte("x" + tail)
		v, next, ok := intTail(page, 1)
		if ok != want {
			t.Fatalf("intTail(%q): ok %v, want %v", tail, ok, want)
		}
		if !ok {
			continue
		}
		ref, _ := parseValueRef(bytes.TrimSpace(page[1:]))
		if math.Float64bits(v) != math.Float64bits(ref) || next != len(page) {
			t.Fatalf("intTail(%q) = %v, next %d; strconv: %v, the line's end %d", tail, v, next, ref, len(page))
		}
	}
}
