// Package service builds the running otelstep from a config: receivers,
// processors and sinks linked into pipelines, the health endpoint, and the
// start and stop order that keeps everything accepted before SIGTERM.
package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/otelstep/otelstep/backfill"
	"github.com/otelstep/otelstep/batch"
	"github.com/otelstep/otelstep/config"
	"github.com/otelstep/otelstep/otlpin"
	"github.com/otelstep/otelstep/pipeline"
	"github.com/otelstep/otelstep/redact"
	"github.com/otelstep/otelstep/resource"
	"github.com/otelstep/otelstep/scraper"
	"github.com/otelstep/otelstep/sink"
	"github.com/otelstep/otelstep/spanmetrics"
	"github.com/otelstep/otelstep/telemetry"
	"google.golang.org/protobuf/proto"
)

// StopTimeout is how long a stop may take in all: the job script waits
// 30 s after SIGTERM before it kills the step.
const StopTimeout = 28 * time.Second

// The stop's budgets, in its order (stop). Each stage that waits on
// someone else (a client, a target, the backend) has a bound of its own,
// so that no one of them can spend the time of the stages after it.
const (
	// receiverDrain: the OTLP receivers' requests in flight may finish;
	// then their connections are closed (otlpin.Options.DrainTimeout). A
	// request cut short was not answered, so its sender keeps its data.
	receiverDrain = otlpin.DefaultDrainTimeout
	// finalScrapes: the targets' scrapes in flight, then their final
	// scrapes, side by side. A live target answers at once; one that
	// holds its scrape past this is cut, so that a hung target costs a
	// stop seconds, not its scrape timeout.
	finalScrapes = 5 * time.Second
	// flushReserve is kept, after the scrapes, for the batch processors,
	// the connectors and the JSONL files: a few milliseconds' work unless
	// a file cannot be written.
	flushReserve = 5 * time.Second
	// backendStop: once the JSONL files are written, the OTLP/HTTP
	// exporters may send what they still hold this long. What they cannot
	// is in the JSONL files, counted unsent (sink.HTTPStats, the
	// telemetry, the last log line), and is no failure of the stop.
	backendStop = 5 * time.Second
	// telemetryStop bounds the final export of otelstep's own metrics.
	telemetryStop = 2 * time.Second
)

// stopPlan shares out a stop's time (stop). The scrapes in flight, then
// the final scrapes, have finalScrapes after the receivers, and never
// past the flushes', the backend's and the telemetry's time before the
// end; a scrape timeout longer than that is cut to it.
type stopPlan struct {
	total, receivers, scrapes, flush, backend, telemetry time.Duration
}

var defaultStopPlan = stopPlan{total: StopTimeout, receivers: receiverDrain, scrapes: finalScrapes,
	flush: flushReserve, backend: backendStop, telemetry: telemetryStop}

// ErrStart is what Run's error wraps when the service could not start (a
// port in use, say): a setup error like a refused config, not a failure of
// a run.
var ErrStart = errors.New("cannot start")

// Service is one running otelstep.
type Service struct {
	cfg *config.Config
	log *slog.Logger

	state   atomic.Int32
	started time.Time

	scrapers  []*scraper.Manager
	receivers []*otlpin.Receiver
	// By component id, for the status document (status.go).
	scraperByID  map[string]*scraper.Manager
	receiverByID map[string]*otlpin.Receiver
	sinks        map[string]sink.Sink
	// redactor hides the config's secrets in what the status document
	// shows.
	redactor *redact.Redactor
	batchers []*batch.Processor
	// connectors by id: sinks of one pipeline that feed others.
	connectors map[string]*spanmetrics.Connector
	// drain is the stop order of the stages that hold data for a while:
	// each pipeline's batch processors, upstream first, and each
	// connector after every pipeline feeding it (config.Order).
	drain     []drainer
	files     []*sink.File
	https     []*sink.HTTP
	backfills backfill.Set         // by file and exporter
	telemetry *telemetry.Telemetry // otelstep's own metrics
	// sharedAttrs is where the scrapers and connectors make their series'
	// attribute sets, and where the sinks' encoders find them to store and
	// reuse their encodings (pipeline.SharedAttrs).
	sharedAttrs *pipeline.SharedAttrs

	health    []*http.Server
	healthLn  []net.Listener
	scrapeWG  sync.WaitGroup
	cancelRun context.CancelFunc

	plan stopPlan // defaultStopPlan; shorter in tests of the deadline

	// Set by stop, for Stopped.
	stopTook                   time.Duration
	unsentBatches, unsentItems uint64
	delivery                   []any // the stop line's delivery counts (delivery.go)

	// fileBackends are the OTLP/HTTP exporters beside each JSONL file in
	// its pipelines (unwritten.go).
	fileBackends map[*sink.File][]*sink.HTTP
}

