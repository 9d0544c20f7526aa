package scraper

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/otelstep/otelstep/pipeline"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/relabel"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/model/value"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
)

// ScopeName and ScopeVersion are what the collector's prometheus receiver reports.
const (
	ScopeName    = "github.com/open-telemetry/opentelemetry-collector-contrib/receiver/prometheusreceiver"
	ScopeVersion = "0.0.1"
)

// flagNoValue is DataPointFlags_DATA_POINT_FLAGS_NO_RECORDED_VALUE_MASK: the
// collector's translation of a Prometheus staleness marker.
const flagNoValue = uint32(metricspb.DataPointFlags_DATA_POINT_FLAGS_NO_RECORDED_VALUE_MASK)

// famState is cached per output metric name across scrapes: what the
// family's scrapes change, and its metadata, which none does and which is
// shared by the families of equal metadata of a Manager's targets.
type famState struct {
	*famMeta
	gen   uint64
	out   *metricspb.Metric // current scrape's metric
	lastN int               // points in the last scrape's: the next one's capacity
	// stale: a metadata line changed what the family's series resolve
	// to (metatable.go); each is resolved again when next read.
	stale bool
	roles uint8 // 1<<role of each role its series have had
}

// famMeta is a family's metadata, fixed when the family is made. One exists
// per distinct family of a Manager's targets (attrSets.fam); at 84 targets
// serving three pages, kept per target it was 9,800 copies of 128 bytes
// for a few hundred distinct ones. Read only.
type famMeta struct {
	famID
	metadata *pipeline.AttrSet // of typ
}

// famID is what names a family's metadata.
type famID struct {
	// res is "" for the target's resource, else the job and instance a
	// page named itself under honor_labels (job + "\xff" + instance): the
	// collector makes a resource of each.
	res              string
	name, help, unit string
	typ              model.MetricType
}

// pointSeries is one output data point identity (family + attributes).
// One exists per point a scrape emits (at 84 targets, about 20,000), so it
// is kept to 96 bytes: what only histograms and summaries need is in
// shapeState, and the attributes are the set's.
type pointSeries struct {
	fam *famState
	// set is the attributes, nil for none; it keeps their entries in
	// Converter.sets and the SharedAttrs.
	set   *pipeline.AttrSet
	start uint64  // committed start time (ns)
	last  float64 // committed value (counter) or count (hist/summary)
	gen   uint64  // scrape that last touched it
	stale uint64  // scrape that emitted its staleness marker

	// per-scrape state, reset on the first sample of each scrape
	curStart uint64
	curLast  float64
	created  uint64                     // start time from a _created sample this scrape (ns)
	num      *metricspb.NumberDataPoint // this scrape's point, for counters and gauges

	shape *shapeState // histograms and summaries only
	seen  bool        // a point was committed in a successful scrape
}

// shapeState is what a histogram or summary series keeps besides its
// pointSeries.
type shapeState struct {
	// last committed histogram/summary point: its bounds and quantiles
	// shape the staleness marker. Read only.
	lastBounds []float64 // of the last histogram point: immutable, reused while unchanged
	histSeen   bool      // a histogram point was committed (lastBounds is its)
	lastSum    *metricspb.SummaryDataPoint

	hist *histBuilder // this scrape's, from the Manager's pool (slabPools.builder), or nil
	sum  *summaryBuilder
}

// attrs is the point attributes: a set's, downstream must not mutate them.
func (ps *pointSeries) attrs() []*commonpb.KeyValue {
	if ps.set == nil {
		return nil
	}
	return ps.set.KeyValues()
}

// hist is this scrape's histogram builder, or nil.
func (ps *pointSeries) hist() *histBuilder {
	if ps.shape == nil {
		return nil
	}
	return ps.shape.hist
}

// sum is this scrape's summary builder, or nil.
func (ps *pointSeries) sum() *summaryBuilder {
	if ps.shape == nil {
		return nil
	}
	return ps.shape.sum
}

// resetScrape forgets this scrape's point and builders.
func (ps *pointSeries) resetScrape() {
	ps.num = nil
	if ps.shape != nil {
		ps.shape.hist, ps.shape.sum = nil, nil
	}
}

// shaped returns the series' shapeState, made at its first use.
func (ps *pointSeries) shaped() *shapeState {
	if ps.shape == nil {
		ps.shape = new(shapeState)
	}
	return ps.shape
}

type bucket struct{ le, cum float64 }

// histBuilder collects one classic histogram's samples of one scrape.
type histBuilder struct {
	pt       *metricspb.HistogramDataPoint
	sumSlot  *float64 // where pt.Sum points, allocated with pt
	buckets  []bucket
	count    float64
	hasCount bool
	sum      float64
	hasSum   bool
}

// summaryBuilder collects one summary's samples of one scrape.
type summaryBuilder struct {
	pt       *metricspb.SummaryDataPoint
	count    float64
	hasCount bool
	sum      float64
}

const (
	roleValue = iota
	roleBucket
	roleQuantile
	roleSum
	roleCount
	roleCreated // _created of a counter, histogram or summary: the start time
	roleDrop    // dropped by metric_relabel_configs
)

// seriesEntry is cached per raw series bytes as returned by Parser.Series,
// so each scrape resolves a known series with one map lookup: family, role,
// attributes and the metric_relabel_configs verdict are all decided once.
type seriesEntry struct {
	key   string // the raw series bytes, shared with the map key
	ps    *pointSeries
	role  uint8
	track bool // staleness tracked: no honoured explicit timestamp (as Prometheus)
	// created marks a text-format gauge named B_created: Converter.starts
	// holds the point keys it gives a start time to. (Kept out of the
	// entry, one of which exists per sample line, to keep it at 48 bytes.)
	created bool
	arg     float64
	gen     uint64
}

// pointKey names a point series: its family and its attributes, one
// set for equal attributes (nil for none).
type pointKey struct {
	fam *famState
	set *pipeline.AttrSet
}

// createdFor is what a B_created gauge gives a start time to: the points
// with its attributes (attrs, as in an attrSets key after the kind) of the
// families named fams (the counter's, then the histogram's or summary's).
// ps are the points found last, kept so that a steady page finds them
// without the index's maps (seriesindex.go): a point of the current
// scrape with the same family and set is the one the maps would give.
type createdFor struct {
	fams  [2]string
	attrs string
	ps    [2]*pointSeries
}

// createdRef is a text-format B_created gauge sample of this scrape.
type createdRef struct {
	se *seriesEntry
	ns uint64
}

