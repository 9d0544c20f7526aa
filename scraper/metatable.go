package scraper

import (
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/textparse"
)

// A family's metadata is taken by its name, wherever on the page its HELP,
// TYPE and UNIT lines are, as Prometheus's scrape cache keeps it and the
// collector reads it: a line sets its name's entry when it is read, an
// entry outlives the page that declared it, and a series takes the
// metadata of its own name, else of its name without a _bucket, _count,
// _sum, _total, _info or _created suffix. So an exporter that writes all of
// a group's HELP and TYPE lines first and the samples after gets its
// counters and descriptions, and a HELP line after its family's samples
// counts from the next scrape (as in the collector).
//
// The table is needed only while textparse reads lines: the line cache
// replays the lines of a steady page without it (linecache.go), and a
// replayed metadata line is byte for byte the one the table already holds.
// So, like the series index (seriesindex.go), it is built when a scrape
// first parses a line, from the previous page's lines in the line cache
// (the state the last scrape left), kept while scrapes parse, and dropped
// after indexIdle scrapes in a row that did not, or after a first scrape.
//
// A series' family is resolved once, when it is new (Converter.resolve).
// When a line changes what a name declares, the families whose series
// resolved by that name are marked stale, and their series are resolved
// again the next time they are read: the line cache stops at them, and
// textparse reads them with the table.

// metaDecl is what HELP, TYPE and UNIT lines declared for one name.
type metaDecl struct {
	typ  model.MetricType // unknown without a TYPE line
	help string           // as the parser returned it
	unit string           // as the page wrote it (not yet UCUM)
}

// metaTable is a Converter's metadata by name.
type metaTable struct {
	m     map[string]metaDecl // nil unless built
	used  bool                // parsed lines this scrape
	first bool                // no scrape has ended since there were no series (seriesIndex.first)
	idle  int                 // scrapes in a row that did not parse
}

// trimmableSuffixes are the suffixes the collector strips to find a
// family's metadata, in its order (normalizeMetricName).
var trimmableSuffixes = [...]string{"_bucket", "_count", "_sum", "_total", "_info", "_created"}

// normalizeName is the collector's normalizeMetricName: name without the
// first of trimmableSuffixes it ends in (unless it is all of it).
func normalizeName(name string) string {
	for _, s := range trimmableSuffixes {
		if len(name) > len(s) && strings.HasSuffix(name, s) {
			return name[:len(name)-len(s)]
		}
	}
	return name
}

// build makes the table, if there is none, from lines (the previous
// page's), and marks it used.
func (t *metaTable) build(lines []cachedLine) {
	t.used = true
	if t.m != nil {
		return
	}
	t.m = map[string]metaDecl{}
	for _, l := range lines {
		if m := l.meta; m != nil {
			t.apply(m.kind, m.name, m.typ, m.text)
		}
	}
}

// apply records one metadata line and reports whether it changed its
// name's entry.
func (t *metaTable) apply(kind textparse.Entry, name string, typ model.MetricType, text string) bool {
	d, ok := t.m[name]
	if !ok {
		d.typ = model.MetricTypeUnknown
	}
	old := d
	switch kind {
	case textparse.EntryType:
		d.typ = typ
	case textparse.EntryHelp:
		d.help = text
	case textparse.EntryUnit:
		d.unit = text
	default:
		return false
	}
	if ok && d == old {
		return false
	}
	t.m[name] = d
	return true
}

// get returns what was declared for name.
func (t *metaTable) get(name string) (metaDecl, bool) {
	d, ok := t.m[name]
	return d, ok
}

// beginScrape starts a scrape.
func (t *metaTable) beginScrape(noSeries bool) { t.first = t.first || noSeries }

// endScrape ends a scrape: the table goes after a first scrape (the next
// one of the same page replays every line) or after indexIdle scrapes in
// a row that parsed nothing, unless keep (there is no line cache to build
// it again from).
func (t *metaTable) endScrape(keep bool) {
	first := t.first
	t.first = false
	switch {
	case t.m == nil, keep:
	case first:
		t.m, t.used, t.idle = nil, false, 0
	case t.used:
		t.used, t.idle = false, 0
	default:
		if t.idle++; t.idle >= indexIdle {
			t.m, t.idle = nil, 0
		}
	}
}

// declare records a metadata line the parser returned and marks the
// families it changes stale.
func (c *Converter) declare(kind textparse.Entry, name []byte, typ model.MetricType, text []byte) {
	t := &c.meta
	if d, ok := t.m[string(name)]; ok { // no copy: a lookup
		switch {
		case kind == textparse.EntryType && d.typ == typ,
			kind == textparse.EntryHelp && d.help == string(text),
			kind == textparse.EntryUnit && d.unit == string(text):
			return // the common case: no change, no copies
		}
	}
	key := c.metas.text(name)
	if !t.apply(kind, key, typ, c.metas.text(text)) {
		return
	}
	c.metaChanged(key)
}

// metaChanged marks stale the families whose series may resolve
// differently now that name's entry changed (see affects).
func (c *Converter) metaChanged(name string) {
	if len(c.fams) == 0 {
		return
	}
	check := func(k []byte) {
		if f := c.fams[string(k)]; f != nil && c.affects(name, f) {
			f.stale = true
		}
	}
	buf := append(c.kvKey[:0], name...)
	check(buf)
	if base := normalizeName(name); base != name {
		check(buf[:len(base)])
	}
	for _, s := range trimmableSuffixes {
		check(append(buf[:len(name)], s...))
	}
	c.kvKey = buf
	if c.resFams {
		// families of a resource the page named (honor_labels): keyed
		// with the resource first
		for _, f := range c.fams {
			if f.res != "" && c.affects(name, f) {
				f.stale = true
			}
		}
	}
}

// affects reports whether a declaration for name may change what a series
// of family f resolves to: a series named name, or named name with a
// suffix and without a declaration of its own.
func (c *Converter) affects(name string, f *famState) bool {
	switch {
	case f.name == name:
		return true
	case normalizeName(name) == f.name:
		// name may be one of the family's series (a histogram's
		// _bucket, ...): if the family has series of that role
		var role uint8
		switch name[len(f.name):] {
		case "_bucket":
			role = roleBucket
			if f.typ == model.MetricTypeGaugeHistogram {
				role = roleValue
			}
		case "_sum":
			role = roleSum
		case "_count":
			role = roleCount
		case "_created":
			role = roleCreated
		case "_info":
			role = roleValue
		default:
			return false
		}
		return f.typ != model.MetricTypeCounter && f.roles&(1<<role) != 0
	case normalizeName(f.name) == name:
		_, own := c.meta.get(f.name)
		return !own
	}
	return false
}
