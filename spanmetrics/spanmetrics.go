package spanmetrics

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/otelstep/otelstep/pipeline"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// Dimension is one configured dimension: a span (else resource) attribute
// added to every series, with Default used when neither has it.
type Dimension struct {
	Name    string
	Default *string
}

// Config is the connector's config (the collector's keys in comments).
type Config struct {
	Buckets       []time.Duration // histogram.explicit.buckets; nil = the collector's default buckets
	Dimensions    []Dimension
	FlushInterval time.Duration // metrics_flush_interval (collector default 60s)
	Namespace     string        // default "traces.span.metrics"
	Unit          string        // histogram.unit: "ms" (default) or "s"
	Delta         bool          // aggregation_temporality AGGREGATION_TEMPORALITY_DELTA; default cumulative
	CacheSize     int           // dimensions_cache_size, the bound on series; 0 = collector's default (1000)
	// SharedAttrs, not from the collector's config, is where the series'
	// point attribute sets are made, for the sinks' encoders given the
	// same to store and reuse their encodings; nil shares none.
	SharedAttrs *pipeline.SharedAttrs
}

// The collector's defaults.
const (
	DefaultNamespace     = "traces.span.metrics"
	DefaultFlushInterval = 60 * time.Second
	DefaultCacheSize     = 1000
)

// defaultBucketsMs are the collector's default histogram bounds, in ms.
var defaultBucketsMs = []float64{2, 4, 6, 8, 10, 50, 100, 200, 400, 800, 1000, 1400, 2000, 5000, 10_000, 15_000}

// maxResources bounds the resources held (the collector's
// resource_metrics_cache_size default): a resource is a part of every
// series' key, and a sender that changed a resource attribute on every
// request would otherwise make one each.
const maxResources = 1000

// The data point attribute keys the connector sets itself.
const (
	serviceNameKey = "service.name"
	spanNameKey    = "span.name"
	spanKindKey    = "span.kind"
	statusCodeKey  = "status.code"
	instanceIDKey  = "collector.instance.id"
)

// kindNames and codeNames spell span kinds and status codes as the
// collector does; a value it does not know is "" (the last entry).
var (
	kindNames = [...]string{"SPAN_KIND_UNSPECIFIED", "SPAN_KIND_INTERNAL", "SPAN_KIND_SERVER",
		"SPAN_KIND_CLIENT", "SPAN_KIND_PRODUCER", "SPAN_KIND_CONSUMER", ""}
	codeNames = [...]string{"STATUS_CODE_UNSET", "STATUS_CODE_OK", "STATUS_CODE_ERROR", ""}
)

func kindIndex(k int32) uint8 {
	if k < 0 || int(k) >= len(kindNames)-1 {
		return uint8(len(kindNames) - 1)
	}
	return uint8(k)
}

func codeIndex(c int32) uint8 {
	if c < 0 || int(c) >= len(codeNames)-1 {
		return uint8(len(codeNames) - 1)
	}
	return uint8(c)
}

// Connector is the span_metrics connector: a sink.Sink of a traces pipeline
// and a producer of metrics batches into next. See the package doc.
type Connector struct {
	name      string
	log       *slog.Logger
	next      pipeline.Consumer
	interval  time.Duration
	delta     bool
	maxSeries int
	shared    *pipeline.SharedAttrs // where series' attribute sets are made
	div       float64               // nanoseconds per histogram unit
	bounds    []float64             // shared read-only by every histogram point sent
	callsName string
	durName   string
	unit      string
	dims      []dim
	// Data point attributes every series of a kind (code) shares:
	// attributes are never changed once sent (pipeline.AttrSet).
	kindKVs    [len(kindNames)]*commonpb.KeyValue
	codeKVs    [len(codeNames)]*commonpb.KeyValue
	instanceKV *commonpb.KeyValue

	// flushMu serialises flushes (the timer's and Shutdown's), so a
	// failed delta flush puts its counts back before the next one takes
	// them.
	flushMu sync.Mutex

	mu        sync.Mutex // guards everything below
	started   bool
	stopped   bool
	cancel    context.CancelFunc // stops the timer's goroutine
	done      chan struct{}      // closed when it has stopped
	resources map[string]*resource
	resOrder  []*resource // in creation order, so flushes are stable
	nSeries   int
	// Spans not counted since the last flush, by reason, for its log line.
	overflow, noService, bad uint64
	// The same since New.
	overflowTotal, noServiceTotal, badTotal uint64
	// Scratch, reused by every Enqueue so a span costs no allocation.
	span spanFields
	hits []hit     // per dimension: the span's attribute of that name
	key  []byte    // the series key of the span at hand
	rkey []byte    // the resource key of the resource at hand
	idx  []int     // the resource's attributes in key order
	sent []*series // the series the last flush sent (delta: to put back)

	// The dimensions' names, the values otlpwire.ScanSpan reads for them,
	// and a Span message's name, copied (spanFields.name).
	dimNames []string
	vals     [][]byte
	nameBuf  []byte
}

