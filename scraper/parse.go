// Reading a page: textparse's entries into samples, each sample into
// its series' point of this scrape, and the line a parse error names.

package scraper

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime/debug"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/model/value"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
)

// parseSafe is parse with a panic in it (the Prometheus parser's or
// labels library's on a page nothing else refused) as its error: one
// page must not take the process down. The converter's state is then
// that of a page that failed half-way, which abort undoes.
func (c *Converter) parseSafe(page []byte, pos, from int, contentType string, st *scrapeState) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = recovered(r, debug.Stack())
		}
	}()
	return c.parse(page, pos, from, contentType, st)
}

// parse reads page[pos:] with textparse, recording its lines in the line
// cache for the next scrape. textparse starts at from <= pos, where the
// parser's state for the line at pos begins (see lineCache.replay); the
// entries before pos were taken from the cache and are skipped.
func (c *Converter) parse(page []byte, pos, from int, contentType string, st *scrapeState) error {
	// _created series are handled here (roleCreated) rather than through
	// Parser.StartTimestamp: the collector counts them as samples, and
	// peeking ahead for every series costs a parser copy.
	p, err := textparse.New(page[from:], contentType, nil, textparse.ParserOptions{
		FallbackContentType: "text/plain",
	})
	if p == nil {
		return fmt.Errorf("content type %q: %w", contentType, err)
	}
	c.lc.startRecording(page, pos, contentType, p)
	for {
		e, err := p.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			ln, txt := lineOf(page, st.last)
			return fmt.Errorf("parse page: line %d %q: %w", ln, txt, err)
		}
		if from < pos && c.lc.before(page, p, e, pos) {
			continue // replayed already
		}
		switch e {
		case textparse.EntryType:
			n, t := p.Type()
			st.last = n
			c.declare(e, n, t, nil)
			c.lc.recordMeta(page, n, e, t, nil, c.metas)
		case textparse.EntryHelp:
			n, h := p.Help()
			st.last = n
			c.declare(e, n, "", h)
			c.lc.recordMeta(page, n, e, "", h, c.metas)
		case textparse.EntryUnit:
			n, u := p.Unit()
			st.last = n
			c.declare(e, n, "", u)
			c.lc.recordMeta(page, n, e, "", u, c.metas)
		case textparse.EntrySeries:
			b, tsp, v := p.Series()
			st.last = b
			if len(page) > maxLabelLength {
				// a line that long may hold a string too long for the
				// labels the parser builds of it
				off, _ := offsetIn(page, b)
				if err := checkLineTokens(page, off); err != nil {
					return fmt.Errorf("line %d: %w", bytes.Count(page[:off], []byte{'\n'})+1, err)
				}
			}
			se := c.series(p, b, nil, tsp, v, st)
			if se == nil {
				off, _ := offsetIn(page, b)
				return fmt.Errorf("line %d: %w", bytes.Count(page[:off], []byte{'\n'})+1, c.failed)
			}
			if st.overLimit {
				return nil // read no further (ConvertLeased fails the page)
			}
			c.lc.recordSeries(page, b, se)
		case textparse.EntryComment:
			cm := p.Comment()
			st.last = cm
			c.lc.recordMeta(page, cm, e, "", nil, c.metas)
		default:
			c.lc.stopRecording()
		}
	}
}

