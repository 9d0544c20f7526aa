package telemetry

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/otelstep/otelstep/pipeline"
)

// signals is how many signals the per-signal instruments are made for
// (pipeline.Metrics, Traces, Logs).
const signals = 3

// itemNames are the collector's words for a signal's items in its
// instruments' names, and their units.
var itemNames = [signals]struct{ name, unit string }{
	pipeline.Metrics: {"metric_points", "{datapoints}"},
	pipeline.Traces:  {"spans", "{spans}"},
	pipeline.Logs:    {"log_records", "{records}"},
}

// instruments are every synchronous instrument, made once per Telemetry;
// the sets below add a component's attributes. An instrument above the
// level is a no-op one.
type instruments struct {
	err   error
	level Level
	meter metric.Meter // for the sinks' queue callbacks

	recvAccepted, recvRefused [signals]metric.Int64Counter
	recvRefusedRequests       metric.Int64Counter
	pipeItems                 metric.Int64Counter

	expSent, expFailed                 [signals]metric.Int64Counter
	expDropped, expRetries, expJSONL   metric.Int64Counter
	expUnsent, expEnqueueFailed        [signals]metric.Int64Counter
	expBackfilled                      [signals]metric.Int64Counter
	expBacklogBatches, expBacklogBytes metric.Int64ObservableGauge
	expDuration                        metric.Float64Histogram
	expQueueSize, expQueueCap          metric.Int64ObservableGauge
	// queueObservable: the queue gauges are the meter's (at level basic
	// and up), so their callbacks can be registered with it.
	queueObservable bool

	scrapeUp, scrapeSamples metric.Int64Gauge
	scrapeKept, scrapeAdded metric.Int64Gauge
	scrapeDuration          metric.Float64Histogram
}

// Bucket bounds, in seconds: a backend answers in milliseconds to seconds,
// a scrape takes from a millisecond to its timeout.
var (
	requestBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}
	scrapeBuckets  = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
)

