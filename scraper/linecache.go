package scraper

import (
	"bytes"
	"math"
	"strconv"
	"sync"

	"github.com/otelstep/otelstep/internal/fastfloat"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/model/value"
)

// The line cache lets a scrape skip textparse for the lines of a text-format
// page that are byte for byte the previous page's, which between two scrapes
// of one target is nearly all of them: only the values change. Lexing the
// label sets is most of textparse's cost, and textparse is a large part of
// the whole scrape path (parse, convert, both encoders; docs/decisions.md).
//
// It holds, in page order, the entries textparse returned for the previous
// page: for a sample line its series entry (whose key is the line's series
// bytes), for a HELP, TYPE or comment line the whole line. A scrape walks
// the new page and the cache side by side. A sample line is taken when it
// starts with the cached series bytes followed by a blank, and what follows
// is one of the common shapes "VALUE[ TIMESTAMP]\n", parsed here exactly as
// PromParser parses them. A metadata line is taken when the whole line is
// equal. At the first line that is not taken, textparse parses the rest of
// the page from that line, and the cache is re-recorded from there.
//
// Why this reads the page as textparse would: every entry starts at a line
// start, and equal bytes from an entry start, in the same parser state,
// give the same entry; the bytes that can differ (value, timestamp) are
// parsed here with textparse's own rules, anything unusual being left to
// textparse. In the text format PromParser keeps nothing from one entry to
// the next, so textparse can take over at any line. The OpenMetrics parser
// keeps the family's type from its TYPE line (it normalises le and
// quantile values by it), so textparse takes over from that TYPE line and
// the entries up to the line that differed are skipped. OpenMetrics lines
// with a timestamp or an exemplar are always left to textparse.
//
// Why the cached entries are live: every entry in the cache was seen by the
// last successful scrape, so it is still in the Converter's series index
// under the same key (eviction only removes entries a scrape did not see);
// a failed scrape and DownAll, which forget series, reset the cache. A
// conversion cut short (past its deadline, or by a stop) keeps its series
// and the lines it read: the next scrape replays them and parses on from
// the line it stopped at.
type lineCache struct {
	ct    string // content type of the page the lines are of; "" when none
	om    bool   // the page is OpenMetrics
	lines []cachedLine

	off   bool // never used (tests compare against plain textparse)
	taken int  // lines the last scrape took from the cache
	// prev is how many lines the previous page had: until recording
	// overwrites them, lines[:prev] are its lines (see previous).
	prev int

	// recording the current scrape's lines
	rec    bool
	recPos int // offset just past the last recorded line
}

// cachedLine is one entry: a sample line (se) or a metadata line (meta).
type cachedLine struct {
	se   *seriesEntry // se.key is the line's series bytes
	meta *metaLine
}

// metaLine is a HELP, TYPE or comment line.
type metaLine struct {
	kind textparse.Entry
	// span is the line with its newline, and any whitespace-only lines
	// textparse skipped before it.
	span string
	name string           // HELP and TYPE: the metric name
	text string           // HELP, UNIT: the text as the parser's Help or Unit returned it
	typ  model.MetricType // TYPE
}

// reset empties the cache.
func (lc *lineCache) reset() {
	lc.ct = ""
	clear(lc.lines[:cap(lc.lines)])
	lc.lines = lc.lines[:0]
	lc.rec = false
}

// finish drops the references past the lines kept: call it when a scrape
// is done. It also gives back the room append left past the lines, which
// a first scrape leaves at up to as much again (one cachedLine a line of
// every target's page).
func (lc *lineCache) finish() {
	clear(lc.lines[len(lc.lines):cap(lc.lines)])
	lc.lines = trimRoom(lc.lines)
}

// trimRoom returns s, or a copy of it with a sixteenth of room to spare
// (for a page that grows) when appending left more than an eighth.
func trimRoom[T any](s []T) []T {
	if n := len(s); cap(s) > n+n/8+64 {
		return append(make([]T, 0, n+n/16), s...)
	}
	return s
}

