package scraper

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

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
	cached := NewConverter(fixtureTarget("lc"))
	plain := NewConverter(fixtureTarget("lc"))
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

func TestLineCacheNotForOpenMetrics(t *testing.T) {
	page := read(t, "openmetrics.om")
	if got := convertBoth(t, ctOM, page, page); got[1] != 0 {
		t.Fatalf("an OpenMetrics page took %d lines from the cache", got[1])
	}
	// A target that changes format between scrapes.
	text := read(t, "edge.txt")
	convertBoth(t, ctText, text, text)
	c := NewConverter(fixtureTarget("lc"))
	ts := time.Unix(1_800_000_000, 0)
	for i, p := range []struct {
		page []byte
		ct   string
	}{{text, ctText}, {page, ctOM}, {text, ctText}, {text, ctText}} {
		if _, err := c.ConvertAll(p.page, p.ct, ts.Add(time.Duration(i)*time.Second), 0); err != nil {
			t.Fatal(err)
		}
		if want := map[int]int{3: sampleLines(text)}[i]; c.lc.taken != want {
			t.Fatalf("scrape %d took %d lines, want %d", i+1, c.lc.taken, want)
		}
	}
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