// dim is a configured dimension, ready for use.
type dim struct {
	name   string
	defKey []byte             // the default's value key (appendValueKey), nil without one
	defKV  *commonpb.KeyValue // the default as a data point attribute
}

// resource is one input resource and its series.
type resource struct {
	key       string               // its resource key, in Connector.resources
	attrs     []*commonpb.KeyValue // a deep copy of the resource's attributes
	serviceKV *commonpb.KeyValue   // service.name as a data point attribute
	dims      []resourceDim        // per dimension: the resource's attribute of that name
	series    map[string]*series   // by series key
	order     []*series            // in creation order
}

// resourceDim is a resource's attribute named by a dimension, the fallback
// for spans without one.
type resourceDim struct {
	key []byte // its value key; nil when the resource has no such attribute
	kv  *commonpb.KeyValue
}

// series is the counts of one series. count is both the calls and the
// histogram's count, so the two always agree.
type series struct {
	key    string            // its series key, in resource.series
	attrs  *pipeline.AttrSet // its point attributes, sent with every point
	start  uint64            // start time of the next point sent
	count  uint64
	sum    float64
	counts []uint64 // per bucket, the overflow bucket last
}

// New returns a span_metrics connector named name (for logs) that sends the
// metrics it makes to next. It validates cfg and fills in the collector's
// defaults.
func New(name string, cfg Config, next pipeline.Consumer, log *slog.Logger) (*Connector, error) {
	if next == nil {
		return nil, fmt.Errorf("spanmetrics %q: no next consumer", name)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Connector{
		name:      name,
		log:       log,
		next:      next,
		interval:  cfg.FlushInterval,
		delta:     cfg.Delta,
		maxSeries: cfg.CacheSize,
		shared:    cfg.SharedAttrs,
		resources: make(map[string]*resource),
	}
	if c.interval == 0 {
		c.interval = DefaultFlushInterval
	} else if c.interval < 0 {
		return nil, fmt.Errorf("spanmetrics %q: metrics_flush_interval %v is negative", name, cfg.FlushInterval)
	}
	if c.maxSeries == 0 {
		c.maxSeries = DefaultCacheSize
	} else if c.maxSeries < 0 {
		return nil, fmt.Errorf("spanmetrics %q: dimensions_cache_size %d is negative", name, cfg.CacheSize)
	}
	switch cfg.Unit {
	case "", "ms":
		c.unit, c.div = "ms", float64(time.Millisecond)
	case "s":
		c.unit, c.div = "s", float64(time.Second)
	default:
		return nil, fmt.Errorf("spanmetrics %q: histogram unit %q: want ms or s", name, cfg.Unit)
	}
	if cfg.Buckets == nil {
		c.bounds = make([]float64, len(defaultBucketsMs))
		for i, b := range defaultBucketsMs {
			c.bounds[i] = b * float64(time.Millisecond) / c.div
		}
	} else {
		c.bounds = make([]float64, len(cfg.Buckets))
		for i, b := range cfg.Buckets {
			if b <= 0 || i > 0 && b <= cfg.Buckets[i-1] {
				return nil, fmt.Errorf("spanmetrics %q: histogram bucket %d (%v): buckets must be positive and increasing", name, i, b)
			}
			c.bounds[i] = float64(b.Nanoseconds()) / c.div
		}
	}
	ns := cfg.Namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	c.callsName, c.durName = ns+".calls", ns+".duration"

	seen := map[string]bool{serviceNameKey: true, spanNameKey: true, spanKindKey: true, statusCodeKey: true, instanceIDKey: true}
	for i, d := range cfg.Dimensions {
		if d.Name == "" {
			return nil, fmt.Errorf("spanmetrics %q: dimension %d has no name", name, i)
		}
		if seen[d.Name] {
			return nil, fmt.Errorf("spanmetrics %q: dimension %q: duplicate dimension name", name, d.Name)
		}
		seen[d.Name] = true
		nd := dim{name: d.Name}
		if d.Default != nil {
			v := strValue(*d.Default)
			nd.defKey = appendValueKey(nil, v)
			nd.defKV = &commonpb.KeyValue{Key: d.Name, Value: v}
		}
		c.dims = append(c.dims, nd)
	}
	c.hits = make([]hit, len(c.dims))
	for _, d := range c.dims {
		c.dimNames = append(c.dimNames, d.name)
	}
	c.vals = make([][]byte, len(c.dims))

	for i, n := range kindNames {
		c.kindKVs[i] = strKV(spanKindKey, n)
	}
	for i, n := range codeNames {
		c.codeKVs[i] = strKV(statusCodeKey, n)
	}
	c.instanceKV = strKV(instanceIDKey, newInstanceID())
	return c, nil
}

// newInstanceID returns a random (version 4) UUID.
func newInstanceID() string {
	var u [16]byte
	_, _ = rand.Read(u[:]) // never fails: crypto/rand crashes the program instead
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:], u[10:])
	return string(b[:])
}