// New builds every component of cfg without starting any.
func New(cfg *config.Config, log *slog.Logger) (*Service, error) {
	s := &Service{cfg: cfg, log: log, started: time.Now(), plan: defaultStopPlan, connectors: map[string]*spanmetrics.Connector{},
		sharedAttrs: pipeline.NewSharedAttrs(), scraperByID: map[string]*scraper.Manager{}, receiverByID: map[string]*otlpin.Receiver{},
		redactor: redact.New(cfg.Secrets...)}
	tel, err := telemetry.New(cfg.Service.Telemetry, telemetry.Options{Logger: log, Start: s.started})
	if err != nil {
		return nil, fmt.Errorf("service.telemetry.metrics: %w", err)
	}
	s.telemetry = tel
	sinks := map[string]sink.Sink{}
	s.sinks = sinks
	fileSignal := map[string]pipeline.Signal{}
	for _, p := range cfg.Service.Pipelines {
		sig, _ := pipeline.ParseSignal(p.Signal)
		for _, e := range p.Exporters {
			if _, ok := cfg.Files[e]; ok {
				fileSignal[e] = sig
			}
		}
	}
	sinkFor := func(id string) (sink.Sink, error) {
		if sk, ok := sinks[id]; ok {
			return sk, nil
		}
		if f, ok := cfg.Files[id]; ok {
			fs, err := sink.NewFile(sink.FileOptions{Name: id, Path: f.Path, Signal: fileSignal[id], Logger: log.With("sink", id), Telemetry: s.telemetry.Sink(id),
				SharedAttrs: s.sharedAttrs, Secrets: tokens(cfg), PlainScrub: plainScrub()})
			if err != nil {
				return nil, fmt.Errorf("exporter %s: %w", id, err)
			}
			s.files = append(s.files, fs)
			sinks[id] = fs
			return fs, nil
		}
		e := cfg.OTLPHTTP[id]
		o := httpOptions(id, e, log)
		o.RequestItems, o.RequestWait = requestBatch(cfg, id)
		o.Telemetry = s.telemetry.Sink(id)
		o.Secrets = cfg.Secrets
		o.SharedAttrs = s.sharedAttrs
		hs, err := sink.NewHTTP(o)
		if err != nil {
			return nil, fmt.Errorf("exporter %s: %w", id, err)
		}
		s.https = append(s.https, hs)
		sinks[id] = hs
		return hs, nil
	}

	// heads[receiver][signal] are the first stages of the pipelines that
	// receiver (or connector) feeds. Pipelines are built downstream first,
	// so that a connector's pipelines exist when the pipeline exporting to
	// it is built.
	heads := map[string]map[pipeline.Signal][]pipeline.Consumer{}
	drain := cfg.Order()
	batchers := map[string][]*batch.Processor{} // by pipeline, upstream first
	for i := len(drain) - 1; i >= 0; i-- {
		p := drain[i]
		sig, _ := pipeline.ParseSignal(p.Signal)
		var exp []sink.Sink
		var files []*sink.File // the pipeline's JSONL files
		for _, e := range p.Exporters {
			if cn, ok := cfg.Connectors[e]; ok {
				c, err := s.connector(cn, heads[e], log)
				if err != nil {
					return nil, err
				}
				exp = append(exp, c)
				continue
			}
			sk, err := sinkFor(e)
			if err != nil {
				return nil, err
			}
			if f, ok := sk.(*sink.File); ok {
				files = append(files, f)
			}
			exp = append(exp, sk)
		}
		fan := sink.NewFanout(exp...)
		s.backfills.Track(s.cfg, fan, exp, log)
		s.noteBackends(exp)
		var next pipeline.Consumer = fan
		for i := len(p.Processors) - 1; i >= 0; i-- {
			id := p.Processors[i]
			typ, _, _ := strings.Cut(id, "/")
			switch typ {
			case "batch":
				b := cfg.Batch[id]
				bt := batch.New(batch.Options{SendBatchSize: b.SendBatchSize, SendBatchMaxSize: b.SendBatchMaxSize, Timeout: b.Timeout}, next)
				batchers[p.ID] = append([]*batch.Processor{bt}, batchers[p.ID]...)
				next = bt
			case "resource":
				rp, err := resource.NewProcessor(cfg.Resource[id], next)
				if err != nil {
					return nil, fmt.Errorf("processor %s: %w", id, err)
				}
				next = rp
			case "transform":
				next = resource.NewTransform(cfg.Transform[id], sig, next)
			default:
				return nil, fmt.Errorf("processor %s: not implemented", id)
			}
		}
		log.Debug("pipeline built", "pipeline", p.ID, "receivers", p.Receivers, "processors", p.Processors, "exporters", p.Exporters)
		next = countItems(s.telemetry.Pipeline(p.ID), next)
		for _, r := range p.Receivers {
			if heads[r] == nil {
				heads[r] = map[pipeline.Signal][]pipeline.Consumer{}
			}
			head := next
			if _, ok := cfg.OTLP[r]; ok && len(files) > 0 {
				// A sender can retry: told at once while a file
				// cannot be written, rather than after waiting.
				head = refuseWhileFailing{files, next}
			}
			heads[r][sig] = append(heads[r][sig], head)
		}
	}
	// Stop drains the pipelines upstream first: a pipeline's batch
	// processors, then the connectors it feeds once every pipeline feeding
	// them is drained (their last flush goes into pipelines not yet
	// drained).
	fed := map[string]int{} // connector id -> pipelines feeding it not yet drained
	for _, p := range drain {
		for _, e := range p.Exporters {
			if _, ok := cfg.Connectors[e]; ok {
				fed[e]++
			}
		}
	}
	for _, p := range drain {
		for _, b := range batchers[p.ID] {
			s.drain = append(s.drain, b)
			s.batchers = append(s.batchers, b)
		}
		for _, e := range p.Exporters {
			if _, ok := cfg.Connectors[e]; !ok {
				continue
			}
			if fed[e]--; fed[e] == 0 {
				s.drain = append(s.drain, s.connectors[e])
			}
		}
	}

	for id, pr := range cfg.Prometheus {
		var targets []scraper.Target
		for _, sc := range pr.ScrapeConfigs {
			for _, st := range sc.StaticConfigs {
				for _, addr := range st.Targets {
					targets = append(targets, scraper.Target{
						JobName: sc.JobName, Address: addr, Scheme: sc.Scheme, MetricsPath: sc.MetricsPath,
						Params: sc.Params, Labels: st.Labels, Interval: sc.Interval, Timeout: sc.Timeout,
						HonorLabels: sc.HonorLabels, HonorTimestamps: sc.HonorTimestamps, BodySizeLimit: sc.BodySizeLimit, Limits: scraper.Limits(sc.Limits),
						RelabelConfigs: sc.RelabelConfigs, MetricRelabelConfigs: sc.MetricRelabelConfigs,
						ProxyFromEnvironment: sc.ProxyFromEnvironment,
					})
				}
			}
		}
		next := multi(heads[id][pipeline.Metrics])
		if next == nil {
			continue // defined but in no pipeline: the collector does not start it either
		}
		m, err := scraper.New(scraper.Options{Targets: targets, Next: next, Logger: log.With("receiver", id), Telemetry: s.telemetry.Scrape(id),
			SharedAttrs: s.sharedAttrs, MemoryLimit: pr.MemoryLimit})
		if err != nil {
			return nil, fmt.Errorf("receiver %s: %w", id, err)
		}
		s.scrapers = append(s.scrapers, m)
		s.scraperByID[id] = m
	}
	for id, o := range cfg.OTLP {
		h := heads[id]
		if h == nil {
			continue
		}
		// Each protocol its own limit, as in the collector: unset (0) is
		// otlpin's default, the collector's (HTTP 20 MiB, gRPC 4 MiB).
		// 2^42 MiB is beyond any message.
		ka, kaPolicy := grpcKeepalive(o.GRPCKeepalive)
		r, err := otlpin.New(otlpin.Options{
			Telemetry:    s.telemetry.Receiver(id),
			GRPCEndpoint: o.GRPCEndpoint, HTTPEndpoint: o.HTTPEndpoint,
			Metrics: multi(h[pipeline.Metrics]), Traces: multi(h[pipeline.Traces]), Logs: multi(h[pipeline.Logs]),
			Logger:          log.With("receiver", id),
			Redact:          s.redactor.Replace,
			DrainTimeout:    s.plan.receivers,
			MaxRequestBytes: o.HTTPMaxRequestBodyBytes, GRPCMaxRecvBytes: min(int64(o.GRPCMaxRecvMiB), 1<<42) << 20,
			AdmissionBytes: int64(o.AdmissionMiB) << 20,
			// Bounded and idle connections closed (limits.go).
			MaxConnections: maxConnections(), GRPCKeepalive: ka, GRPCKeepalivePolicy: kaPolicy,
			HTTPReadTimeout: o.HTTPServer.ReadTimeout, HTTPReadHeaderTimeout: o.HTTPServer.ReadHeaderTimeout,
			HTTPWriteTimeout: o.HTTPServer.WriteTimeout, HTTPIdleTimeout: o.HTTPServer.IdleTimeout, HTTPDisableKeepAlives: o.HTTPServer.DisableKeepAlives,
		})
		if err != nil {
			return nil, fmt.Errorf("receiver %s: %w", id, err)
		}
		s.receivers = append(s.receivers, r)
		s.receiverByID[id] = r
	}
	return s, nil
}

