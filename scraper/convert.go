// The Converter: a target's conversion state across scrapes, its
// constructors, and the entry points of a scrape (ConvertLeased for a
// page, DownLeased for a failed scrape) that run the steps the other
// files hold.

package scraper

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/otelstep/otelstep/pipeline"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
)

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
	lent           []*histBuilder
	t              Target
	resource       *resourcepb.Resource
	base           []*commonpb.KeyValue // target labels as attributes, sorted
	targetLabelSet labels.Labels        // target labels (job, instance, static labels)
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
	// ctx and deadline bound the conversion in progress: it gives up
	// once ctx has ended (a stop) or deadline (zero: none) has passed,
	// looked at once every deadlineEvery new series, the slow path; newN
	// counts its new series. cut says the bound failed the page: what it
	// resolved is kept (pageError.cut).
	ctx      context.Context
	deadline time.Time
	timeout  time.Duration
	newN     int
	cut      bool
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
	keys    *seriesKeys
	keyed   bool       // this scrape looked keys up in keys
	metas   *metaLines // metadata lines, shared by a Manager's converters
	pools   *slabPools // chunks of the scrapes' memory (arena.go)
	metrics metricSlab // this scrape's metrics
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
	c.targetLabelSet = labels.FromMap(tl)
	return c
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
	return c.convertBy(context.Background(), page, contentType, ts, dur, time.Time{})
}

// convertBy is ConvertLeased that gives up, failing the page, once ctx
// has ended or deadline has passed (zero: never) while it reads series
// new to it. The series it resolved until then are kept (cut short, see
// pageError.cut), and so are the lines it read, in the line cache.
func (c *Converter) convertBy(ctx context.Context, page []byte, contentType string, ts time.Time, dur time.Duration, deadline time.Time) ([]*metricspb.ResourceMetrics, []*pipeline.Lease, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ctx, c.deadline, c.newN, c.cut = ctx, deadline, 0, false
	defer c.endConversion() // builders taken and returned in this call
	om := strings.HasPrefix(strings.TrimSpace(contentType), "application/openmetrics-text")
	c.om = om
	c.created = c.created[:0]
	c.keyed = false
	c.gen++
	st := scrapeState{gen: c.gen, tsNs: uint64(ts.UnixNano()), om: om}
	a := c.pools.newArena()
	st.sl.ar = a
	c.metrics.begin(a)
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
		c.abort(c.cut)
		c.metrics = metricSlab{}
		a.lease.Release() // abort dropped every pointer into it
		return nil, nil, &pageError{err: err, n: st.n, cut: c.cut}
	}
	c.lc.finish()
	c.keys.judge(&c.keyed)
	c.startsFromCreatedGauges(st.gen)
	c.finish(st.tsNs, &st.sl)
	c.staleAndEvict(st.gen, st.tsNs)
	c.index.endScrape()
	c.meta.endScrape(c.lc.off)
	rms := c.collect(st.gen, st.tsNs, 1, dur, st.n, &st.sl)
	c.metrics = metricSlab{} // the converter keeps no pointer into the arena
	c.last = st.n
	return rms, a.leases[:], nil
}

// endConversion ends a convertBy call: the histogram builders it took go
// back, and its context is not held past it.
func (c *Converter) endConversion() {
	c.returnBuilders()
	c.ctx = nil
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
	// cut: the conversion's bound (its deadline, or its context) ended
	// it. The series it resolved are kept, the line cache holds the
	// lines it read, and the scrape fails keeping them (downLeased), so
	// that the next scrape of the page goes on from there.
	cut bool
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
	sl        pointSlab
	last      []byte // bytes of the last entry read: a parse error is on a later line
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
	return c.downLeased(ts, dur, scrapeCounts{}, false)
}

// downLeased is DownLeased with the scrape_samples_* counts of a page that
// failed (pageError), as Prometheus reports them. With keep (a page cut
// short by its deadline, pageError.cut), the series stay, resolved, for
// the next scrape to find rather than resolve again, and only what they
// committed goes (restart): its output is the same as without.
func (c *Converter) downLeased(ts time.Time, dur time.Duration, n scrapeCounts, keep bool) ([]*metricspb.ResourceMetrics, []*pipeline.Lease) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	gen, now := c.gen, uint64(ts.UnixNano())
	c.order = c.order[:0]
	a := c.pools.newArena()
	c.metrics.begin(a)
	for _, se := range c.index.all {
		c.markStale(se, gen, now)
	}
	sl := pointSlab{ar: a}
	rms := c.collect(gen, now, 0, dur, n, &sl)
	c.metrics = metricSlab{}
	if keep {
		c.restart()
		return rms, a.leases[:]
	}
	c.index.reset()
	c.keys.forget()
	c.budget.give(c.held)
	c.held = 0
	clear(c.starts)
	clear(c.fams)
	c.lc.reset() // its entries were the index's, just reset
	return rms, a.leases[:]
}

// restart makes the series kept through a failed scrape (downLeased's
// keep) what they would be to a converter that never saw them, but
// resolved: each was marked stale if it had a point, and what it
// committed goes (its start time, its last value, the bounds and
// quantiles its markers take), so that the next page is converted as a
// fresh converter would convert it, start times from that scrape on. gen
// 0 makes each count as added (scrape_series_added) when next read, as a
// new series does, and as gone if the next page lacks it: forgotten then,
// without a second marker. Families, metadata and attribute sets follow
// from the series' bytes and the pages' declarations, and stay: as after
// any scrape, a declaration the cut one read after its family's samples
// counts from the next (metatable.go).
func (c *Converter) restart() {
	for _, se := range c.index.all {
		se.gen = 0
		if se.ps != nil {
			se.ps.restart()
		}
	}
}

// seriesKept is how many raw series the converter holds from its last
// scrapes.
func (c *Converter) seriesKept() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.index.len()
}
