// Package telemetry is otelstep's own telemetry: its metrics, recorded with
// the OpenTelemetry metrics SDK (go.opentelemetry.io/otel/sdk/metric) and
// read as the collector's service.telemetry.metrics says (config.Telemetry):
//
//   - no readers: served in the Prometheus text format on the health
//     endpoint's /metrics (Handler);
//   - periodic readers: pushed every interval with otlpmetrichttp, and
//     once more at stop, after all the data, for at most 5 s (a dead
//     metrics backend does not hold the exit up);
//   - pull readers: served in the Prometheus text format on host:port's
//     /metrics.
//
// Nothing here is global: New builds one MeterProvider, and the components
// get their instruments through the sets it hands out (Receiver, Scrape,
// Sink, Pipeline), passed to them at construction. A nil *Telemetry, and a
// nil set, record nothing, so components built without telemetry (tests)
// need none.
//
// # Levels
//
// service.telemetry.metrics.level says which instruments exist, as in the
// collector: none has none (and no readers, no /metrics); basic has the
// essential ones; normal (the default) adds what explains throughput and
// latency; detailed adds what is mostly for debugging otelstep itself.
//
// # Instruments
//
// Names are the collector's where the collector measures the same thing
// (so that its dashboards work), otelstep_* otherwise. The Prometheus text
// adds _total to counters (monotonic sums), nothing else: the names carry
// their unit where it is not a count.
//
//	name                                            kind       level     attributes                   what
//	otelcol_receiver_accepted_metric_points         counter    basic     receiver, transport          points a receiver handed on (OTLP: per request, Prometheus: per scrape)
//	otelcol_receiver_accepted_spans                 counter    basic     receiver, transport          spans, as above
//	otelcol_receiver_accepted_log_records           counter    basic     receiver, transport          log records, as above
//	otelcol_receiver_refused_{metric_points,spans,log_records}  basic    receiver, transport          items the pipeline refused (full, stopping, failed)
//	otelstep_receiver_refused_requests              counter    basic     receiver, signal, transport, reason  OTLP requests refused, whether or not their items could be counted (reasons: otlpin.Reason)
//	otelcol_exporter_sent_{metric_points,spans,log_records}     basic    exporter                     items written: accepted by the backend, or in the JSONL file's buffer as a whole line
//	otelcol_exporter_send_failed_{metric_points,spans,log_records} basic exporter                     items the backend refused or whose retries ran out (left in the JSONL: the backfill sends those it was down for, replay those it refused)
//	otelcol_exporter_enqueue_failed_{metric_points,spans,log_records} basic exporter                  items dropped, the oldest, from the OTLP/HTTP sink's full queue (left in the JSONL for the backfill)
//	otelstep_exporter_backfilled_{metric_points,spans,log_records} basic exporter                     items the backfill sent from the JSONL (what the sink had not delivered, this run or an earlier one)
//	otelstep_exporter_backfill_backlog_batches      gauge      basic     exporter                     lines (a batch each) in the JSONL the backend has not got: for the backfill, or left to otelstep replay
//	otelstep_exporter_backfill_backlog_bytes        gauge      basic     exporter                     their bytes
//	otelcol_exporter_queue_size                     gauge      basic     exporter                     batches queued (observed when read)
//	otelcol_exporter_queue_capacity                 gauge      basic     exporter                     the queue's size in batches
//	otelstep_exporter_dropped_batches               counter    basic     exporter                     batches the OTLP/HTTP sink dropped: its queue full, or left at shutdown
//	otelstep_exporter_unsent_at_stop_{metric_points,spans,log_records} basic exporter                 items the OTLP/HTTP sink had not sent when its time at stop ran out (queued, in flight, waiting to retry); they are in the JSONL
//	otelcol_process_uptime                          counter    basic                                  seconds since start (float)
//	otelcol_process_cpu_seconds                     counter    basic                                  user+system CPU seconds (getrusage)
//	otelcol_process_memory_rss                      gauge      basic                                  resident set size in bytes (Linux: /proc/self/statm)
//	otelcol_process_runtime_heap_alloc_bytes        gauge      basic                                  bytes of heap objects (runtime/metrics /memory/classes/heap/objects:bytes)
//	otelcol_process_runtime_total_sys_memory_bytes  gauge      basic                                  bytes the Go runtime has from the OS (/memory/classes/total:bytes)
//	otelstep_go_goroutines                          gauge      basic                                  goroutines (/sched/goroutines:goroutines)
//	otelcol_process_runtime_total_alloc_bytes       counter    normal                                 bytes allocated on the heap (/gc/heap/allocs:bytes)
//	otelstep_go_mallocs                             counter    normal                                 heap objects allocated, tiny ones included, as runtime.MemStats.Mallocs (/gc/heap/allocs:objects + /gc/heap/tiny/allocs:objects)
//	otelstep_pipeline_items                         counter    normal    pipeline                     points, spans or log records that entered a pipeline and were taken
//	otelstep_exporter_retries                       counter    normal    exporter                     OTLP/HTTP requests sent again after a retryable failure
//	otelstep_exporter_request_duration_seconds      histogram  normal    exporter                     each OTLP/HTTP request, answered or not
//	otelstep_exporter_jsonl_bytes                   counter    normal    exporter                     bytes written to a JSONL file
//	otelstep_scrape_up                              gauge      normal    receiver, scrape_job, target 1 if the target's last scrape succeeded, else 0
//	otelstep_scrape_duration_seconds                histogram  normal    receiver, scrape_job, target each scrape, fetch and conversion
//	otelstep_scrape_samples_scraped                 gauge      normal    receiver, scrape_job, target samples on the target's last page
//	otelstep_scrape_samples_post_metric_relabeling  gauge      detailed  receiver, scrape_job, target samples kept by metric_relabel_configs
//	otelstep_scrape_series_added                    gauge      detailed  receiver, scrape_job, target series new in the last scrape
//	otelstep_go_gc_cycles                           counter    detailed                               completed GC cycles (/gc/cycles/total:gc-cycles)
//	otelstep_go_heap_goal_bytes                     gauge      detailed                               the GC's heap goal (/gc/heap/goal:bytes)
//
// transport is grpc or http. Items are counted per request, scrape or
// batch, never per item, with attribute sets made once per component.
// The process metrics are read in an observable callback, only when a
// reader collects, from runtime/metrics (never runtime.ReadMemStats, which
// stops the world), getrusage and /proc/self/statm.
//
// The resource is service.name=otelstep, service.version and a
// service.instance.id made at start, then service.telemetry.resource.
package telemetry

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"
	sdkresource "go.opentelemetry.io/otel/sdk/resource"

	"github.com/otelstep/otelstep/config"
)