func strValue(s string) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
}

func strKV(k, v string) *commonpb.KeyValue { return &commonpb.KeyValue{Key: k, Value: strValue(v)} }

// Name returns the connector's name.
func (c *Connector) Name() string { return c.name }

// Start starts the flush timer. The timer runs until Shutdown, whatever
// becomes of ctx (as the other sinks' goroutines do).
func (c *Connector) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started || c.stopped {
		return nil
	}
	c.started = true
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.cancel, c.done = cancel, make(chan struct{})
	go c.run(runCtx, c.done)
	return nil
}

func (c *Connector) run(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(c.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			// A flush that waits on a full pipeline gives up at the next
			// tick: its counts are sent by the next flush.
			fctx, cancel := context.WithTimeout(ctx, c.interval)
			_ = c.flush(fctx) // logged
			cancel()
		}
	}
}

// Shutdown stops the timer, flushes once more (within ctx) and stops:
// Enqueue returns pipeline.ErrStopped from then on.
func (c *Connector) Shutdown(ctx context.Context) error {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return nil
	}
	c.stopped = true
	cancel, done := c.cancel, c.done
	c.mu.Unlock()
	if cancel != nil {
		cancel() // a timer flush waiting on the pipeline gives up: this one sends its counts
		select {
		case <-done:
		case <-ctx.Done():
			return fmt.Errorf("spanmetrics %q: waiting for the flush timer to stop: %w", c.name, ctx.Err())
		}
	}
	if err := c.flush(ctx); err != nil {
		return fmt.Errorf("spanmetrics %q: last flush: %w", c.name, err)
	}
	return nil
}

// errNotTraces is returned by Enqueue for a batch of another signal.
var errNotTraces = errors.New("not a traces batch")

// Enqueue counts the spans of b, then releases b's leases. It never blocks
// on anything but the connector's mutex. After Shutdown it returns
// pipeline.ErrStopped and keeps nothing (the caller still owns b).
func (c *Connector) Enqueue(_ context.Context, b *pipeline.Batch) error {
	if b.Signal != pipeline.Traces {
		return fmt.Errorf("spanmetrics %q: %s batch: %w", c.name, b.Signal, errNotTraces)
	}
	now := uint64(time.Now().UnixNano())
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return pipeline.ErrStopped
	}
	b.CheckLive() // what it is about to read was not given back (pipeline.Lease)
	for _, rs := range b.Traces {
		c.aggregate(rs, now)
	}
	b.CheckLive() // nor while it read
	c.mu.Unlock()
	// Nothing counted points into b: names, values and resources were
	// copied where kept.
	b.Release()
	return nil
}