// drainer is a stage that holds data for a while and sends it all on at
// Shutdown.
type drainer interface {
	Shutdown(ctx context.Context) error
}

// connector builds the connector cn, feeding the pipelines in heads.
func (s *Service) connector(cn *config.Connector, heads map[pipeline.Signal][]pipeline.Consumer, log *slog.Logger) (*spanmetrics.Connector, error) {
	if c, ok := s.connectors[cn.ID]; ok {
		return c, nil
	}
	to, _ := pipeline.ParseSignal(cn.To)
	next := multi(heads[to])
	sm := cn.SpanMetrics
	dims := make([]spanmetrics.Dimension, len(sm.Dimensions))
	for i, d := range sm.Dimensions {
		dims[i] = spanmetrics.Dimension{Name: d.Name, Default: d.Default}
	}
	c, err := spanmetrics.New(cn.ID, spanmetrics.Config{
		Buckets: sm.Buckets, Dimensions: dims, FlushInterval: sm.FlushInterval, Namespace: sm.Namespace,
		Unit: sm.Unit, Delta: sm.Delta, CacheSize: sm.CacheSize, SharedAttrs: s.sharedAttrs,
	}, next, log.With("connector", cn.ID))
	if err != nil {
		return nil, fmt.Errorf("connector %s: %w", cn.ID, err)
	}
	s.connectors[cn.ID] = c
	return c, nil
}