// series handles one sample of raw series b; se is its cached entry, or nil
// to look it up. It returns the entry, or nil when the series fails the
// scrape (c.failed says why), as Prometheus fails it.
func (c *Converter) series(p textparse.Parser, b []byte, se *seriesEntry, tsp *int64, v float64, st *scrapeState) *seriesEntry {
	st.n.samples++
	if se == nil {
		se = c.index.lookup(b)
	}
	if se == nil {
		if se = c.newEntry(p, b); se == nil {
			return nil
		}
	} else if se.gen == st.gen {
		// The same raw series twice on one page: Prometheus rejects
		// the repeat as a duplicate sample, so the first one wins.
		if se.role != roleDrop {
			st.n.kept++
		}
		return se
	} else if p != nil && se.ps != nil && se.ps.fam.stale && se.ps.fam.gen != st.gen {
		// its family's metadata changed (metatable.go); the line cache
		// leaves such lines to textparse. (A series that resolved once
		// resolves again: what could fail it, its labels and the rules,
		// are the same.)
		_ = c.resolve(p, se)
	}
	// New, or kept through a failed scrape that restarted it
	// (Converter.restart): either way new to what the scrapes delivered.
	added := se.gen == 0
	se.gen = st.gen
	c.seenN++
	if se.role == roleDrop {
		return se
	}
	st.n.kept++
	if lim := c.t.Limits.Samples; lim > 0 {
		// Prometheus's limitAppender: past the limit no sample is added
		// and no series counts as new. The scrape fails there: the page
		// is read no further, so that no series past the limit costs
		// memory or time.
		if st.appended++; st.appended > lim {
			st.overLimit = true
			return se
		}
	}
	if added {
		st.n.added++
	}
	ptTs := st.tsNs
	se.track = true
	if tsp != nil && c.t.HonorTimestamps {
		ptTs = uint64(*tsp) * uint64(time.Millisecond)
		se.track = false // Prometheus keeps no staleness for explicit timestamps
	}
	c.sample(p, se, v, ptTs, st.om, st.gen, &st.sl)
	if se.created && !math.IsNaN(v) && v > 0 {
		c.created = append(c.created, createdRef{se, secondsToNs(v)})
	}
	return se
}

// sample adds one sample of a known series to this scrape's points.
func (c *Converter) sample(p textparse.Parser, se *seriesEntry, v float64, ptTs uint64, om bool, gen uint64, sl *pointSlab) {
	ps := se.ps
	f := ps.fam
	if f.gen != gen {
		f.gen = gen
		f.out = c.metrics.metric(f)
		c.order = append(c.order, f)
	}
	if ps.gen != gen {
		ps.gen = gen
		ps.resetScrape()
		ps.curStart, ps.curLast, ps.created = ps.start, ps.last, 0
		c.touched = append(c.touched, ps)
	}
	if se.role == roleCreated {
		ps.created = secondsToNs(v)
		return
	}
	switch f.typ {
	case model.MetricTypeHistogram:
		sh := ps.shaped()
		h := sh.hist
		if h == nil {
			// The builder is lent for the scrape: the Manager's
			// converters share a pool of them, with their buckets'
			// arrays, rather than each series keeping its own across
			// scrapes (hundreds of bytes a series, while a job converts
			// one page at a time). The point is new every scrape.
			h = c.pools.builder()
			c.lent = append(c.lent, h)
			x := next(&sl.hcur, &sl.ar.pools.hpts, &sl.ar.hpts)
			x.p.Attributes, x.p.TimeUnixNano = ps.attrs(), ptTs
			*h = histBuilder{pt: &x.p, sumSlot: &x.sum, buckets: h.buckets[:0]}
			sh.hist = h
		} else if h.pt.TimeUnixNano != ptTs {
			return // a time other than the point's first sample's: the collector drops it
		}
		switch se.role {
		case roleBucket:
			h.buckets = append(h.buckets, bucket{se.arg, v})
		case roleCount:
			// the collector takes the point time from _count
			h.count, h.hasCount, h.pt.TimeUnixNano = v, true, ptTs
		case roleSum:
			h.sum, h.hasSum = v, true
		}
		if om {
			c.exemplars(p, &h.pt.Exemplars, ptTs)
		}
	case model.MetricTypeSummary:
		sh := ps.shaped()
		s := sh.sum
		if s == nil {
			s = &summaryBuilder{pt: &metricspb.SummaryDataPoint{Attributes: ps.attrs(), TimeUnixNano: ptTs}}
			sh.sum = s
		} else if s.pt.TimeUnixNano != ptTs {
			return // as a histogram's
		}
		switch se.role {
		case roleQuantile:
			s.pt.QuantileValues = append(s.pt.QuantileValues, &metricspb.SummaryDataPoint_ValueAtQuantile{Quantile: se.arg, Value: v})
		case roleCount:
			s.count, s.hasCount, s.pt.TimeUnixNano = v, true, ptTs
		case roleSum:
			s.sum = v
		}
	default:
		if ps.num != nil { // same labels again under another spelling: last wins
			if ps.num.TimeUnixNano != ptTs {
				return // unless at another time: the collector keeps the first
			}
			ps.num.Value = &metricspb.NumberDataPoint_AsDouble{AsDouble: v}
			ps.num.TimeUnixNano = ptTs
			ps.num.Flags = 0
		} else {
			pt := sl.num(v)
			pt.Attributes = ps.attrs()
			pt.TimeUnixNano = ptTs
			ps.num = pt
			switch d := f.out.Data.(type) {
			case *metricspb.Metric_Gauge:
				d.Gauge.DataPoints = append(d.Gauge.DataPoints, pt)
			case *metricspb.Metric_Sum:
				d.Sum.DataPoints = append(d.Sum.DataPoints, pt)
			}
		}
		if value.IsStaleNaN(v) { // an explicit staleness marker on the page
			ps.num.Value, ps.num.Flags = nil, flagNoValue
		}
		if om {
			c.exemplars(p, &ps.num.Exemplars, ptTs)
		}
	}
}