// aggregate counts the spans of one ResourceSpans; c.mu is held.
func (c *Connector) aggregate(rs *pipeline.ResourceSpans, now uint64) {
	attrs := rs.Resource.GetAttributes()
	svc := findAttr(attrs, serviceNameKey)
	if svc == nil {
		n := uint64(rs.Len())
		c.noService += n
		c.noServiceTotal += n
		return
	}
	r := c.resources[string(c.resourceKey(attrs))]
	if r == nil {
		if len(c.resources) >= maxResources {
			n := uint64(rs.Len())
			c.overflow += n
			c.overflowTotal += n
			return
		}
		r = c.newResource(attrs, svc)
	}
	sf := &c.span
	for _, ss := range rs.ScopeSpans {
		for _, sp := range ss.Spans {
			c.fromSpan(sp, sf)
			c.observe(r, sf, now)
		}
		for rec := range ss.Records.All() {
			if !c.scanSpan(rec, sf) {
				c.bad++
				c.badTotal++
				continue
			}
			c.observe(r, sf, now)
		}
	}
	c.span = spanFields{} // holds no reference into the batch past Enqueue
	clear(c.hits)
	clear(c.vals)
}

// resourceKey returns the resource key of attrs in c.rkey: every attribute,
// sorted by key, so the same attributes in another order are the same
// resource (as the collector's hash of them is).
func (c *Connector) resourceKey(attrs []*commonpb.KeyValue) []byte {
	c.idx = c.idx[:0]
	for i := range attrs {
		c.idx = append(c.idx, i)
	}
	slices.SortStableFunc(c.idx, func(i, j int) int { return strings.Compare(attrs[i].GetKey(), attrs[j].GetKey()) })
	k := c.rkey[:0]
	for _, i := range c.idx {
		k = protowire.AppendString(k, attrs[i].GetKey())
		k = appendValueKey(k, attrs[i].GetValue())
	}
	c.rkey = k
	return k
}

// newResource makes and keeps the resource of attrs, whose key is in c.rkey.
func (c *Connector) newResource(attrs []*commonpb.KeyValue, svc *commonpb.AnyValue) *resource {
	r := &resource{
		key:       string(c.rkey),
		attrs:     cloneKVs(attrs),
		serviceKV: &commonpb.KeyValue{Key: serviceNameKey, Value: strValue(strings.Clone(valueString(svc)))},
		dims:      make([]resourceDim, len(c.dims)),
		series:    make(map[string]*series),
	}
	for i, d := range c.dims {
		if v := findAttr(attrs, d.name); v != nil {
			r.dims[i] = resourceDim{key: appendValueKey(nil, v), kv: &commonpb.KeyValue{Key: d.name, Value: cloneValue(v)}}
		}
	}
	c.resources[r.key] = r
	c.resOrder = append(c.resOrder, r)
	return r
}

// observe counts the span in sf for resource r; c.mu is held.
//
// The series key (within r, whose spans share their service.name) is built
// in a reused buffer and looked up as m[string(key)], which does not
// allocate: the span's name, kind and status code, then for each dimension
// the value key of the attribute the series gets, or 0 for none. Unlike the
// collector's key (the values' string forms joined), it tells types apart
// and a missing value from the next one's.
func (c *Connector) observe(r *resource, sf *spanFields, now uint64) {
	k := c.key[:0]
	k = protowire.AppendBytes(k, sf.name)
	k = append(k, sf.kind, sf.code)
	for i := range c.dims {
		switch h := &c.hits[i]; {
		case h.found:
			k = h.appendKey(k)
		case r.dims[i].key != nil:
			k = append(k, r.dims[i].key...)
		case c.dims[i].defKey != nil:
			k = append(k, c.dims[i].defKey...)
		default:
			k = append(k, 0) // absent: no value key starts with 0
		}
	}
	c.key = k
	s := r.series[string(k)]
	if s == nil {
		if c.nSeries >= c.maxSeries {
			c.overflow++
			c.overflowTotal++
			return
		}
		s = c.newSeries(r, sf, now)
		s.key = string(k)
		r.series[s.key] = s
		r.order = append(r.order, s)
		c.nSeries++
	}
	var d float64
	if sf.end > sf.start {
		d = float64(sf.end-sf.start) / c.div
	}
	s.count++
	s.sum += d
	i, _ := slices.BinarySearch(c.bounds, d) // the first bound >= d, as the collector's
	s.counts[i]++
}