func httpOptions(id string, e *config.OTLPHTTPExporter, log *slog.Logger) sink.HTTPOptions {
	qs := e.QueueSize
	if !e.QueueEnabled {
		qs = 1
	}
	return sink.HTTPOptions{
		Name: id, Endpoint: e.Endpoint, Headers: e.Headers, Compression: e.Compression, Timeout: e.Timeout,
		Retry:     sink.RetryOptions{Enabled: e.Retry.Enabled, InitialInterval: e.Retry.InitialInterval, MaxInterval: e.Retry.MaxInterval, MaxElapsedTime: e.Retry.MaxElapsedTime},
		QueueSize: qs, QueueBytes: e.QueueBytes, Logger: log.With("sink", id),
		MetricsEndpoint: e.MetricsEndpoint, TracesEndpoint: e.TracesEndpoint, LogsEndpoint: e.LogsEndpoint,
		TokenEnv: tokenEnv(e), ReportEvery: reportEvery(log),
	}
}

// requestBatch is how an exporter gathers batches into requests
// (sink.HTTPOptions.RequestItems, RequestWait): as the batch processors of
// the pipelines feeding it send them, up to the smallest of their
// send_batch_max_size (or send_batch_size) items and their timeout, at
// most the collector's defaults. An exporter fed by a pipeline without a
// batch processor sends each batch as it comes (a wait of 0), as the
// collector's would.
func requestBatch(cfg *config.Config, id string) (int, time.Duration) {
	items, wait := sink.DefaultRequestItems, sink.DefaultRequestWait
	for _, p := range cfg.Service.Pipelines {
		if !slices.Contains(p.Exporters, id) {
			continue
		}
		batched := false
		for _, pr := range p.Processors {
			b, ok := cfg.Batch[pr]
			if !ok {
				continue
			}
			batched = true
			if n := cmp.Or(b.SendBatchMaxSize, b.SendBatchSize); n > 0 {
				items = min(items, n)
			}
			if b.Timeout > 0 {
				wait = min(wait, b.Timeout)
			}
		}
		if !batched {
			return items, 0
		}
	}
	return items, wait
}