func newInstruments(m metric.Meter, level Level) *instruments {
	ins := &instruments{level: level, meter: m}
	at := func(l Level) metric.Meter {
		if level >= l {
			return m
		}
		return noop.Meter{}
	}
	keep := func(err error) { ins.err = errors.Join(ins.err, err) }
	counter := func(l Level, name, unit, desc string) metric.Int64Counter {
		c, err := at(l).Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		keep(err)
		return c
	}
	gauge := func(l Level, name, unit, desc string) metric.Int64Gauge {
		g, err := at(l).Int64Gauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		keep(err)
		return g
	}
	histogram := func(l Level, name, desc string, bounds []float64) metric.Float64Histogram {
		h, err := at(l).Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc), metric.WithExplicitBucketBoundaries(bounds...))
		keep(err)
		return h
	}
	for sig, it := range itemNames {
		ins.recvAccepted[sig] = counter(LevelBasic, "otelcol_receiver_accepted_"+it.name, it.unit, "Items a receiver handed on to its pipelines.")
		ins.recvRefused[sig] = counter(LevelBasic, "otelcol_receiver_refused_"+it.name, it.unit, "Items a receiver's pipelines refused.")
		ins.expSent[sig] = counter(LevelBasic, "otelcol_exporter_sent_"+it.name, it.unit, "Items an exporter wrote: the backend accepted them, or they are a whole line in the JSONL file.")
		ins.expFailed[sig] = counter(LevelBasic, "otelcol_exporter_send_failed_"+it.name, it.unit, "Items the backend refused or whose retries ran out.")
		ins.expUnsent[sig] = counter(LevelBasic, "otelstep_exporter_unsent_at_stop_"+it.name, it.unit, "Items the OTLP/HTTP exporter had not sent when its time at stop ran out (they are in the JSONL).")
		ins.expEnqueueFailed[sig] = counter(LevelBasic, "otelcol_exporter_enqueue_failed_"+it.name, it.unit, "Items dropped from the OTLP/HTTP exporter's full queue (they are in the JSONL, for the backfill).")
		ins.expBackfilled[sig] = counter(LevelBasic, "otelstep_exporter_backfilled_"+it.name, it.unit, "Items the backfill sent to the backend from the JSONL.")
	}
	ins.recvRefusedRequests = counter(LevelBasic, "otelstep_receiver_refused_requests", "{requests}", "Requests a receiver refused, by signal, transport and reason.")
	ins.expDropped = counter(LevelBasic, "otelstep_exporter_dropped_batches", "{batches}", "Batches dropped because the exporter queue was full, or left in it at shutdown.")
	ins.pipeItems = counter(LevelNormal, "otelstep_pipeline_items", "{items}", "Points, spans or log records that entered a pipeline.")
	ins.expRetries = counter(LevelNormal, "otelstep_exporter_retries", "{requests}", "Requests sent again after a retryable failure.")
	ins.expJSONL = counter(LevelNormal, "otelstep_exporter_jsonl_bytes", "By", "Bytes written to the JSONL file.")
	ins.expDuration = histogram(LevelNormal, "otelstep_exporter_request_duration_seconds", "Duration of each OTLP/HTTP request to the backend.", requestBuckets)
	ins.scrapeUp = gauge(LevelNormal, "otelstep_scrape_up", "1", "1 if the target's last scrape succeeded, else 0.")
	ins.scrapeSamples = gauge(LevelNormal, "otelstep_scrape_samples_scraped", "{samples}", "Samples on the target's last page.")
	ins.scrapeDuration = histogram(LevelNormal, "otelstep_scrape_duration_seconds", "Duration of each scrape: fetching and converting the page.", scrapeBuckets)
	ins.scrapeKept = gauge(LevelDetailed, "otelstep_scrape_samples_post_metric_relabeling", "{samples}", "Samples of the target's last page kept by metric_relabel_configs.")
	ins.scrapeAdded = gauge(LevelDetailed, "otelstep_scrape_series_added", "{series}", "Series new in the target's last scrape.")
	var err error
	ins.expQueueSize, err = at(LevelBasic).Int64ObservableGauge("otelcol_exporter_queue_size", metric.WithUnit("{batches}"), metric.WithDescription("Batches in the exporter's queue."))
	keep(err)
	ins.expQueueCap, err = at(LevelBasic).Int64ObservableGauge("otelcol_exporter_queue_capacity", metric.WithUnit("{batches}"), metric.WithDescription("The exporter queue's size in batches."))
	keep(err)
	ins.expBacklogBatches, err = at(LevelBasic).Int64ObservableGauge("otelstep_exporter_backfill_backlog_batches", metric.WithUnit("{batches}"), metric.WithDescription("Lines (one a batch) in the JSONL the backend has not got: what the backfill or `otelstep replay` is to send."))
	keep(err)
	ins.expBacklogBytes, err = at(LevelBasic).Int64ObservableGauge("otelstep_exporter_backfill_backlog_bytes", metric.WithUnit("By"), metric.WithDescription("Bytes of the JSONL lines the backend has not got."))
	keep(err)
	ins.queueObservable = level >= LevelBasic
	return ins
}

// attrs is one attribute set, as the options each kind of measurement
// takes, made once per component.
type attrs struct {
	add []metric.AddOption
	rec []metric.RecordOption
	obs []metric.ObserveOption
}

func newAttrs(kvs ...attribute.KeyValue) attrs {
	o := metric.WithAttributeSet(attribute.NewSet(kvs...))
	return attrs{add: []metric.AddOption{o}, rec: []metric.RecordOption{o}, obs: []metric.ObserveOption{o}}
}

// The context measurements are made in: none of them is in a span
// (exemplars are off), and a request's context would only be looked into.
var bg = context.Background()

// Transport is the transport attribute of a receiver's counts.
type Transport int

// The transports.
const (
	GRPC Transport = iota
	HTTP
)

// Receiver counts what one receiver handed on (and what was refused), by
// signal and transport. A nil *Receiver counts nothing.
type Receiver struct {
	ins *instruments
	id  string
	by  [2]attrs // by Transport
	// refusedBy are the attribute sets of the refused requests' counts,
	// made the first time each is counted: refusals are rare, and their
	// reasons the receiver's to name.
	refusedBy sync.Map // refusalKey -> attrs
}

// refusalKey is one attribute set of otelstep_receiver_refused_requests.
type refusalKey struct {
	signal, reason string
	tr             Transport
}

// Receiver is the instrument set of receiver id (nil below level basic).
func (t *Telemetry) Receiver(id string) *Receiver {
	if t.Level() < LevelBasic {
		return nil
	}
	r := &Receiver{ins: t.ins, id: id}
	for tr, name := range [2]string{GRPC: "grpc", HTTP: "http"} {
		r.by[tr] = newAttrs(attribute.String("receiver", id), attribute.String("transport", name))
	}
	return r
}

// Enabled reports whether r counts: when it does not, the caller need not
// count a batch's items.
func (r *Receiver) Enabled() bool { return r != nil }