// newSeries makes the series of the span in sf, copying what it keeps.
func (c *Connector) newSeries(r *resource, sf *spanFields, now uint64) *series {
	attrs := make([]*commonpb.KeyValue, 0, 5+len(c.dims))
	attrs = append(attrs, r.serviceKV, strKV(spanNameKey, string(sf.name)),
		c.kindKVs[sf.kind], c.codeKVs[sf.code], c.instanceKV)
	for i, d := range c.dims {
		switch h := &c.hits[i]; {
		case h.found:
			attrs = append(attrs, &commonpb.KeyValue{Key: d.name, Value: h.value()})
		case r.dims[i].kv != nil:
			attrs = append(attrs, r.dims[i].kv)
		case d.defKV != nil:
			attrs = append(attrs, d.defKV)
		}
	}
	return &series{
		attrs:  c.shared.Share(attrs),
		start:  now,
		counts: make([]uint64, len(c.bounds)+1),
	}
}

// flush sends what was counted to next. On a failure, delta counts are
// put back to be sent by the next flush (cumulative ones are anyway).
func (c *Connector) flush(ctx context.Context) error {
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	now := time.Now()
	c.mu.Lock()
	b, sent, points := c.build(uint64(now.UnixNano()))
	overflow, noService, bad := c.overflow, c.noService, c.bad
	overflowTotal, noServiceTotal, badTotal := c.overflowTotal, c.noServiceTotal, c.badTotal
	c.overflow, c.noService, c.bad = 0, 0, 0
	nSeries := c.nSeries
	c.mu.Unlock()
	// One line per flush and reason, however many spans: rate-limited by
	// the flush interval.
	if overflow > 0 {
		c.log.Warn("span_metrics: series limit reached, spans of new series not counted", "connector", c.name,
			"spans", overflow, "spans_total", overflowTotal, "series_limit", c.maxSeries,
			"resource_limit", maxResources)
	}
	if noService > 0 {
		c.log.Warn("span_metrics: spans of resources without service.name not counted", "connector", c.name,
			"spans", noService, "spans_total", noServiceTotal)
	}
	if bad > 0 {
		c.log.Warn("span_metrics: malformed span records not counted", "connector", c.name,
			"spans", bad, "spans_total", badTotal)
	}
	if b == nil {
		return nil
	}
	err := c.next.Consume(ctx, b)
	if err == nil {
		// The flush is the end of a round: a batch processor downstream
		// may send now rather than at its timeout.
		pipeline.Flush(ctx, c.next)
		c.log.Debug("span_metrics: flushed", "connector", c.name, "resources", len(b.Metrics), "points", 2*len(sent), "series", nSeries)
		return nil
	}
	if c.delta {
		c.mu.Lock()
		putBack(sent, points)
		c.mu.Unlock()
		c.log.Warn("span_metrics: flush not taken, its counts go with the next one", "connector", c.name,
			"points", 2*len(sent), "err", err)
	} else {
		c.log.Warn("span_metrics: flush not taken, the next one sends the same counts", "connector", c.name,
			"points", 2*len(sent), "err", err)
	}
	return fmt.Errorf("spanmetrics %q: sending %d points: %w", c.name, 2*len(sent), err)
}

