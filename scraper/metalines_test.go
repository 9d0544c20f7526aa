package scraper

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/prometheus/prometheus/model/textparse"
)

// The targets of a job share their metadata lines: two converters of one
// table that scrape the same page hold the same metaLine for each HELP and
// TYPE line, and a second scrape taken from the cache describes the metrics
// as the first did.
func TestMetaLinesShared(t *testing.T) {
	page := read(t, "node.txt")
	metas := newMetaLines()
	sets, pools := newAttrSets(nil), newSlabPools()
	a := newConverter(fixtureTarget("node"), sets, pools, metas)
	b := newConverter(fixtureTarget("node"), sets, pools, metas)
	for i := range 2 {
		for _, c := range []*Converter{a, b} {
			rm, err := c.Convert(page, ctText, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if m := findPoints(rm, "node_cpu_seconds_total"); m == nil || m.Description != "Seconds the CPUs spent in each mode." {
				t.Fatalf("scrape %d: node_cpu_seconds_total described as %v", i, m)
			}
		}
	}
	if a.lc.taken == 0 {
		t.Fatal("the second scrape took nothing from the cache")
	}
	metaN, shared := 0, 0
	for i, l := range a.lc.lines {
		if l.meta == nil {
			continue
		}
		metaN++
		if b.lc.lines[i].meta == l.meta {
			shared++
		}
	}
	if metaN == 0 || shared != metaN {
		t.Errorf("%d of %d metadata lines shared, want all", shared, metaN)
	}
	if len(metas.lines) != metaN {
		t.Errorf("table holds %d lines for one page of %d", len(metas.lines), metaN)
	}
	// The families' descriptions are one string for both targets.
	helps, same := 0, 0
	for k, fa := range a.fams {
		fb := b.fams[k]
		if fa.help == "" || fb == nil {
			continue
		}
		helps++
		if unsafe.StringData(fa.help) == unsafe.StringData(fb.help) {
			same++
		}
	}
	if helps == 0 || same != helps {
		t.Errorf("%d of %d families' HELP texts shared, want all", same, helps)
	}
}

// A HELP line's text depends on the format as well as its bytes: the text
// format escapes only backslash and newline, OpenMetrics a double quote too.
// Converters of both formats sharing a table each keep their own reading.
func TestMetaLinesKeyedByFormat(t *testing.T) {
	const help = `say \"hi\"`
	text := "# HELP greeting " + help + "\n# TYPE greeting gauge\ngreeting 1\n"
	om := "# HELP greeting " + help + "\n# TYPE greeting gauge\ngreeting 1\n# EOF\n"
	metas := newMetaLines()
	sets, pools := newAttrSets(nil), newSlabPools()
	ct := newConverter(fixtureTarget("t"), sets, pools, metas)
	co := newConverter(fixtureTarget("o"), sets, pools, metas)
	for i := range 3 {
		for _, c := range []struct {
			conv       *Converter
			page, ct   string
			want, name string
		}{
			{ct, text, ctText, `say \"hi\"`, "text"},
			{co, om, ctOM, `say "hi"`, "OpenMetrics"},
		} {
			rm, err := c.conv.Convert([]byte(c.page), c.ct, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if m := findPoints(rm, "greeting"); m == nil || m.Description != c.want {
				t.Fatalf("%s, scrape %d: described as %q, want %q", c.name, i, m.GetDescription(), c.want)
			}
			// The cached line is what describes a family that comes back
			// after it was gone.
			if l := c.conv.lc.lines[0].meta; l == nil || l.kind != textparse.EntryHelp || l.text != c.want {
				t.Fatalf("%s, scrape %d: cached HELP line %+v, want its text %q", c.name, i, l, c.want)
			}
		}
	}
}

// The table forgets its lines once full; a cache goes on with the lines it
// holds, and the table takes new ones.
func TestMetaLinesBounded(t *testing.T) {
	metas := newMetaLines()
	sets, pools := newAttrSets(nil), newSlabPools()
	kept := newConverter(fixtureTarget("kept"), sets, pools, metas)
	page := []byte("# HELP kept_g A gauge kept.\n# TYPE kept_g gauge\nkept_g 1\n")
	if _, err := kept.Convert(page, ctText, time.Now()); err != nil {
		t.Fatal(err)
	}
	churn := newConverter(fixtureTarget("churn"), sets, pools, metas)
	for i := range 3 {
		var b strings.Builder
		for j := range maxMetaLines / 4 {
			fmt.Fprintf(&b, "# HELP g%d scrape %d\n# TYPE g%d gauge\ng%d 1\n", j, i, j, j)
		}
		if _, err := churn.Convert([]byte(b.String()), ctText, time.Now()); err != nil {
			t.Fatal(err)
		}
		if n := len(metas.lines); n > maxMetaLines {
			t.Fatalf("scrape %d: table holds %d lines, bound %d", i, n, maxMetaLines)
		}
	}
	if _, ok := metas.lines[metaKey{false, textparse.EntryHelp, "# HELP kept_g A gauge kept.\n"}]; ok {
		t.Fatal("the table was never cleared")
	}
	rm, err := kept.Convert(page, ctText, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if kept.lc.taken != 3 {
		t.Errorf("after the table was cleared the cache took %d lines of 3", kept.lc.taken)
	}
	if m := findPoints(rm, "kept_g"); m == nil || m.Description != "A gauge kept." || m.GetGauge() == nil {
		t.Errorf("after the table was cleared: kept_g is %v", m)
	}
}