// Record counts a batch of items of sig that came over tr: accepted when
// err is nil, refused otherwise.
func (r *Receiver) Record(sig pipeline.Signal, tr Transport, items int, err error) {
	if r == nil || items <= 0 || int(sig) >= signals || tr < GRPC || tr > HTTP {
		return
	}
	c := r.ins.recvAccepted[sig]
	if err != nil {
		c = r.ins.recvRefused[sig]
	}
	c.Add(bg, int64(items), r.by[tr].add...)
}

// RefusedRequest counts one request of signal (a pipeline.Signal's name,
// or "unknown" when its path named none) that came over tr and was
// refused for reason.
func (r *Receiver) RefusedRequest(signal string, tr Transport, reason string) {
	if r == nil || tr < GRPC || tr > HTTP {
		return
	}
	k := refusalKey{signal, reason, tr}
	a, ok := r.refusedBy.Load(k)
	if !ok {
		a, _ = r.refusedBy.LoadOrStore(k, newAttrs(attribute.String("receiver", r.id), attribute.String("signal", signal),
			attribute.String("transport", [2]string{GRPC: "grpc", HTTP: "http"}[tr]), attribute.String("reason", reason)))
	}
	r.ins.recvRefusedRequests.Add(bg, 1, a.(attrs).add...)
}

// Pipeline counts the items that entered one pipeline. A nil *Pipeline
// counts nothing.
type Pipeline struct {
	ins *instruments
	a   attrs
}

// Pipeline is the instrument set of pipeline id (nil below level normal).
func (t *Telemetry) Pipeline(id string) *Pipeline {
	if t.Level() < LevelNormal {
		return nil
	}
	return &Pipeline{ins: t.ins, a: newAttrs(attribute.String("pipeline", id))}
}

// Enabled reports whether p counts.
func (p *Pipeline) Enabled() bool { return p != nil }

// Items counts n items that the pipeline took.
func (p *Pipeline) Items(n int) {
	if p == nil || n <= 0 {
		return
	}
	p.ins.pipeItems.Add(bg, int64(n), p.a.add...)
}

// Scrape is the instrument set of one prometheus receiver, which hands
// out one per target. A nil *Scrape records nothing.
type Scrape struct {
	ins *instruments
	id  string
	rcv *Receiver
}

// Scrape is the instrument set of the prometheus receiver id (nil below
// level basic).
func (t *Telemetry) Scrape(id string) *Scrape {
	if t.Level() < LevelBasic {
		return nil
	}
	return &Scrape{ins: t.ins, id: id, rcv: t.Receiver(id)}
}

// ScrapeTarget records one target's scrapes. A nil *ScrapeTarget records
// nothing.
type ScrapeTarget struct {
	ins      *instruments
	rcv      *Receiver
	a        attrs
	normal   bool
	detailed bool
}

// Target is the instrument set of one target of job, target being its
// instance (host:port).
func (s *Scrape) Target(job, target string) *ScrapeTarget {
	if s == nil {
		return nil
	}
	return &ScrapeTarget{ins: s.ins, rcv: s.rcv,
		a:        newAttrs(attribute.String("receiver", s.id), attribute.String("scrape_job", job), attribute.String("target", target)),
		normal:   s.ins.level >= LevelNormal,
		detailed: s.ins.level >= LevelDetailed,
	}
}

// Enabled reports whether st counts the points of a scrape (Delivered).
func (st *ScrapeTarget) Enabled() bool { return st != nil }

// Scraped records a scrape: whether it succeeded, how long it took, and
// the page's samples (all, kept by metric relabeling, new series).
func (st *ScrapeTarget) Scraped(up bool, d time.Duration, samples, kept, added int) {
	if st == nil || !st.normal {
		return
	}
	u := int64(0)
	if up {
		u = 1
	}
	st.ins.scrapeUp.Record(bg, u, st.a.rec...)
	st.ins.scrapeDuration.Record(bg, d.Seconds(), st.a.rec...)
	st.ins.scrapeSamples.Record(bg, int64(samples), st.a.rec...)
	if st.detailed {
		st.ins.scrapeKept.Record(bg, int64(kept), st.a.rec...)
		st.ins.scrapeAdded.Record(bg, int64(added), st.a.rec...)
	}
}

// Delivered counts a scrape's points as the receiver's: accepted when err
// is nil, refused otherwise.
func (st *ScrapeTarget) Delivered(points int, err error) {
	if st == nil {
		return
	}
	st.rcv.Record(pipeline.Metrics, HTTP, points, err)
}