// countItems has the items of the batches next takes counted as the
// pipeline's, unless the telemetry's level counts none.
func countItems(c *telemetry.Pipeline, next pipeline.Consumer) pipeline.Consumer {
	if !c.Enabled() {
		return next
	}
	return counting{c, next}
}

// counting counts the items of the batches next takes, once per batch.
type counting struct {
	c    *telemetry.Pipeline
	next pipeline.Consumer
}

func (k counting) Consume(ctx context.Context, b *pipeline.Batch) error {
	items := b.Items // before: the batch is next's once taken
	err := k.next.Consume(ctx, b)
	if err == nil {
		k.c.Items(items)
	}
	return err
}

// Flush passes the hint on (pipeline.Flusher).
func (k counting) Flush(ctx context.Context) { pipeline.Flush(ctx, k.next) }

// refuseWhileFailing refuses every batch at once (pipeline.ErrFull, a
// sender's "retry later", with the reason) while one of files cannot be
// written, so that an OTLP sender is told at once rather than after its
// request waited for queue room that will not come. Scrapes are not
// refused: they wait in the file sink's Enqueue until writing works again,
// keeping their place.
type refuseWhileFailing struct {
	files []*sink.File
	next  pipeline.Consumer
}

func (r refuseWhileFailing) Consume(ctx context.Context, b *pipeline.Batch) error {
	for _, f := range r.files {
		if err := f.Failing(); err != nil {
			return fmt.Errorf("%w: %s: %w", pipeline.ErrFull, f.Name(), err)
		}
	}
	return r.next.Consume(ctx, b)
}

// Flush passes the hint on (pipeline.Flusher).
func (r refuseWhileFailing) Flush(ctx context.Context) { pipeline.Flush(ctx, r.next) }

// multi feeds every pipeline a receiver is in. Each pipeline but the last
// gets a deep copy, since processors change batches in place.
func multi(cs []pipeline.Consumer) pipeline.Consumer {
	switch len(cs) {
	case 0:
		return nil
	case 1:
		return cs[0]
	}
	return fanIn(cs)
}

// fanIn is multi's consumer of several pipelines.
type fanIn []pipeline.Consumer

func (cs fanIn) Consume(ctx context.Context, b *pipeline.Batch) error {
	for i, c := range cs {
		bb := b
		if i < len(cs)-1 {
			bb = cloneBatch(b)
		}
		if err := c.Consume(ctx, bb); err != nil {
			return err
		}
	}
	return nil
}

// Flush passes the hint to every pipeline (pipeline.Flusher).
func (cs fanIn) Flush(ctx context.Context) {
	for _, c := range cs {
		pipeline.Flush(ctx, c)
	}
}

