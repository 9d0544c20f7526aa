// What a Converter keeps per family and per series across scrapes, and
// the builders of one scrape's histogram and summary points.

package scraper

import (
	"github.com/otelstep/otelstep/pipeline"
	"github.com/prometheus/common/model"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
)

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
// per distinct family of a Manager's targets (attrSets.fam): the targets
// of a job serve the same few hundred families, which kept per target
// would be copied once for each. Read only.
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
// One exists per point a scrape emits (tens of thousands in a big job), so it
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

// restart forgets what the series committed, as if it had never had a
// point (Converter.restart).
func (ps *pointSeries) restart() {
	ps.start, ps.last, ps.seen, ps.stale, ps.created = 0, 0, false, 0, 0
	ps.shape = nil
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
	// gen is the scrape that last read the series; 0 for a new one, or
	// one kept through a failed scrape (Converter.restart).
	gen uint64
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