// Converter turns scraped pages of one target into OTLP, keeping per-series
// state across scrapes (start times, cached attribute sets, staleness).
//
// Point attribute slices (and the KeyValues in them) are cached and shared
// between the points of successive scrapes: downstream must not mutate point
// attributes in place (replace the slice instead). A Converter is safe for
// use by one goroutine at a time (it locks internally).
type Converter struct {
	mu sync.Mutex
	// lent are the histogram builders this scrape took from the Manager's
	// pool (slabPools.builder): ConvertLeased gives them back as it
	// returns, whatever path the scrape took.
	lent     []*histBuilder
	t        Target
	resource *resourcepb.Resource
	base     []*commonpb.KeyValue // target labels as attributes, sorted
	tlbls    labels.Labels        // target labels (job, instance, static labels)
	// index holds the raw series and finds them and their point series (seriesindex.go).
	index seriesIndex
	// last are the counts of the last successful conversion, for
	// otelstep's own scrape metrics (lastCounts).
	last scrapeCounts
	// kvs interns point attributes: a page's label pairs repeat across its
	// series (model, engine, gpu, ...), and one immutable KeyValue per pair
	// instead of one per series is most of a series' memory.
	kvs map[string]*commonpb.KeyValue
	// sets interns attribute sets, shared by a Manager's converters.
	sets *attrSets
	fams map[string]*famState
	// starts are, for each text-format gauge named B_created (a
	// seriesEntry marked created), the families of the counter B_total
	// and of the histogram or summary B, whose points with the same
	// attributes it gives a start time: prometheus_client exposes their
	// creation time that way in the text format, and it is a better start
	// time than the first scrape. Looked up per scrape (a handful of
	// series) rather than cached as pointers, which eviction would leave
	// dangling.
	starts map[*seriesEntry]createdFor
	gen    uint64
	seenN  int // raw entries touched this scrape
	// failed is why the last new series failed the scrape (newEntry).
	failed error
	// budget is the Manager's memory budget (budget.go; nil: none), held
	// what this converter's series are charged to it.
	budget *memBudget
	held   int64
	// pageHeld is what the page being converted is charged (the loop's),
	// for the budget's bound on one target.
	pageHeld int64
	// deadline is when the conversion in progress must give up (zero:
	// never), newN its new series so far: the clock is read once every
	// deadlineEvery new series, the slow path.
	deadline time.Time
	timeout  time.Duration
	newN     int
	// meta is the metadata the pages declared, by name (metatable.go).
	meta metaTable
	// resFams: some family is of a resource the page named (honor_labels).
	resFams bool

	// scratch
	lbls    labels.Labels
	lb      labels.Builder
	ex      exemplar.Exemplar
	setKey  []byte
	pairs   []labels.Label       // a new series' attribute labels
	attrBuf []*commonpb.KeyValue // a new attribute set, before the set copies it
	kvKey   []byte
	touched []*pointSeries
	order   []*famState
	om      bool         // this scrape's page is OpenMetrics
	created []createdRef // this scrape's B_created gauge samples
	lc      lineCache    // the previous page's lines
	// keys interns the series keys of the job's targets (serieskeys.go);
	// nil for a job of one target.
	keys  *seriesKeys
	keyed bool       // this scrape looked keys up in keys
	metas *metaLines // metadata lines, shared by a Manager's converters
	pools *slabPools // chunks of the scrapes' memory (arena.go)
	ms    metricSlab // this scrape's metrics
}

// NewConverter returns a Converter for target t whose attribute sets are
// shared in no pipeline.SharedAttrs: the sinks encode its points afresh.
func NewConverter(t Target) *Converter { return NewSharingConverter(t, nil) }

// NewSharingConverter returns a Converter for target t that makes its
// point attribute sets and metric metadata in shared, so that encoders
// given shared store and reuse their encodings (pipeline.SharedAttrs), as
// a Manager's converters do.
func NewSharingConverter(t Target, shared *pipeline.SharedAttrs) *Converter {
	return newConverter(t, newAttrSets(shared), newSlabPools(), newMetaLines())
}

// newConverter returns a Converter for target t that interns its point
// attributes in sets and its metadata lines in metas, and carves its
// scrapes from pools.
func newConverter(t Target, sets *attrSets, pools *slabPools, metas *metaLines) *Converter {
	instance := t.instance()
	res := &resourcepb.Resource{Attributes: resourceAttrs(t.JobName, instance, t.Scheme)}
	c := &Converter{
		t:        t,
		resource: res,
		kvs:      map[string]*commonpb.KeyValue{},
		fams:     map[string]*famState{},
		sets:     sets,
		pools:    pools,
		metas:    metas,
		lb:       *labels.NewBuilder(labels.EmptyLabels()),
		timeout:  t.Timeout,
	}
	keys := make([]string, 0, len(t.Labels))
	for k, v := range t.Labels {
		if v != "" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		c.base = append(c.base, c.kv(k, t.Labels[k]))
	}
	tl := map[string]string{model.JobLabel: t.JobName, model.InstanceLabel: instance}
	for k, v := range t.Labels {
		tl[k] = v
	}
	c.tlbls = labels.FromMap(tl)
	return c
}

// resourceAttrs are the collector's resource attributes for a job and
// instance: service.name, server.address (only for a host worth naming:
// not loopback, unspecified or localhost), service.instance.id,
// server.port and url.scheme, in its order.
func resourceAttrs(job, instance, scheme string) []*commonpb.KeyValue {
	host, port, err := net.SplitHostPort(instance)
	if err != nil {
		host, port = instance, ""
	}
	if scheme == "" {
		scheme = "http"
	}
	attrs := []*commonpb.KeyValue{strKV("service.name", job)}
	if discernibleHost(host) {
		attrs = append(attrs, strKV("server.address", host))
	}
	return append(attrs, strKV("service.instance.id", instance), strKV("server.port", port), strKV("url.scheme", scheme))
}

func discernibleHost(host string) bool {
	if ip := net.ParseIP(host); ip != nil {
		return !ip.IsLoopback() && !ip.IsUnspecified()
	}
	return host != "" && host != "localhost"
}

// kv returns the interned KeyValue for name=value (copies of both: the
// page buffer they may point into is reused).
func (c *Converter) kv(name, value string) *commonpb.KeyValue {
	key := c.kvKey[:0]
	key = append(key, name...)
	key = append(key, 0xff)
	key = append(key, value...)
	c.kvKey = key
	if kv := c.kvs[string(key)]; kv != nil {
		return kv
	}
	kv := strKV(strings.Clone(name), strings.Clone(value))
	c.kvs[string(key)] = kv
	return kv
}