// cloneBatch returns a deep copy of b, with a reference of its own on
// b's acks: the sender waits for every pipeline's copy to be written.
func cloneBatch(b *pipeline.Batch) *pipeline.Batch {
	b.RetainAcks(1)
	out := &pipeline.Batch{Signal: b.Signal, Items: b.Items, Acks: b.Acks, Scraped: b.Scraped}
	for _, x := range b.Metrics {
		out.Metrics = append(out.Metrics, proto.CloneOf(x))
	}
	for _, x := range b.Traces {
		out.Traces = append(out.Traces, x.Clone())
	}
	for _, x := range b.Logs {
		out.Logs = append(out.Logs, x.Clone())
	}
	return out
}

// Run starts everything, serves until ctx is done, then stops in order
// within StopTimeout. ready, if not nil, is closed once healthy. When the
// start fails, what was started is stopped and the error wraps ErrStart.
func (s *Service) Run(ctx context.Context, ready chan<- struct{}) error {
	if err := s.start(ctx); err != nil {
		stopCtx, cancel := context.WithTimeout(context.Background(), s.plan.total)
		defer cancel()
		s.stop(stopCtx)
		return fmt.Errorf("%w: %w", ErrStart, err)
	}
	s.state.Store(int32(running))
	s.log.Info("otelstep running", "startup", time.Since(s.started).Round(time.Microsecond).String(),
		"scrape_managers", len(s.scrapers), "receivers", len(s.receivers), "files", len(s.files), "exporters", len(s.https))
	if ready != nil {
		close(ready)
	}
	<-ctx.Done()
	s.log.Info("otelstep stopping")
	stopCtx, cancel := context.WithTimeout(context.Background(), s.plan.total)
	defer cancel()
	return s.stop(stopCtx)
}