// build makes the batch of every series with counts to send and returns it
// with those series and their histogram points, in the same order (nil
// when there is none). Delta: it takes the counts it sends, and drops the
// series that had none since the last flush. Resources left without series
// are dropped. c.mu is held.
func (c *Connector) build(now uint64) (*pipeline.Batch, []*series, []metricspb.HistogramDataPoint) {
	temporality := metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
	if c.delta {
		temporality = metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
	}
	n := 0
	for _, r := range c.resOrder {
		for _, s := range r.order {
			if s.count > 0 {
				n++
			}
		}
	}
	// One allocation per kind of message for the whole flush.
	var (
		nps   = make([]metricspb.NumberDataPoint, n)
		nvals = make([]metricspb.NumberDataPoint_AsInt, n)
		hps   = make([]metricspb.HistogramDataPoint, n)
		sums  = make([]float64, n)
		cnts  = make([]uint64, n*(len(c.bounds)+1))
	)
	sent := c.sent[:0]
	var rms []*metricspb.ResourceMetrics
	keep := c.resOrder[:0]
	for _, r := range c.resOrder {
		first := len(sent)
		live := r.order[:0]
		for _, s := range r.order {
			if s.count == 0 { // delta only: nothing since the last flush
				delete(r.series, s.key)
				c.nSeries--
				continue
			}
			live = append(live, s)
			i := len(sent)
			sent = append(sent, s)
			nvals[i].AsInt = int64(s.count)
			nps[i] = metricspb.NumberDataPoint{Attributes: s.attrs.KeyValues(), StartTimeUnixNano: s.start, TimeUnixNano: now, Value: &nvals[i]}
			sums[i] = s.sum
			bc := cnts[i*len(s.counts) : (i+1)*len(s.counts) : (i+1)*len(s.counts)]
			copy(bc, s.counts)
			hps[i] = metricspb.HistogramDataPoint{Attributes: s.attrs.KeyValues(), StartTimeUnixNano: s.start, TimeUnixNano: now,
				Count: s.count, Sum: &sums[i], BucketCounts: bc, ExplicitBounds: c.bounds}
			if c.delta {
				s.start, s.count, s.sum = now, 0, 0
				clear(s.counts)
			}
		}
		clear(r.order[len(live):])
		r.order = live
		if len(live) == 0 {
			delete(c.resources, r.key)
			continue
		}
		keep = append(keep, r)
		calls := make([]*metricspb.NumberDataPoint, 0, len(sent)-first)
		durs := make([]*metricspb.HistogramDataPoint, 0, len(sent)-first)
		for i := first; i < len(sent); i++ {
			calls = append(calls, &nps[i])
			durs = append(durs, &hps[i])
		}
		rms = append(rms, &metricspb.ResourceMetrics{
			Resource: &resourcepb.Resource{Attributes: cloneKVs(r.attrs)},
			ScopeMetrics: []*metricspb.ScopeMetrics{{
				Scope: &commonpb.InstrumentationScope{Name: "spanmetricsconnector"},
				Metrics: []*metricspb.Metric{
					{Name: c.callsName, Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{
						DataPoints: calls, AggregationTemporality: temporality, IsMonotonic: true}}},
					{Name: c.durName, Unit: c.unit, Data: &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{
						DataPoints: durs, AggregationTemporality: temporality}}},
				},
			}},
		})
	}
	clear(c.resOrder[len(keep):])
	c.resOrder = keep
	c.sent = sent
	if len(rms) == 0 {
		return nil, nil, nil
	}
	// Each series sent is a calls point and a duration point.
	return &pipeline.Batch{Signal: pipeline.Metrics, Metrics: rms, Items: 2 * len(sent)}, sent, hps
}

// putBack adds the counts of points, which build took from sent (in that
// order), back to their series, with their start times: a delta flush the
// pipeline did not take. Spans counted since are added to. c.mu is held.
func putBack(sent []*series, points []metricspb.HistogramDataPoint) {
	for i, s := range sent {
		dp := &points[i]
		s.start = dp.StartTimeUnixNano
		s.count += dp.Count
		s.sum += dp.GetSum()
		for j, n := range dp.BucketCounts {
			s.counts[j] += n
		}
	}
}

// findAttr returns the value of the first attribute named key (as the
// collector's map lookup does), or nil. An attribute without a value is
// found as an empty value.
func findAttr(attrs []*commonpb.KeyValue, key string) *commonpb.AnyValue {
	for _, kv := range attrs {
		if kv.GetKey() == key {
			if kv.Value == nil {
				return &commonpb.AnyValue{}
			}
			return kv.Value
		}
	}
	return nil
}

// cloneKVs returns a deep copy of kvs that shares no memory with it: the
// batch's strings may point into a buffer that goes back to a pool.
func cloneKVs(kvs []*commonpb.KeyValue) []*commonpb.KeyValue {
	out := make([]*commonpb.KeyValue, len(kvs))
	for i, kv := range kvs {
		out[i] = &commonpb.KeyValue{Key: strings.Clone(kv.GetKey()), Value: cloneValue(kv.GetValue())}
	}
	return out
}

// cloneValue is cloneKVs for one value; nil makes an empty value.
func cloneValue(v *commonpb.AnyValue) *commonpb.AnyValue {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return strValue(strings.Clone(x.StringValue))
	case *commonpb.AnyValue_BytesValue:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: slices.Clone(x.BytesValue)}}
	case *commonpb.AnyValue_ArrayValue:
		vals := make([]*commonpb.AnyValue, len(x.ArrayValue.GetValues()))
		for i, e := range x.ArrayValue.GetValues() {
			vals[i] = cloneValue(e)
		}
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vals}}}
	case *commonpb.AnyValue_KvlistValue:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{
			Values: cloneKVs(x.KvlistValue.GetValues())}}}
	case nil:
		return &commonpb.AnyValue{}
	}
	return proto.Clone(v).(*commonpb.AnyValue) // bool, int, double, strindex: no memory of the batch's
}