// truncate keeps the first n lines, dropping the references of the rest.
func (lc *lineCache) truncate(n int) {
	clear(lc.lines[n:])
	lc.lines = lc.lines[:n]
}

// replay converts the leading lines of page that the cache holds and
// returns the offset of the first line it did not take (len(page) when it
// took them all), and where textparse must start to read that line as it
// would have in the whole page: the same offset for the text format, whose
// parser keeps nothing from line to line; for OpenMetrics the family's
// TYPE line, since its parser normalises le and quantile label values by
// the family's type. The cache keeps the lines taken.
func (c *Converter) replay(page []byte, contentType string, st *scrapeState) (pos, from int, done bool) {
	lc := &c.lc
	lc.taken = 0
	lc.prev = len(lc.lines)
	if lc.off || lc.ct == "" || contentType != lc.ct || len(page) == 0 || page[len(page)-1] != '\n' {
		lc.truncate(0)
		lc.prev = 0
		return 0, 0, false
	}
	tail := sampleTail
	if lc.om {
		tail = sampleTailOM
	}
	lastType := -1
	lastA, lastB := 0, 0 // the last line taken, for st.last
	i := 0
	for ; i < len(lc.lines); i++ {
		pos = lc.skipBlank(page, pos)
		l := lc.lines[i]
		if se := l.se; se != nil {
			if se.ps != nil && se.ps.fam.stale && se.ps.fam.gen != st.gen {
				break // to be resolved again, by textparse (metatable.go)
			}
			end := pos + len(se.key)
			if end >= len(page) || string(page[pos:end]) != se.key {
				break
			}
			v, ts, hasTS, next, ok := tail(page, end)
			if !ok {
				break
			}
			var tsp *int64
			if hasTS {
				tsp = &ts
			}
			lastA, lastB = pos, end
			c.series(nil, page[pos:end], se, tsp, v, st)
			if st.overLimit {
				return len(page), len(page), true // read no further (ConvertLeased fails the page)
			}
			pos = next
			continue
		}
		m := l.meta
		end := pos + len(m.span)
		if end > len(page) || string(page[pos:end]) != m.span {
			break
		}
		// The line is the one the metadata table holds already
		// (metatable.go): nothing to declare.
		if m.kind == textparse.EntryType {
			lastType = pos
		}
		lastA, lastB = end-1, end
		pos = end
	}
	if lastB > 0 {
		st.last = page[lastA:lastB] // once, not a pointer store per line
	}
	// The lines past i stay in the backing array until the scrape ends
	// (finish): recording reuses those that come back unchanged.
	lc.lines = lc.lines[:i]
	lc.taken = i
	pos = lc.skipBlank(page, pos)
	if !lc.om {
		return pos, pos, pos == len(page)
	}
	if rest := page[pos:]; string(rest) == "# EOF\n" {
		return len(page), len(page), true // the end, whatever the family
	}
	// textparse takes over, even at the end of the page: it reports a
	// missing # EOF.
	if lastType >= 0 {
		return pos, lastType, false
	}
	return pos, pos, false // no TYPE before: a fresh parser's state is the page's
}

// previous returns the previous page's lines, as replay found them: call
// it before recording this page's.
func (lc *lineCache) previous() []cachedLine {
	if lc.prev > cap(lc.lines) {
		return nil
	}
	return lc.lines[:lc.prev]
}

// skipBlank skips the blank lines PromParser ignores; OpenMetrics has none
// (textparse refuses them, so they are left to it).
func (lc *lineCache) skipBlank(page []byte, pos int) int {
	if lc.om {
		return pos
	}
	return skipNewlines(page, pos)
}