func (s *Service) start(ctx context.Context) error {
	// First: a pull reader's port that cannot be bound fails the start
	// before anything is accepted.
	if err := s.telemetry.Start(ctx); err != nil {
		return err
	}
	for _, id := range s.cfg.Service.Extensions {
		h := s.cfg.HealthCheck[id]
		ln, err := net.Listen("tcp", h.Endpoint)
		if err != nil {
			return fmt.Errorf("extension %s: listen on %s: %w", id, h.Endpoint, err)
		}
		mux := http.NewServeMux()
		mux.HandleFunc(h.Path, s.healthHandler)
		if h.Path != "/status" {
			mux.HandleFunc("/status", s.statusHandler) // status.go
		}
		if h.Path != "/metrics" {
			mux.Handle("/metrics", s.metricsHandler())
		}
		srv, ln := healthServer(ln, mux) // bounded, short timeouts (limits.go)
		s.healthLn = append(s.healthLn, ln)
		s.health = append(s.health, srv)
		go func() { _ = srv.Serve(ln) }()
	}
	for _, f := range s.files {
		if err := f.Start(ctx); err != nil {
			return err
		}
	}
	for _, h := range s.https {
		if err := h.Start(ctx); err != nil {
			return err
		}
	}
	s.backfills.Start(ctx)
	for _, b := range s.batchers {
		if err := b.Start(ctx); err != nil {
			return err
		}
	}
	for _, id := range slices.Sorted(maps.Keys(s.connectors)) {
		if err := s.connectors[id].Start(ctx); err != nil {
			return fmt.Errorf("connector %s: %w", id, err)
		}
	}
	for _, r := range s.receivers {
		if err := r.Start(ctx); err != nil {
			return err
		}
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancelRun = cancel
	for _, m := range s.scrapers {
		s.scrapeWG.Add(1)
		go func() {
			defer s.scrapeWG.Done()
			if err := m.Run(runCtx); err != nil && !errors.Is(err, context.Canceled) {
				s.log.Error("scraper stopped", "err", err)
			}
		}()
	}
	return nil
}

// stop: stop accepting (receiverDrain), take the final scrapes
// (finalScrapes, and never past flushReserve+backendStop+telemetryStop
// before the end), flush
// the processors and connectors, then the JSONL files, then give the
// backend backendStop; last, otelstep's own metrics (s.plan).
func (s *Service) stop(ctx context.Context) error {
	s.state.Store(int32(stopping))
	// Backfills first: what they have not sent stays in their records,
	// for the next run.
	s.backfills.Stop()
	stopStart, p := time.Now(), s.plan
	var (
		errsMu sync.Mutex
		errs   []error
	)
	fail := func(err error) {
		errsMu.Lock()
		defer errsMu.Unlock()
		errs = append(errs, err)
	}
	// Each stage's deadline: its budget from now, and never past the
	// stop's own deadline less what the later stages are kept.
	stage := func(budget, keep time.Duration) (context.Context, context.CancelFunc) {
		dl := time.Now().Add(budget)
		if end, ok := ctx.Deadline(); ok && end.Add(-keep).Before(dl) {
			dl = end.Add(-keep)
		}
		return context.WithDeadline(ctx, dl)
	}
	var wg sync.WaitGroup
	for _, r := range s.receivers {
		wg.Go(func() {
			// The receivers' own drain bound (receiverDrain) ends what is
			// in flight; ctx only if the stop's time is shorter.
			if err := r.Shutdown(ctx); err != nil {
				fail(fmt.Errorf("stop receiver: %w", err))
			}
		})
	}
	wg.Wait()
	s.drainFiles()
	if s.cancelRun != nil {
		// Each target's scrape in flight finishes, then its final scrape,
		// side by side with the other targets', all within scrapeCtx: a
		// target that holds its scrape past that is cut alone, recording
		// nothing (a stop is no failed scrape), and the others' final
		// scrapes are kept (scraper.Manager.Final).
		scrapeCtx, cancel := stage(p.scrapes, p.flush+p.backend+p.telemetry)
		defer cancel()
		s.cancelRun()
		var wg sync.WaitGroup
		for _, m := range s.scrapers {
			wg.Go(func() { m.Final(scrapeCtx) })
		}
		wg.Wait()
		s.scrapeWG.Wait()
	}
	flushCtx, cancelFlush := stage(p.total, p.backend+p.telemetry)
	defer cancelFlush()
	for _, d := range s.drain {
		if err := d.Shutdown(flushCtx); err != nil {
			fail(fmt.Errorf("flush: %w", err))
		}
	}
	type short struct {
		f   *sink.File
		err error
	}
	var shorts []short // judged once the backend has had its time
	for _, f := range s.files {
		if err := f.Shutdown(flushCtx); err != nil {
			shorts = append(shorts, short{f, err})
		}
	}
	// The exporters have been sending all along; now they have
	// p.backend for what they still hold. What they cannot send is in
	// the JSONL files (written above): counted unsent, not a failure.
	backendCtx, cancelBackend := stage(p.backend, p.telemetry)
	defer cancelBackend()
	for _, h := range s.https {
		wg.Go(func() {
			if err := h.Shutdown(backendCtx); err != nil && backendCtx.Err() == nil {
				fail(fmt.Errorf("flush %s: %w", h.Name(), err))
			}
		})
	}
	wg.Wait()
	for _, h := range s.https {
		st := h.Stats()
		s.unsentBatches += st.UnsentBatches
		s.unsentItems += st.UnsentItems
	}
	for _, sh := range shorts {
		if err := s.judgeUnwritten(sh.f, sh.err); err != nil {
			fail(err)
		}
	}
	s.backfills.Close()
	s.delivery = s.deliverySummary()
	for _, h := range s.health {
		_ = h.Close()
	}
	// Last: the periodic readers' final export has the counts of
	// everything above.
	telCtx, cancelTel := stage(p.telemetry, 0)
	defer cancelTel()
	if err := s.telemetry.Shutdown(telCtx); err != nil {
		fail(err)
	}
	s.stopTook = time.Since(stopStart)
	return errors.Join(errs...)
}

// Stopped is what the stop did, for the last log line: how long it took
// and what the OTLP/HTTP exporters had not sent when their time ran out
// (it is in the JSONL files).
func (s *Service) Stopped() (took time.Duration, unsentBatches, unsentItems uint64) {
	return s.stopTook, s.unsentBatches, s.unsentItems
}

// HealthAddr is the first bound health endpoint (for tests using port 0).
func (s *Service) HealthAddr() net.Addr {
	if len(s.healthLn) == 0 {
		return nil
	}
	return s.healthLn[0].Addr()
}