func strKV(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// Convert parses page (contentType as served) scraped at ts and returns the
// ResourceMetrics for it, including the synthetic series (with
// scrape_duration_seconds = 0; see ConvertScrape). On a malformed page it
// returns an error naming the line and nothing is converted.
func (c *Converter) Convert(page []byte, contentType string, ts time.Time) (*metricspb.ResourceMetrics, error) {
	return c.ConvertScrape(page, contentType, ts, 0)
}

// slab hands out a scrape's number points from its arena's chunks.
type slab struct {
	ar     *arena
	cur    *chunk[numPoint]
	hcur   *chunk[histPoint]
	counts *chunk[uint64]
}

func (s *slab) num(v float64) *metricspb.NumberDataPoint {
	x := next(&s.cur, &s.ar.pools.nums, &s.ar.nums)
	x.d.AsDouble = v
	x.p.Value = &x.d
	return &x.p
}

// scrapeCounts are the numbers behind the synthetic scrape_* series.
type scrapeCounts struct {
	samples int // scrape_samples_scraped: every sample line
	kept    int // scrape_samples_post_metric_relabeling
	added   int // scrape_series_added: series new to the cache
}

// ConvertScrape is Convert with the scrape duration for
// scrape_duration_seconds. It returns the target's resource only; see
// ConvertAll.
func (c *Converter) ConvertScrape(page []byte, contentType string, ts time.Time, dur time.Duration) (*metricspb.ResourceMetrics, error) {
	rms, err := c.ConvertAll(page, contentType, ts, dur)
	if err != nil {
		return nil, err
	}
	return rms[0], nil
}

// ConvertAll is ConvertScrape with every resource of the scrape: the
// target's first (with the synthetic series), then, under honor_labels, one
// per job and instance the page itself named, as the collector makes them.
func (c *Converter) ConvertAll(page []byte, contentType string, ts time.Time, dur time.Duration) ([]*metricspb.ResourceMetrics, error) {
	rms, _, err := c.ConvertLeased(page, contentType, ts, dur)
	return rms, err // the lease goes unreleased: its memory goes to the garbage collector
}

// ConvertLeased is ConvertAll with the leases of the scrape's memory, for
// the batch's Leases (see pipeline.Lease): releasing them once nothing
// reads the resources any more lets the next scrapes reuse the memory.
func (c *Converter) ConvertLeased(page []byte, contentType string, ts time.Time, dur time.Duration) ([]*metricspb.ResourceMetrics, []*pipeline.Lease, error) {
	return c.convertBy(page, contentType, ts, dur, time.Time{})
}

// convertBy is ConvertLeased that gives up, failing the page, once
// deadline has passed (zero: never) while it reads series new to it.
func (c *Converter) convertBy(page []byte, contentType string, ts time.Time, dur time.Duration, deadline time.Time) ([]*metricspb.ResourceMetrics, []*pipeline.Lease, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deadline, c.newN = deadline, 0
	defer c.returnBuilders() // taken and returned in this call
	om := strings.HasPrefix(strings.TrimSpace(contentType), "application/openmetrics-text")
	c.om = om
	c.created = c.created[:0]
	c.keyed = false
	c.gen++
	st := scrapeState{gen: c.gen, tsNs: uint64(ts.UnixNano()), om: om}
	a := c.pools.newArena()
	st.sl.ar = a
	c.ms.begin(a)
	c.touched = c.touched[:0]
	c.order = c.order[:0]
	c.seenN = 0
	c.meta.beginScrape(c.index.len() == 0)
	c.index.beginScrape()

	// The lines that are byte for byte those of the previous page are
	// taken from the line cache; textparse parses the rest (linecache.go).
	pos, from, done := c.replay(page, contentType, &st)
	var err error
	if !done {
		// what the last scrape left declared, before recording replaces
		// the previous page's lines
		c.meta.build(c.lc.previous())
		err = c.parseSafe(page, pos, from, contentType, &st)
	}
	if err == nil && st.overLimit {
		err = fmt.Errorf("%w (limit: %d)", errSampleLimit, c.t.Limits.Samples)
	}
	if err != nil {
		c.abort()
		c.ms = metricSlab{}
		a.lease.Release() // abort dropped every pointer into it
		return nil, nil, &pageError{err: err, n: st.n}
	}
	c.lc.finish()
	c.keys.judge(&c.keyed)
	c.startsFromCreatedGauges(st.gen)
	c.finish(st.tsNs, &st.sl)
	c.staleAndEvict(st.gen, st.tsNs)
	c.index.endScrape()
	c.meta.endScrape(c.lc.off)
	rms := c.collect(st.gen, st.tsNs, 1, dur, st.n, &st.sl)
	c.ms = metricSlab{} // the converter keeps no pointer into the arena
	c.last = st.n
	return rms, a.leases[:], nil
}

// lastCounts are the samples of the last page converted: all of them,
// those metric relabeling kept, and the series new in it.
func (c *Converter) lastCounts() scrapeCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// pageError is why a page failed to convert, with the samples counted up
// to there: a failed scrape reports them as Prometheus does (DownLeased).
type pageError struct {
	err error
	n   scrapeCounts
}

func (e *pageError) Error() string { return e.err.Error() }
func (e *pageError) Unwrap() error { return e.err }

// scrapeState is what one ConvertAll call carries between its lines.
type scrapeState struct {
	gen, tsNs uint64
	om        bool
	n         scrapeCounts
	// appended counts the samples sample_limit counts: those metric
	// relabeling kept, a repeat of a series on the page not again;
	// overLimit is set past the limit (the page is read on, to count).
	appended  int
	overLimit bool
	sl        slab
	last      []byte // bytes of the last entry read: a parse error is on a later line
}

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
	isNew := false
	if se == nil {
		if se = c.newEntry(p, b); se == nil {
			return nil
		}
		isNew = true
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
	if isNew {
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
func (c *Converter) sample(p textparse.Parser, se *seriesEntry, v float64, ptTs uint64, om bool, gen uint64, sl *slab) {
	ps := se.ps
	f := ps.fam
	if f.gen != gen {
		f.gen = gen
		f.out = c.ms.metric(f)
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
			// scrapes (592 bytes a series for 20 buckets, and a job
			// converts one page at a time). The point is new every
			// scrape.
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

// startsFromCreatedGauges gives the cumulative series of this scrape the
// start time of their text-format B_created gauge (unless the page gave a
// TYPE'd _created, which wins). The gauge itself is still emitted, as the
// collector does.
func (c *Converter) startsFromCreatedGauges(gen uint64) {
	for _, r := range c.created {
		cf, ok := c.starts[r.se]
		if !ok {
			continue
		}
		var found [2]*pointSeries // what is kept for the next scrape
		for i, fk := range cf.fams {
			f := c.fams[fk]
			if f == nil {
				continue
			}
			// The gauge's attributes are the counter's and the summary's
			// set; a histogram's are a set of their own kind.
			set := r.se.ps.set
			if f.typ == model.MetricTypeHistogram && set != nil {
				c.setKey = append(append(c.setKey[:0], kindHistogram), cf.attrs...)
				if set = c.sets.find(c.setKey); set == nil {
					continue
				}
			}
			ps := cf.ps[i]
			if ps == nil || ps.gen != gen || ps.fam != f || ps.set != set {
				ps = c.index.point(pointKey{f, set})
			}
			if ps == nil || ps.gen != gen {
				continue
			}
			found[i] = ps
			if ps.created != 0 {
				continue
			}
			switch ps.fam.typ {
			case model.MetricTypeCounter, model.MetricTypeHistogram, model.MetricTypeSummary:
				ps.created = r.ns
			}
		}
		if found != cf.ps {
			cf.ps = found
			c.starts[r.se] = cf
		}
	}
}

// abort forgets the per-scrape state of a scrape that failed half-way, so
// nothing of it leaks into the next scrape or the staleness markers.
func (c *Converter) abort() {
	for _, ps := range c.touched {
		ps.resetScrape()
		ps.gen = 0
	}
	for _, f := range c.order {
		f.out, f.gen = nil, 0
	}
	c.touched, c.order = c.touched[:0], c.order[:0]
	c.lc.reset()
}

// finish completes this scrape's cumulative points (start times, histogram
// buckets) and commits the per-series state.
func (c *Converter) finish(now uint64, sl *slab) {
	for _, ps := range c.touched {
		switch {
		case ps.hist() != nil:
			c.finishHist(ps, ps.hist(), now, sl)
		case ps.sum() != nil:
			c.finishSummary(ps, ps.sum(), now)
		case ps.num != nil && ps.fam.typ == model.MetricTypeCounter:
			if v, ok := ps.num.Value.(*metricspb.NumberDataPoint_AsDouble); ok {
				c.startFor(ps, v.AsDouble, ps.created, ps.num.TimeUnixNano)
			}
			ps.num.StartTimeUnixNano = ps.curStart
		}
	}
	for _, ps := range c.touched {
		if ps.hist() == nil && ps.sum() == nil && ps.num == nil {
			continue // only a _created sample: no point, nothing to commit
		}
		ps.start, ps.last, ps.seen = ps.curStart, ps.curLast, true
		if ps.shape != nil {
			ps.shape.hist = nil // back to the pool as ConvertLeased returns
		}
	}
}

// returnBuilders gives the histogram builders this scrape took back to
// the pool; no series points at them any more (finish and abort forgot
// them).
func (c *Converter) returnBuilders() {
	for i, h := range c.lent {
		c.pools.putBuilder(h)
		c.lent[i] = nil
	}
	c.lent = c.lent[:0]
}

// startFor picks the start time of a cumulative point whose time is at
// (the scrape's, or the page's timestamp when honoured): the page's
// _created, else the time of the series' first point, moved to at on a
// reset; never after at, whatever the page's clocks say (a start after
// the point's time is no interval at all).
func (c *Converter) startFor(ps *pointSeries, v float64, created, at uint64) {
	switch {
	case created != 0:
		ps.curStart = created
	case !ps.seen:
		ps.curStart = at
	case v < ps.last:
		ps.curStart = at // counter reset
	}
	ps.curStart = min(ps.curStart, at)
	if !math.IsNaN(v) {
		ps.curLast = v
	}
}

// finishHist turns the cumulative buckets into an OTLP point and appends
// it, unless the collector would drop it: no _count, NaN or decreasing
// buckets, or a count below the largest bucket.
func (c *Converter) finishHist(ps *pointSeries, h *histBuilder, now uint64, sl *slab) {
	if !h.hasCount {
		return
	}
	slices.SortFunc(h.buckets, func(a, b bucket) int {
		switch {
		case a.le < b.le:
			return -1
		case a.le > b.le:
			return 1
		}
		return 0
	})
	bs := h.buckets
	if len(bs) > 0 && math.IsInf(bs[len(bs)-1].le, 1) {
		bs = bs[:len(bs)-1] // the +Inf bucket is the count
	}
	stale := value.IsStaleNaN(h.sum) || value.IsStaleNaN(h.count)
	pt := h.pt
	if !stale {
		prev := 0.0
		for _, b := range bs {
			if math.IsNaN(b.cum) || b.cum < prev {
				return
			}
			prev = b.cum
		}
		if math.IsNaN(h.count) || h.count < prev {
			return
		}
		pt.Count = uint64(h.count)
		if h.hasSum {
			*h.sumSlot = h.sum
			pt.Sum = h.sumSlot
		}
	} else {
		pt.Flags = flagNoValue
	}
	// The bounds rarely change: the last point's (immutable downstream,
	// like the attributes) serve again when they are the same.
	var bounds []float64
	sh := ps.shape
	if sh.histSeen && len(sh.lastBounds) == len(bs) {
		bounds = sh.lastBounds
		for i, b := range bs {
			if math.Float64bits(bounds[i]) != math.Float64bits(b.le) {
				bounds = nil
				break
			}
		}
	}
	fresh := bounds == nil
	if fresh {
		bounds = make([]float64, len(bs))
	}
	counts := carve(&sl.counts, &sl.ar.pools.counts, &sl.ar.counts, len(bs)+1)
	prev := 0.0
	for i, b := range bs {
		if fresh {
			bounds[i] = b.le
		}
		if !stale {
			counts[i] = uint64(b.cum - prev)
			prev = b.cum
		}
	}
	if !stale {
		counts[len(bs)] = uint64(h.count - prev)
	}
	pt.ExplicitBounds, pt.BucketCounts = bounds, counts
	c.startFor(ps, h.count, ps.created, pt.TimeUnixNano)
	pt.StartTimeUnixNano = ps.curStart
	sh.lastBounds, sh.histSeen = bounds, true
	hd := ps.fam.out.Data.(*metricspb.Metric_Histogram).Histogram
	hd.DataPoints = append(hd.DataPoints, pt)
}

// finishSummary appends a summary point; like the collector, none without _count.
func (c *Converter) finishSummary(ps *pointSeries, s *summaryBuilder, now uint64) {
	if !s.hasCount {
		return
	}
	pt := s.pt
	slices.SortStableFunc(pt.QuantileValues, func(a, b *metricspb.SummaryDataPoint_ValueAtQuantile) int {
		switch {
		case a.Quantile < b.Quantile:
			return -1
		case a.Quantile > b.Quantile:
			return 1
		}
		return 0
	})
	if value.IsStaleNaN(s.sum) || value.IsStaleNaN(s.count) {
		pt.Flags = flagNoValue
		for _, q := range pt.QuantileValues {
			q.Value = 0
		}
	} else {
		pt.Sum, pt.Count = s.sum, uint64(s.count)
	}
	c.startFor(ps, s.count, ps.created, pt.TimeUnixNano)
	pt.StartTimeUnixNano = ps.curStart
	ps.shape.lastSum = pt
	sd := ps.fam.out.Data.(*metricspb.Metric_Summary).Summary
	sd.DataPoints = append(sd.DataPoints, pt)
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

// staleAndEvict gives every series that was on the previous page but not on
// this one a staleness marker (once: its entry is then forgotten), and drops
// cache entries no longer exposed. Nothing to do, and no map walk, when
// every cached series was seen.
func (c *Converter) staleAndEvict(gen, now uint64) {
	if c.seenN == c.index.len() {
		return
	}
	c.index.evict(gen, func(se *seriesEntry) {
		charge := seriesCharge(len(se.key))
		c.held -= charge
		c.budget.give(charge)
		c.markStale(se, gen, now)
		if se.created {
			delete(c.starts, se)
		}
	})
	for k, f := range c.fams {
		if f.gen != gen {
			delete(c.fams, k)
		}
	}
	// Forget the interned pairs when churning label values (a request id,
	// say) have made the table much larger than the live series: the
	// series keep their KeyValues, new ones intern afresh.
	if len(c.kvs) > 4*len(c.touched)+256 { // touched: this scrape's point series, every live one
		clear(c.kvs)
		for _, b := range c.base {
			c.kvs[b.Key+"\xff"+b.Value.GetStringValue()] = b
		}
	}
}

// markStale emits the staleness marker of se's point, as the collector
// writes it for a Prometheus stale NaN: no value, flags NO_RECORDED_VALUE,
// histograms keep their bounds with zero counts, summaries their quantiles.
func (c *Converter) markStale(se *seriesEntry, gen, now uint64) {
	ps := se.ps
	if !se.track || se.role == roleDrop || !ps.seen || ps.gen == gen || ps.stale == gen {
		return
	}
	ps.stale = gen
	f := ps.fam
	if f.gen != gen {
		f.gen = gen
		f.out = c.ms.metric(f)
		c.order = append(c.order, f)
	}
	switch d := f.out.Data.(type) {
	case *metricspb.Metric_Gauge:
		d.Gauge.DataPoints = append(d.Gauge.DataPoints, &metricspb.NumberDataPoint{Attributes: ps.attrs(), TimeUnixNano: now, Flags: flagNoValue})
	case *metricspb.Metric_Sum:
		pt := &metricspb.NumberDataPoint{Attributes: ps.attrs(), TimeUnixNano: now, Flags: flagNoValue}
		if f.typ == model.MetricTypeCounter {
			pt.StartTimeUnixNano = ps.start
		}
		d.Sum.DataPoints = append(d.Sum.DataPoints, pt)
	case *metricspb.Metric_Histogram:
		if ps.shape == nil || !ps.shape.histSeen {
			return
		}
		b := ps.shape.lastBounds
		d.Histogram.DataPoints = append(d.Histogram.DataPoints, &metricspb.HistogramDataPoint{Attributes: ps.attrs(),
			StartTimeUnixNano: ps.start, TimeUnixNano: now, Flags: flagNoValue, ExplicitBounds: b, BucketCounts: make([]uint64, len(b)+1)})
	case *metricspb.Metric_Summary:
		if ps.shape == nil || ps.shape.lastSum == nil {
			return
		}
		last := ps.shape.lastSum
		qs := make([]*metricspb.SummaryDataPoint_ValueAtQuantile, len(last.QuantileValues))
		for i, q := range last.QuantileValues {
			qs[i] = &metricspb.SummaryDataPoint_ValueAtQuantile{Quantile: q.Quantile}
		}
		d.Summary.DataPoints = append(d.Summary.DataPoints, &metricspb.SummaryDataPoint{Attributes: ps.attrs(),
			StartTimeUnixNano: ps.start, TimeUnixNano: now, Flags: flagNoValue, QuantileValues: qs})
	}
}

// collect lists this scrape's metrics (page order, staleness markers, then
// the synthetic series); a family whose points were all dropped is left out,
// as the collector does.
func (c *Converter) collect(gen, ts uint64, up float64, dur time.Duration, n scrapeCounts, sl *slab) []*metricspb.ResourceMetrics {
	metrics := carve(&c.ms.mptrs, &c.ms.ar.pools.mptrs, &c.ms.ar.mptrs, len(c.order)+len(synthDefs))[:0]
	var others []*metricspb.ResourceMetrics // honor_labels resources, in page order
	var otherIdx map[string]int
	var own [synthN]*metricspb.Metric // the page's own up and scrape_*
	for _, f := range c.order {
		f.lastN = pipeline.MetricPoints(f.out)
		if f.lastN > 0 {
			if f.res == "" {
				if i, ok := synthIndex[f.name]; ok {
					own[i] = f.out
					f.lastN++ // room for the synthetic point
				}
				metrics = append(metrics, f.out)
			} else {
				i, ok := otherIdx[f.res]
				if !ok {
					if otherIdx == nil {
						otherIdx = map[string]int{}
					}
					i = len(others)
					otherIdx[f.res] = i
					job, inst, _ := strings.Cut(f.res, "\xff")
					others = append(others, wrapAttrs(resourceAttrs(job, inst, c.t.Scheme), nil))
				}
				sm := others[i].ScopeMetrics[0]
				sm.Metrics = append(sm.Metrics, f.out)
			}
		}
		f.out = nil
	}
	c.order = c.order[:0]
	// The synthetic series are the target's: one scrape, one up.
	rms := []*metricspb.ResourceMetrics{c.wrap(c.synthetic(metrics, &own, ts, up, dur, n, sl))}
	return append(rms, others...)
}

// famFor resolves the family, role and le/quantile label of a series name
// from what the page declared for the name, else for the name without a
// suffix (metatable.go); the synthetic series' names have the collector's
// metadata for them, whatever the page declared. famName is the family's name, outName the output
// metric's, d what was declared for the family.
func (c *Converter) famFor(name string) (famName, outName string, typ model.MetricType, role uint8, drop string, d metaDecl) {
	famName, outName, typ, role = name, name, model.MetricTypeUnknown, roleValue
	if sd, ok := synthDecls[name]; ok {
		// a page's own up or scrape_*: the synthetic series' metric
		return name, name, sd.typ, roleValue, "", sd
	}
	tn := name
	d, found := c.meta.get(name)
	if !found {
		if tn = normalizeName(name); tn == name {
			return
		}
		if d, found = c.meta.get(tn); !found {
			return
		}
	}
	suffix := name[len(tn):]
	var ok bool
	switch d.typ {
	case model.MetricTypeCounter:
		switch suffix {
		case "", "_total":
			ok = true
		case "_created":
			ok, role = true, roleCreated
			// the counter's output name: with _total unless the page's
			// counter samples go without it
			outName = tn + "_total"
			if f := c.fams[tn]; f != nil && f.typ == model.MetricTypeCounter {
				outName = tn
			}
		}
	case model.MetricTypeHistogram, model.MetricTypeSummary:
		switch {
		case suffix == "_sum":
			ok, role = true, roleSum
		case suffix == "_count":
			ok, role = true, roleCount
		case suffix == "_created":
			ok, role = true, roleCreated
		case suffix == "_bucket" && d.typ == model.MetricTypeHistogram:
			ok, role, drop = true, roleBucket, model.BucketLabel
		case suffix == "" && d.typ == model.MetricTypeSummary:
			ok, role, drop = true, roleQuantile, model.QuantileLabel
		}
	case model.MetricTypeGaugeHistogram:
		ok = suffix == "_bucket"
	case model.MetricTypeInfo:
		ok = suffix == "_info"
	default:
		ok = suffix == ""
	}
	if !ok {
		// a family of its own name, with what was declared for that
		d, _ = c.meta.get(name)
		return name, name, model.MetricTypeUnknown, roleValue, "", metaDecl{help: d.help, unit: d.unit}
	}
	typ = d.typ
	famName = tn
	if typ != model.MetricTypeCounter {
		outName = tn
	} else if role != roleCreated {
		outName = name
	}
	return
}

// newEntry resolves family, role and attributes of a series seen for the
// first time: the page's labels merged with the target's the way
// Prometheus does it (exported_ prefixes or honor_labels), then
// metric_relabel_configs, then the collector's label-to-attribute rules.
// It returns nil, with c.failed set, for a series that fails the scrape.
func (c *Converter) newEntry(p textparse.Parser, b []byte) *seriesEntry {
	if c.newN++; c.newN%deadlineEvery == 0 && !c.deadline.IsZero() && time.Now().After(c.deadline) {
		c.failed = convertTimeout(c.timeout)
		return nil
	}
	charge := seriesCharge(len(b))
	if !c.budget.take(charge, c.held+c.pageHeld) {
		c.failed = c.budget.exhausted("a new series", charge, c.held+c.pageHeld)
		return nil
	}
	rawKey := c.keys.str(b, &c.keyed)
	se := &seriesEntry{key: rawKey}
	if err := c.resolve(p, se); err != nil {
		c.budget.give(charge)
		c.failed = fmt.Errorf("series %s: %w", clip(b, 120), err)
		return nil // not kept: the next scrape fails on it again, as Prometheus's does
	}
	c.held += charge
	c.index.add(se)
	return se
}

// deadlineEvery is how many new series a conversion reads between two
// looks at the clock.
const deadlineEvery = 256

// resolve decides se's family, role and attributes from the series p
// returned last (newEntry), or decides them again when its family's
// metadata changed (metatable.go).
func (c *Converter) resolve(p textparse.Parser, se *seriesEntry) error {
	if se.created {
		delete(c.starts, se)
	}
	if old := se.ps; old != nil {
		defer func() {
			if se.ps == nil || se.ps.fam != old.fam {
				c.index.dropPoint(pointKey{old.fam, old.set}) // of the family it had
			}
		}()
	}
	se.ps, se.role, se.arg, se.created = nil, roleValue, 0, false
	p.Labels(&c.lbls)
	lset := c.mutate(c.lbls)
	if lset.IsEmpty() {
		se.role = roleDrop
		return nil
	}
	name := lset.Get(model.MetricNameLabel)
	if name == "" {
		// Prometheus fails the scrape (errNameLabelMandatory)
		return fmt.Errorf("metric_relabel_configs left it no %s label", model.MetricNameLabel)
	}
	if err := c.t.Limits.verify(lset); err != nil {
		return err // Prometheus fails the scrape on it
	}
	_, outName, typ, role, drop, decl := c.famFor(name)
	se.role = role
	switch role {
	case roleBucket:
		se.arg = parseFloat(lset.Get(model.BucketLabel))
	case roleQuantile:
		se.arg = parseFloat(lset.Get(model.QuantileLabel))
	}
	pairs := c.pairs[:0]
	lset.Range(func(l labels.Label) {
		switch l.Name {
		case model.JobLabel, model.InstanceLabel:
			// The resource's: the target's, or (honor_labels) the page's.
			return
		case model.MetricNameLabel, model.SchemeLabel, model.MetricsPathLabel, drop:
			return
		}
		if l.Value == "" {
			return
		}
		pairs = append(pairs, l)
	})
	c.pairs = pairs
	res := ""
	if j, i := lset.Get(model.JobLabel), lset.Get(model.InstanceLabel); j != c.t.JobName || i != c.t.instance() {
		res = j + "\xff" + i // only honor_labels lets a page's job/instance through
	}
	famKey := outName
	if res != "" {
		famKey = res + "\xfe" + outName
	}
	// The attrSets key: the kind of point, then the attributes (0xff
	// name 0xfe value each; neither byte occurs in UTF-8).
	kind := byte(kindNumber)
	if typ == model.MetricTypeHistogram {
		kind = kindHistogram
	}
	key := append(c.setKey[:0], kind)
	for _, l := range pairs {
		key = append(key, 0xff)
		key = append(key, l.Name...)
		key = append(key, 0xfe)
		key = append(key, l.Value...)
	}
	c.setKey = key
	if !c.om && typ == model.MetricTypeGauge && strings.HasSuffix(outName, "_created") {
		base := strings.TrimSuffix(outName, "_created")
		prefix := famKey[:len(famKey)-len(outName)]
		se.created = true
		if c.starts == nil {
			c.starts = map[*seriesEntry]createdFor{}
		}
		c.starts[se] = createdFor{fams: [2]string{prefix + base + "_total", prefix + base}, attrs: string(key[1:])}
	}
	f := c.fams[famKey]
	// (A stale family this scrape already emitted keeps its metadata
	// until the next scrape, as the collector's does.)
	if f == nil || f.typ != typ || f.stale && f.gen != c.gen {
		if m := c.famMetaFor(res, outName, typ, decl); f != nil && f.famMeta == m {
			f.stale = false // declared again as it was: the same family
		} else {
			f = &famState{famMeta: m}
			c.fams[famKey] = f
			c.resFams = c.resFams || res != ""
		}
	}
	f.roles |= 1 << role
	// Shared: the same slice serves every scrape of the series (and the
	// series with the same attributes, attrsets.go) and is never changed,
	// so the sinks may cache its encoding. Equal attributes are one set,
	// so the family and the set name the point.
	var set *pipeline.AttrSet
	if len(pairs) > 0 {
		set = c.sets.get(key, func() []*commonpb.KeyValue {
			attrs := c.attrBuf[:0]
			for _, l := range pairs {
				attrs = append(attrs, c.kv(l.Name, l.Value))
			}
			c.attrBuf = attrs
			return attrs
		})
	}
	pk := pointKey{f, set}
	ps := c.index.point(pk)
	if ps == nil {
		ps = &pointSeries{fam: f, set: set}
		c.index.addPoint(pk, ps)
	}
	se.ps = ps
	return nil
}

// mutate is Prometheus's mutateSampleLabels: target labels win over the
// page's (which are kept as exported_NAME) unless honor_labels, then
// metric_relabel_configs. An empty result means drop the series.
func (c *Converter) mutate(ls labels.Labels) labels.Labels {
	lb := &c.lb
	lb.Reset(ls)
	if c.t.HonorLabels {
		c.tlbls.Range(func(l labels.Label) {
			if !ls.Has(l.Name) {
				lb.Set(l.Name, l.Value)
			}
		})
	} else {
		var conflicts []labels.Label
		c.tlbls.Range(func(l labels.Label) {
			if v := ls.Get(l.Name); v != "" {
				conflicts = append(conflicts, labels.Label{Name: l.Name, Value: v})
			}
			lb.Set(l.Name, l.Value)
		})
		// shortest names first, as Prometheus resolves them
		slices.SortStableFunc(conflicts, func(a, b labels.Label) int { return len(a.Name) - len(b.Name) })
		for _, l := range conflicts {
			n := l.Name
			for {
				n = model.ExportedLabelPrefix + n
				if lb.Get(n) == "" {
					lb.Set(n, l.Value)
					break
				}
			}
		}
	}
	if len(c.t.MetricRelabelConfigs) > 0 && !relabel.ProcessBuilder(lb, c.t.MetricRelabelConfigs...) {
		return labels.EmptyLabels()
	}
	return lb.Labels()
}

// famMetaFor is the metadata of family outName of resource res, of type
// typ and with what was declared for it (interned: equal metadata is one
// famMeta).
func (c *Converter) famMetaFor(res, outName string, typ model.MetricType, d metaDecl) *famMeta {
	m := famID{res: res, name: outName, typ: typ, help: d.help}
	if d.unit != "" {
		m.unit = unitOf(d.unit)
	}
	return c.sets.fam(m)
}

// metricSlab hands out a scrape's metrics and their point slices from its
// arena's chunks: a node page has hundreds of families of a few points
// each, and a metric and a points slice per family were half of a scrape's
// allocations.
type metricSlab struct {
	ar        *arena
	sums      *chunk[sumMetric]
	gauges    *chunk[gaugeMetric]
	hists     *chunk[histMetric]
	summaries *chunk[summaryMetric]
	nums      *chunk[*metricspb.NumberDataPoint]
	mptrs     *chunk[*metricspb.Metric]
	res       *chunk[resMetrics]
}

// A metric, its oneof wrapper and its data, allocated together.
type (
	sumMetric struct {
		m metricspb.Metric
		w metricspb.Metric_Sum
		d metricspb.Sum
	}
	gaugeMetric struct {
		m metricspb.Metric
		w metricspb.Metric_Gauge
		d metricspb.Gauge
	}
	histMetric struct {
		m metricspb.Metric
		w metricspb.Metric_Histogram
		d metricspb.Histogram
	}
	summaryMetric struct {
		m metricspb.Metric
		w metricspb.Metric_Summary
		d metricspb.Summary
	}
)

// begin starts a scrape whose memory is carved from a.
func (ms *metricSlab) begin(a *arena) {
	*ms = metricSlab{ar: a}
}

// numPoints returns an empty slice of capacity n carved from the scrape's
// chunks of point pointers. Its capacity is exact, so an append past it
// moves that family's points to an array of their own; so does a family
// of more than a chunk's worth.
func (ms *metricSlab) numPoints(n int) []*metricspb.NumberDataPoint {
	if n == 0 {
		return nil
	}
	return carve(&ms.nums, &ms.ar.pools.ptrs, &ms.ar.ptrs, n)[:0]
}

// metric returns family f's metric for this scrape, with room for as many
// points as its last scrape had.
func (ms *metricSlab) metric(f *famState) *metricspb.Metric {
	const cum = metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
	var m *metricspb.Metric
	switch f.typ {
	case model.MetricTypeCounter, model.MetricTypeInfo, model.MetricTypeStateset:
		x := next(&ms.sums, &ms.ar.pools.sums, &ms.ar.sums)
		x.d.AggregationTemporality, x.d.IsMonotonic = cum, f.typ == model.MetricTypeCounter
		x.d.DataPoints = ms.numPoints(f.lastN)
		x.w.Sum, x.m.Data, m = &x.d, &x.w, &x.m
	case model.MetricTypeHistogram:
		x := next(&ms.hists, &ms.ar.pools.hists, &ms.ar.hists)
		x.d.AggregationTemporality = cum
		x.d.DataPoints = make([]*metricspb.HistogramDataPoint, 0, f.lastN)
		x.w.Histogram, x.m.Data, m = &x.d, &x.w, &x.m
	case model.MetricTypeSummary:
		x := next(&ms.summaries, &ms.ar.pools.summaries, &ms.ar.summaries)
		x.d.DataPoints = make([]*metricspb.SummaryDataPoint, 0, f.lastN)
		x.w.Summary, x.m.Data, m = &x.d, &x.w, &x.m
	default:
		x := next(&ms.gauges, &ms.ar.pools.gauges, &ms.ar.gauges)
		x.d.DataPoints = ms.numPoints(f.lastN)
		x.w.Gauge, x.m.Data, m = &x.d, &x.w, &x.m
	}
	m.Name, m.Description, m.Unit, m.Metadata = f.name, f.help, f.unit, f.metadata.KeyValues()
	return m
}

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

var synthDefs = []struct{ name, help, unit string }{
	{"up", "The scraping was successful", ""},
	{"scrape_duration_seconds", "Duration of the scrape", "s"},
	{"scrape_samples_scraped", "The number of samples the target exposed", ""},
	{"scrape_samples_post_metric_relabeling", "The number of samples remaining after metric relabeling was applied", ""},
	{"scrape_series_added", "The approximate number of new series in this scrape", ""},
}

// synthN is len(synthDefs).
const synthN = 5

// synthIndex is the index in synthDefs of each synthetic series' name.
var synthIndex = func() map[string]int {
	if len(synthDefs) != synthN {
		panic("scraper: synthN is not len(synthDefs)")
	}
	m := map[string]int{}
	for i, d := range synthDefs {
		m[d.name] = i
	}
	return m
}()

// synthDecls are the collector's metadata for the synthetic series: a
// page's own series of these names take it (famFor).
var synthDecls = func() map[string]metaDecl {
	m := map[string]metaDecl{}
	for _, d := range synthDefs {
		word := d.unit
		if word == "s" {
			word = "seconds" // as Prometheus declares it; unitOf makes it s again
		}
		m[d.name] = metaDecl{typ: model.MetricTypeGauge, help: d.help, unit: word}
	}
	return m
}()

// synthetic appends the synthetic series to ms. own holds the page's own
// metrics of their names (a federation page's up): the synthetic point
// joins those, one metric a name, as in the collector; a page point of
// the very series (no labels of its own) is the collector's one point: at
// the scrape's time it takes the synthetic value, at a time of the page's
// own the synthetic point is dropped (the collector refuses a second time
// in one point).
func (c *Converter) synthetic(ms []*metricspb.Metric, own *[synthN]*metricspb.Metric, ts uint64, up float64, dur time.Duration, n scrapeCounts, sl *slab) []*metricspb.Metric {
	vals := [...]float64{up, dur.Seconds(), float64(n.samples), float64(n.kept), float64(n.added)}
	meta := c.sets.meta["gauge"].KeyValues()
	// From the scrape's arena, like the page's own metrics: they were
	// 30 of a steady scrape's 50 allocations.
	for i, d := range synthDefs {
		if m := own[i]; m != nil {
			g := m.GetGauge()
			if same := pointOf(g.DataPoints, c.base); same != nil {
				if same.TimeUnixNano == ts {
					same.Value, same.Flags = &metricspb.NumberDataPoint_AsDouble{AsDouble: vals[i]}, 0
				}
				continue
			}
			pt := sl.num(vals[i])
			pt.Attributes, pt.TimeUnixNano = c.base, ts
			g.DataPoints = append(g.DataPoints, pt)
			continue
		}
		x := next(&c.ms.gauges, &c.ms.ar.pools.gauges, &c.ms.ar.gauges)
		pt := sl.num(vals[i])
		pt.Attributes, pt.TimeUnixNano = c.base, ts
		x.d.DataPoints = append(c.ms.numPoints(1), pt)
		x.m.Name, x.m.Description, x.m.Unit, x.m.Metadata = d.name, d.help, d.unit, meta
		x.w.Gauge, x.m.Data = &x.d, &x.w
		ms = append(ms, &x.m)
	}
	return ms
}

// pointOf returns the point of pts whose attributes are attrs (the same
// interned KeyValues), or nil.
func pointOf(pts []*metricspb.NumberDataPoint, attrs []*commonpb.KeyValue) *metricspb.NumberDataPoint {
next:
	for _, p := range pts {
		if len(p.Attributes) != len(attrs) {
			continue
		}
		for i, kv := range p.Attributes {
			if kv != attrs[i] {
				continue next
			}
		}
		return p
	}
	return nil
}

// wrap gives each scrape its own Resource and attribute slice: processors
// downstream stamp resources in place, while the sinks may still be reading
// the previous scrape's. The KeyValues themselves are shared (processors
// replace them, never mutate them); the spare capacity holds the stamped
// attributes without a second allocation. It comes from the scrape's arena,
// as it lives exactly as long as the scrape's metrics.
func (c *Converter) wrap(ms []*metricspb.Metric) *metricspb.ResourceMetrics {
	return next(&c.ms.res, &c.ms.ar.pools.res, &c.ms.ar.res).fill(c.resource.Attributes, ms)
}

// wrapAttrs is wrap for a resource of the page's own (honor_labels), off
// the heap.
func wrapAttrs(base []*commonpb.KeyValue, ms []*metricspb.Metric) *metricspb.ResourceMetrics {
	return new(resMetrics).fill(base, ms)
}

// stampRoom is the spare capacity a resource's attributes get for the
// processors' stamps.
const stampRoom = 12

// resMetrics is a ResourceMetrics with everything it points to, allocated
// together.
type resMetrics struct {
	rm    metricspb.ResourceMetrics
	res   resourcepb.Resource
	sms   [1]*metricspb.ScopeMetrics
	sm    metricspb.ScopeMetrics
	scope commonpb.InstrumentationScope
	attrs [4 + stampRoom]*commonpb.KeyValue // a target's four resource attributes and the stamps
}

// fill makes x a ResourceMetrics of the otelstep scope holding ms, its
// resource's attributes a copy of base with room to stamp.
func (x *resMetrics) fill(base []*commonpb.KeyValue, ms []*metricspb.Metric) *metricspb.ResourceMetrics {
	var attrs []*commonpb.KeyValue
	if len(base)+stampRoom <= len(x.attrs) {
		attrs = x.attrs[:len(base)]
	} else {
		attrs = make([]*commonpb.KeyValue, len(base), len(base)+stampRoom)
	}
	copy(attrs, base)
	x.scope.Name, x.scope.Version = ScopeName, ScopeVersion
	x.sm.Scope, x.sm.Metrics = &x.scope, ms
	x.sms[0] = &x.sm
	x.res.Attributes = attrs
	x.rm.Resource, x.rm.ScopeMetrics = &x.res, x.sms[:]
	return &x.rm
}

// Down returns the ResourceMetrics for a failed scrape: a staleness marker
// for every series of the last successful scrape (as Prometheus appends an
// empty scrape), then up=0 and the other synthetic series. The series are
// forgotten: when the target comes back they start afresh.
func (c *Converter) Down(ts time.Time, dur time.Duration) *metricspb.ResourceMetrics {
	return c.DownAll(ts, dur)[0]
}

// DownAll is Down with every resource: the target's first, then those of
// series a page named under honor_labels (their staleness markers).
func (c *Converter) DownAll(ts time.Time, dur time.Duration) []*metricspb.ResourceMetrics {
	rms, _ := c.DownLeased(ts, dur)
	return rms // the lease goes unreleased: its memory goes to the garbage collector
}

// DownLeased is DownAll with the leases of the resources' memory, as
// ConvertLeased.
func (c *Converter) DownLeased(ts time.Time, dur time.Duration) ([]*metricspb.ResourceMetrics, []*pipeline.Lease) {
	return c.downLeased(ts, dur, scrapeCounts{})
}

// downLeased is DownLeased with the scrape_samples_* counts of a page that
// failed (pageError), as Prometheus reports them.
func (c *Converter) downLeased(ts time.Time, dur time.Duration, n scrapeCounts) ([]*metricspb.ResourceMetrics, []*pipeline.Lease) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	gen, now := c.gen, uint64(ts.UnixNano())
	c.order = c.order[:0]
	a := c.pools.newArena()
	c.ms.begin(a)
	for _, se := range c.index.all {
		c.markStale(se, gen, now)
	}
	sl := slab{ar: a}
	rms := c.collect(gen, now, 0, dur, n, &sl)
	c.ms = metricSlab{}
	c.index.reset()
	c.keys.forget()
	c.budget.give(c.held)
	c.held = 0
	clear(c.starts)
	clear(c.fams)
	c.lc.reset() // its entries were in raw
	return rms, a.leases[:]
}