// before reports whether entry e, just returned by p, starts before pos:
// parse restarted at the family's TYPE line for OpenMetrics, and the
// entries up to pos were replayed.
func (lc *lineCache) before(page []byte, p textparse.Parser, e textparse.Entry, pos int) bool {
	var sub []byte
	switch e {
	case textparse.EntrySeries:
		sub, _, _ = p.Series()
	case textparse.EntryType:
		sub, _ = p.Type()
	case textparse.EntryHelp:
		sub, _ = p.Help()
	case textparse.EntryUnit:
		sub, _ = p.Unit()
	case textparse.EntryComment:
		sub = p.Comment()
	default:
		return false
	}
	off, ok := offsetIn(page, sub)
	return ok && off < pos
}

func skipNewlines(page []byte, pos int) int {
	for pos < len(page) && page[pos] == '\n' {
		pos++
	}
	return pos
}

// sampleTail reads what follows a sample line's series bytes, page[i:], the
// way PromParser does, for the shapes "[ \t]+VALUE([ \t]+TIMESTAMP)?[ \t]*\n"
// with VALUE made of letters, digits, '.', '+' and '-'. It returns the
// value (NaN made canonical, as PromParser does), the timestamp and the
// offset just past the newline. ok is false for anything else, which is
// left to textparse so that its reading, or its error, stands.
func sampleTail(page []byte, i int) (v float64, ts int64, hasTS bool, next int, ok bool) {
	if v, next, ok := intTail(page, i); ok {
		return v, 0, false, next, true
	}
	j := skipBlanks(page, i)
	if j == i {
		return 0, 0, false, 0, false
	}
	vs := j
	for j < len(page) && valueByte(page[j]) {
		j++
	}
	if j == vs || j == len(page) || (page[j] != ' ' && page[j] != '\t' && page[j] != '\n') {
		return 0, 0, false, 0, false
	}
	if v, ok = parseValue(page[vs:j]); !ok {
		return 0, 0, false, 0, false
	}
	j = skipBlanks(page, j)
	if j < len(page) && page[j] >= '0' && page[j] <= '9' {
		s := j
		for j < len(page) && page[j] >= '0' && page[j] <= '9' {
			j++
		}
		var err error
		ts, err = strconv.ParseInt(string(page[s:j]), 10, 64) // not kept: no copy to the heap
		if err != nil {
			return 0, 0, false, 0, false
		}
		hasTS = true
		j = skipBlanks(page, j)
	}
	if j == len(page) || page[j] != '\n' {
		return 0, 0, false, 0, false
	}
	return v, ts, hasTS, j + 1, true
}

// sampleTailOM is sampleTail for OpenMetrics, whose lexer wants exactly
// one space before the value: " VALUE\n" only. A timestamp or an exemplar
// after the value is left to textparse.
func sampleTailOM(page []byte, i int) (v float64, ts int64, hasTS bool, next int, ok bool) {
	if v, next, ok := intTail(page, i); ok {
		return v, 0, false, next, true
	}
	if i >= len(page) || page[i] != ' ' {
		return 0, 0, false, 0, false
	}
	j := i + 1
	for j < len(page) && valueByte(page[j]) {
		j++
	}
	if j == i+1 || j == len(page) || page[j] != '\n' {
		return 0, 0, false, 0, false
	}
	if v, ok = parseValue(page[i+1 : j]); !ok {
		return 0, 0, false, 0, false
	}
	return v, 0, false, j + 1, true
}

// intTail reads the commonest tail of a sample line, " DIGITS\n": a whole
// value (counters, histogram buckets and counts) of at most 15 digits, no
// timestamp. Such an integer is below 2^53, an exact float64, which is
// what strconv.ParseFloat returns for it; both formats' lexers take the
// shape. ok is false for any other tail, which sampleTail or sampleTailOM
// reads.
func intTail(page []byte, i int) (v float64, next int, ok bool) {
	if i >= len(page) || page[i] != ' ' {
		return 0, 0, false
	}
	var m uint64
	j := i + 1
	for ; j < len(page) && j <= i+15; j++ {
		d := page[j] - '0'
		if d > 9 {
			break
		}
		m = m*10 + uint64(d)
	}
	if j == i+1 || j == len(page) || page[j] != '\n' {
		return 0, 0, false
	}
	return float64(m), j + 1, true
}