// ScopeName is the instrumentation scope of otelstep's own metrics.
const ScopeName = "github.com/otelstep/otelstep/telemetry"

// Level is service.telemetry.metrics.level.
type Level int

// The levels, in order: each has the instruments of those before it.
const (
	LevelNone Level = iota
	LevelBasic
	LevelNormal
	LevelDetailed
)

// ParseLevel reads a level as the config has it ("" is normal).
func ParseLevel(s string) (Level, error) {
	switch s {
	case "none":
		return LevelNone, nil
	case "basic":
		return LevelBasic, nil
	case "", "normal":
		return LevelNormal, nil
	case "detailed":
		return LevelDetailed, nil
	}
	return 0, fmt.Errorf("telemetry: unknown level %q", s)
}

// Options are what New takes beside the config.
type Options struct {
	Logger *slog.Logger // nil: discard
	// Start is when the process started, for otelcol_process_uptime;
	// zero: when New is called.
	Start time.Time
	// Client is the HTTP client of the periodic readers' exporters; nil:
	// otlpmetrichttp's own.
	Client *http.Client
}

// Telemetry is otelstep's own metrics: the MeterProvider, its readers and
// the instruments the components record with.
type Telemetry struct {
	level Level
	log   *slog.Logger
	mp    *sdkmetric.MeterProvider // nil at level none
	ins   *instruments
	// local is read by Handler: set when there are no readers.
	local    *sdkmetric.ManualReader
	periodic []*periodic
	pulls    []*pull
	proc     *process

	startOnce, stopOnce sync.Once
	stopErr             error
}