// Sink is the instrument set of one exporter. A nil *Sink records
// nothing.
type Sink struct {
	ins    *instruments
	a      attrs
	normal bool
}

// Sink is the instrument set of exporter id (nil below level basic).
func (t *Telemetry) Sink(id string) *Sink {
	if t.Level() < LevelBasic {
		return nil
	}
	return &Sink{ins: t.ins, a: newAttrs(attribute.String("exporter", id)), normal: t.ins.level >= LevelNormal}
}

// Enabled reports whether s records: when it does not, the caller need
// not count a batch's items.
func (s *Sink) Enabled() bool { return s != nil }

// Sent counts items of sig written.
func (s *Sink) Sent(sig pipeline.Signal, items int) {
	if s == nil || items <= 0 || int(sig) >= signals {
		return
	}
	s.ins.expSent[sig].Add(bg, int64(items), s.a.add...)
}

// Failed counts items of sig the backend refused or gave up on.
func (s *Sink) Failed(sig pipeline.Signal, items int) {
	if s == nil || items <= 0 || int(sig) >= signals {
		return
	}
	s.ins.expFailed[sig].Add(bg, int64(items), s.a.add...)
}

// Unsent counts items of sig the exporter had not sent when its time at
// stop ran out.
func (s *Sink) Unsent(sig pipeline.Signal, items int) {
	if s == nil || items <= 0 || int(sig) >= signals {
		return
	}
	s.ins.expUnsent[sig].Add(bg, int64(items), s.a.add...)
}

// EnqueueFailed counts items of sig dropped from a full queue.
func (s *Sink) EnqueueFailed(sig pipeline.Signal, items int) {
	if s == nil || items <= 0 || int(sig) >= signals {
		return
	}
	s.ins.expEnqueueFailed[sig].Add(bg, int64(items), s.a.add...)
}

// Backfilled counts items of sig the backfill sent from the JSONL.
func (s *Sink) Backfilled(sig pipeline.Signal, items int) {
	if s == nil || items <= 0 || int(sig) >= signals {
		return
	}
	s.ins.expBackfilled[sig].Add(bg, int64(items), s.a.add...)
}

// Dropped counts batches dropped.
func (s *Sink) Dropped(batches int) {
	if s == nil || batches <= 0 {
		return
	}
	s.ins.expDropped.Add(bg, int64(batches), s.a.add...)
}

// Retried counts one request sent again.
func (s *Sink) Retried() {
	if s == nil || !s.normal {
		return
	}
	s.ins.expRetries.Add(bg, 1, s.a.add...)
}

// Requested records one request to the backend that took d.
func (s *Sink) Requested(d time.Duration) {
	if s == nil || !s.normal {
		return
	}
	s.ins.expDuration.Record(bg, d.Seconds(), s.a.rec...)
}

// Wrote counts bytes written to the file.
func (s *Sink) Wrote(bytes int) {
	if s == nil || !s.normal || bytes <= 0 {
		return
	}
	s.ins.expJSONL.Add(bg, int64(bytes), s.a.add...)
}

// ObserveQueue has the queue's length read, with size, whenever the
// metrics are collected, beside its capacity. The returned func stops it.
func (s *Sink) ObserveQueue(size func() int, capacity int) (stop func()) {
	if s == nil || !s.ins.queueObservable {
		return func() {}
	}
	reg, err := s.ins.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(s.ins.expQueueSize, int64(size()), s.a.obs...)
		o.ObserveInt64(s.ins.expQueueCap, int64(capacity), s.a.obs...)
		return nil
	}, s.ins.expQueueSize, s.ins.expQueueCap)
	if err != nil {
		return func() {}
	}
	return func() { _ = reg.Unregister() }
}

// ObserveBacklog has the backfill's backlog (batches and bytes in the
// JSONL the backend has not got) read with backlog whenever the metrics
// are collected. The returned func stops it.
func (s *Sink) ObserveBacklog(backlog func() (batches int, bytes int64)) (stop func()) {
	if s == nil || !s.ins.queueObservable {
		return func() {}
	}
	reg, err := s.ins.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		n, b := backlog()
		o.ObserveInt64(s.ins.expBacklogBatches, int64(n), s.a.obs...)
		o.ObserveInt64(s.ins.expBacklogBytes, b, s.a.obs...)
		return nil
	}, s.ins.expBacklogBatches, s.ins.expBacklogBytes)
	if err != nil {
		return func() {}
	}
	return func() { _ = reg.Unregister() }
}