// parseValue parses a sample value as textparse does (strconv.ParseFloat,
// no hex floats, NaN made Prometheus's NaN). Plain decimals and exponent
// forms, most values (Prometheus's client libraries write 1.5e+06 for large
// counters), take a shorter way that gives the same float (fastfloat.Parse).
func parseValue(tok []byte) (float64, bool) {
	if v, ok := fastfloat.Parse(tok); ok {
		return v, true
	}
	if bytes.ContainsAny(tok, "pP") { // PromParser refuses hex floats
		return 0, false
	}
	v, err := strconv.ParseFloat(string(tok), 64) // not kept: no copy to the heap
	if err != nil {
		return 0, false
	}
	if math.IsNaN(v) {
		v = math.Float64frombits(value.NormalNaN)
	}
	return v, true
}

func skipBlanks(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	return i
}

// valueByte reports whether c may be part of a sample value's token.
func valueByte(c byte) bool { return valueBytes[c] }

var valueBytes = func() (t [256]bool) {
	for c := range t {
		t[c] = '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '.' || c == '+' || c == '-'
	}
	return t
}()

// startRecording begins recording the lines textparse parser p returns for
// page[pos:]; the cache already holds the lines before pos.
func (lc *lineCache) startRecording(page []byte, pos int, contentType string, p textparse.Parser) {
	_, prom := p.(*textparse.PromParser)
	_, om := p.(*textparse.OpenMetricsParser)
	// A page without a final newline is parsed from a copy, whose
	// offsets are not the page's.
	if lc.off || !(prom || om) || len(page) == 0 || page[len(page)-1] != '\n' {
		lc.reset()
		return
	}
	if lc.ct != contentType || lc.om != om {
		lc.truncate(0) // cached lines of another format
	}
	lc.ct, lc.om = contentType, om
	lc.rec = true
	lc.recPos = pos
}

// stopRecording keeps the lines recorded so far: the next scrape parses
// from the line after them.
func (lc *lineCache) stopRecording() { lc.rec = false }

// entryStart is where the entry after the last recorded line starts.
func (lc *lineCache) entryStart(page []byte) int { return lc.skipBlank(page, lc.recPos) }

// recordSeries records the sample line whose series bytes, b, textparse
// returned; se is its entry.
func (lc *lineCache) recordSeries(page, b []byte, se *seriesEntry) {
	if !lc.rec {
		return
	}
	off, ok := offsetIn(page, b)
	if !ok || len(b) == 0 || off != lc.entryStart(page) {
		lc.rec = false
		return
	}
	e := bytes.IndexByte(page[off+len(b):], '\n')
	if e < 0 {
		lc.rec = false
		return
	}
	lc.lines = append(lc.lines, cachedLine{se: se})
	lc.recPos = off + len(b) + e + 1
}