// New builds the telemetry cfg describes. Nothing is bound or sent until
// Start.
func New(cfg config.Telemetry, o Options) (*Telemetry, error) {
	level, err := ParseLevel(cfg.MetricsLevel())
	if err != nil {
		return nil, err
	}
	t := &Telemetry{level: level, log: o.Logger}
	if t.log == nil {
		t.log = slog.New(slog.DiscardHandler)
	}
	if o.Start.IsZero() {
		o.Start = time.Now()
	}
	if level == LevelNone {
		if len(cfg.Readers) > 0 {
			// As in the collector: level none turns the metrics off, readers
			// and all. Said, since the config names readers.
			t.log.Info("service.telemetry.metrics.level is none: otelstep's own metrics are off and its readers unused", "readers", len(cfg.Readers))
		}
		t.ins = newInstruments(noop.Meter{}, LevelNone)
		return t, nil
	}
	opts := []sdkmetric.Option{
		sdkmetric.WithResource(newResource(cfg.Resource)),
		// No exemplars: nothing otelstep records is in a sampled span, and
		// the filter would be asked on every measurement.
		sdkmetric.WithExemplarFilter(exemplar.AlwaysOffFilter),
	}
	if len(cfg.Readers) == 0 {
		t.local = sdkmetric.NewManualReader()
		opts = append(opts, sdkmetric.WithReader(t.local))
	}
	for _, r := range cfg.Readers {
		switch {
		case r.Periodic != nil:
			p, err := newPeriodic(r, o.Client, t.log)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", r.Path, err)
			}
			t.periodic = append(t.periodic, p)
			opts = append(opts, sdkmetric.WithReader(p.reader))
		case r.Pull != nil:
			p := newPull(r, t.log)
			t.pulls = append(t.pulls, p)
			opts = append(opts, sdkmetric.WithReader(p.reader))
		}
	}
	t.mp = sdkmetric.NewMeterProvider(opts...)
	meter := t.mp.Meter(ScopeName, metric.WithInstrumentationVersion(version()))
	t.ins = newInstruments(meter, level)
	if err := t.ins.err; err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	t.proc, err = newProcess(meter, level, o.Start)
	if err != nil {
		return nil, fmt.Errorf("telemetry: process metrics: %w", err)
	}
	return t, nil
}

// Level is the level the telemetry was built at (LevelNone for nil).
func (t *Telemetry) Level() Level {
	if t == nil {
		return LevelNone
	}
	return t.level
}

// Start binds the pull readers' listeners and starts the periodic
// readers. A listener that cannot be bound is an error naming its reader.
func (t *Telemetry) Start(ctx context.Context) error {
	if t == nil {
		return nil
	}
	var err error
	t.startOnce.Do(func() {
		for _, p := range t.pulls {
			if err = p.start(ctx); err != nil {
				return
			}
		}
		for _, p := range t.periodic {
			p.start()
		}
	})
	return err
}

// Shutdown stops the periodic readers after a last export of everything
// recorded (within ctx), closes the pull readers' listeners and shuts the
// MeterProvider down. It is for the very end of a stop.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	t.stopOnce.Do(func() {
		// The periodic readers' last exports go out together: each may
		// wait for its backend up to ctx's deadline.
		errs := make([]error, len(t.periodic), len(t.periodic)+1)
		var wg sync.WaitGroup
		for i, p := range t.periodic {
			wg.Go(func() { errs[i] = p.shutdown(ctx) })
		}
		wg.Wait()
		for _, p := range t.pulls {
			p.close()
		}
		if t.mp != nil {
			if err := t.mp.Shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("telemetry: %w", err))
			}
		}
		t.stopErr = errors.Join(errs...)
	})
	return t.stopErr
}

// Handler serves the metrics in the Prometheus text format, for the health
// endpoint's /metrics. It is nil when readers are configured (the metrics
// go there) or at level none.
func (t *Telemetry) Handler() http.Handler {
	if t == nil || t.local == nil {
		return nil
	}
	return newPromHandler(t.local, true)
}

// PullAddrs are the bound addresses of the pull readers, in config order
// (for tests that use port 0); nil before Start.
func (t *Telemetry) PullAddrs() []net.Addr {
	if t == nil {
		return nil
	}
	var out []net.Addr
	for _, p := range t.pulls {
		if a := p.addr(); a != nil {
			out = append(out, a)
		}
	}
	return out
}

// newResource is otelstep's own resource, with service.telemetry.resource
// over it (a nil value removing an attribute).
func newResource(extra map[string]*string) *sdkresource.Resource {
	attrs := map[string]string{
		"service.name":        "otelstep",
		"service.version":     version(),
		"service.instance.id": instanceID(),
	}
	for k, v := range extra {
		if v == nil {
			delete(attrs, k)
		} else {
			attrs[k] = *v
		}
	}
	kvs := make([]attribute.KeyValue, 0, len(attrs))
	for k, v := range attrs {
		kvs = append(kvs, attribute.String(k, v))
	}
	return sdkresource.NewSchemaless(kvs...)
}

// version is the main module's version, "devel" when built from a work
// tree.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// instanceID is a random (version 4) UUID, as the collector makes its
// service.instance.id.
func instanceID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