// exemplars converts the parser's exemplars of the current sample the way
// the collector does: trace_id/span_id (any case) become ids when they are
// exactly 16/8 non-zero bytes of hex, else attributes; empty ones are
// dropped; no timestamp means the sample's.
func (c *Converter) exemplars(p textparse.Parser, dst *[]*metricspb.Exemplar, ptTs uint64) {
	if p == nil { // a line from the line cache: it has none
		return
	}
	for p.Exemplar(&c.ex) {
		e := &metricspb.Exemplar{Value: &metricspb.Exemplar_AsDouble{AsDouble: c.ex.Value}, TimeUnixNano: ptTs}
		if c.ex.HasTs {
			e.TimeUnixNano = uint64(c.ex.Ts) * uint64(time.Millisecond)
		}
		c.ex.Labels.Range(func(l labels.Label) {
			switch strings.ToLower(l.Name) {
			case "trace_id":
				if l.Value == "" {
					return
				}
				if id := hexID(l.Value, 16); id != nil {
					e.TraceId = id
					return
				}
			case "span_id":
				if l.Value == "" {
					return
				}
				if id := hexID(l.Value, 8); id != nil {
					e.SpanId = id
					return
				}
			}
			e.FilteredAttributes = append(e.FilteredAttributes, strKV(strings.Clone(l.Name), strings.Clone(l.Value)))
		})
		*dst = append(*dst, e)
		c.ex = exemplar.Exemplar{}
	}
}

// hexID decodes s as an n-byte id; nil unless it is exactly that and not all zero.
func hexID(s string, n int) []byte {
	if len(s) != 2*n {
		return nil
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil
	}
	for _, x := range b {
		if x != 0 {
			return b
		}
	}
	return nil
}

// clip is b, cut to n bytes with an ellipsis when longer: a series or
// line named in an error (a page's can be megabytes long).
func clip(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}

// lineOf estimates the line of the parser's failure: the line after the last
// complete entry the parser returned. It counts newlines up to the last
// series/comment returned; good enough to name the line in an error.
func lineOf(page, last []byte) (int, string) {
	off, ok := offsetIn(page, last)
	if ok {
		if i := bytes.IndexByte(page[off:], '\n'); i >= 0 {
			off += i + 1
		} else {
			off = len(page)
		}
	}
	line := bytes.Count(page[:off], []byte{'\n'}) + 1
	// skip blank lines
	rest := page[off:]
	for len(rest) > 0 && rest[0] == '\n' {
		rest = rest[1:]
		line++
	}
	if i := bytes.IndexByte(rest, '\n'); i >= 0 {
		rest = rest[:i]
	}
	if len(rest) > 120 {
		rest = rest[:120]
	}
	return line, string(rest)
}