// recordMeta records the HELP, TYPE or comment line of which textparse
// returned sub (its name, or a comment's text).
func (lc *lineCache) recordMeta(page, sub []byte, kind textparse.Entry, typ model.MetricType, help []byte, metas *metaLines) {
	if !lc.rec {
		return
	}
	start := lc.entryStart(page)
	off, ok := offsetIn(page, sub)
	if !ok || len(sub) == 0 || off < start {
		lc.rec = false
		return
	}
	e := bytes.IndexByte(page[off+len(sub):], '\n')
	if e < 0 {
		lc.rec = false
		return
	}
	end := off + len(sub) + e + 1
	if k := len(lc.lines); k < cap(lc.lines) {
		// The same line at the same index in the last page (a page that
		// always leaves the cache at one line, for an exemplar, say):
		// keep its entry rather than look the line up again.
		if old := lc.lines[:k+1][k].meta; old != nil && old.kind == kind && old.span == string(page[start:end]) {
			lc.lines = append(lc.lines, cachedLine{meta: old})
			lc.recPos = end
			return
		}
	}
	m := metas.get(lc.om, kind, page[start:end], func(span string) *metaLine {
		m := &metaLine{kind: kind, typ: typ, span: span}
		if kind != textparse.EntryComment { // sub is the name: share the span's bytes
			m.name = m.span[off-start : off-start+len(sub)]
		}
		if kind == textparse.EntryHelp || kind == textparse.EntryUnit {
			if h, ok := offsetIn(page, help); ok && h >= start && h+len(help) <= end {
				m.text = m.span[h-start : h-start+len(help)] // no escapes: the page's bytes
			} else {
				m.text = string(help)
			}
		}
		return m
	})
	lc.lines = append(lc.lines, cachedLine{meta: m})
	lc.recPos = end
}

// metaLines interns the metadata lines of a Manager's line caches. The
// targets of a job serve the same HELP and TYPE lines (the same exporter
// at the same version), so copies per target would repeat them for every
// target (docs/decisions.md).
//
// Sharing is sound because a metaLine is immutable and follows from its
// line's bytes alone, given the format: textparse returns the same entry,
// name, type and help text for the same bytes (the reasoning of the line
// cache, see lineCache), and the key holds the format, whose escapes
// differ. The table forgets everything once it holds maxMetaLines, so a
// page whose comments change every scrape cannot grow it without bound;
// the caches keep the lines they hold, and the next copy of a forgotten
// line is made again.
type metaLines struct {
	mu    sync.Mutex
	lines map[metaKey]*metaLine
	// texts interns the families' HELP texts (famState), which the
	// targets of a job repeat. It is bounded as lines is.
	texts map[string]string
}

// metaKey names a metadata line: the format, the kind, the bytes.
type metaKey struct {
	om   bool
	kind textparse.Entry
	span string
}

// maxMetaLines bounds a metaLines table: about a hundred exporters' worth
// of HELP and TYPE lines.
const maxMetaLines = 1 << 16

func newMetaLines() *metaLines {
	return &metaLines{lines: map[metaKey]*metaLine{}, texts: map[string]string{}}
}

// text returns b as a string shared by every caller that asks for the same
// bytes (HELP texts, see texts).
func (t *metaLines) text(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.texts[string(b)]; ok {
		return s
	}
	if len(t.texts) >= maxMetaLines {
		clear(t.texts)
	}
	s := string(b)
	t.texts[s] = s
	return s
}

// get returns the line interned for span, making it with build (from a
// string equal to span) if there is none.
func (t *metaLines) get(om bool, kind textparse.Entry, span []byte, build func(span string) *metaLine) *metaLine {
	t.mu.Lock()
	defer t.mu.Unlock()
	if m := t.lines[metaKey{om, kind, string(span)}]; m != nil {
		return m
	}
	if len(t.lines) >= maxMetaLines {
		clear(t.lines)
	}
	m := build(string(span))
	t.lines[metaKey{om, kind, m.span}] = m
	return m
}

// offsetIn is the offset of sub in page, if sub is a non-empty slice of it.
// A slice's capacity runs to the end of its array, so a slice of page made
// by a plain slice expression (as textparse makes the ones it returns, of
// the page or of page[from:] it was given) starts cap(page)-cap(sub) bytes
// into page; the addresses of its first byte and of page's byte there,
// equal or not, tell such a slice from a copy (an unescaped HELP text, a
// unit) or a slice of another array.
func offsetIn(page, sub []byte) (int, bool) {
	if len(sub) == 0 || len(page) == 0 {
		return 0, false
	}
	off := cap(page) - cap(sub)
	if off < 0 || off >= len(page) || len(sub) > len(page)-off || &page[off] != &sub[0] {
		return 0, false
	}
	return off, true
}
