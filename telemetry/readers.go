package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"golang.org/x/net/netutil"

	"github.com/otelstep/otelstep/config"
)

// finalExportMax bounds a periodic reader's last export, at stop (its
// timeout too, when shorter).
const finalExportMax = 5 * time.Second

// periodic is a periodic reader: every interval it collects a
// ManualReader and exports what it got with otlpmetrichttp.
//
// Not sdkmetric's PeriodicReader, which starts exporting as it is made:
// the components' instruments are made with the MeterProvider in
// service.New, while nothing may be sent before Start (a config is built
// and dropped by validate, say).
type periodic struct {
	name     string // the reader's config path, for logs and errors
	endpoint string // for logs
	interval time.Duration
	timeout  time.Duration
	reader   *sdkmetric.ManualReader
	exp      sdkmetric.Exporter
	log      *slog.Logger

	rm      metricdata.ResourceMetrics // reused by every collect (one at a time: run, then shutdown)
	stop    chan struct{}
	done    chan struct{}
	started bool
	mu      sync.Mutex // started
}

func newPeriodic(r config.MetricReader, client *http.Client, log *slog.Logger) (*periodic, error) {
	c := r.Periodic
	e := c.OTLP
	u, err := url.Parse(e.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("endpoint: %w", err)
	}
	// As the collector (otelconf) reads the endpoint: its host, http://
	// for no TLS, its path as it is or /v1/metrics when there is none.
	opts := []otlpmetrichttp.Option{
		otlpmetrichttp.WithEndpoint(u.Host),
		// Set even when empty, compression and timeout too: the job's
		// OTEL_EXPORTER_OTLP_* variables are for its own processes, and
		// must not add headers (a token) to what otelstep sends here.
		otlpmetrichttp.WithHeaders(e.Headers),
		otlpmetrichttp.WithTimeout(e.Timeout),
		otlpmetrichttp.WithTemporalitySelector(temporality(e.Temporality)),
	}
	if u.Scheme == "http" {
		opts = append(opts, otlpmetrichttp.WithInsecure())
	}
	if u.Path != "" {
		opts = append(opts, otlpmetrichttp.WithURLPath(u.Path))
	} else {
		opts = append(opts, otlpmetrichttp.WithURLPath("/v1/metrics"))
	}
	if e.Compression == "gzip" {
		opts = append(opts, otlpmetrichttp.WithCompression(otlpmetrichttp.GzipCompression))
	} else {
		opts = append(opts, otlpmetrichttp.WithCompression(otlpmetrichttp.NoCompression))
	}
	if client != nil {
		opts = append(opts, otlpmetrichttp.WithHTTPClient(client))
	}
	exp, err := otlpmetrichttp.New(context.Background(), opts...)
	if err != nil {
		return nil, fmt.Errorf("otlp exporter: %w", err)
	}
	safe := *u
	safe.User = nil
	return &periodic{
		name: r.Path, endpoint: safe.String(), interval: c.Interval, timeout: c.Timeout, exp: exp, log: log,
		// The reader asks the exporter, as sdkmetric's PeriodicReader does,
		// which temporality and aggregation each instrument kind gets.
		reader: sdkmetric.NewManualReader(sdkmetric.WithTemporalitySelector(exp.Temporality), sdkmetric.WithAggregationSelector(exp.Aggregation)),
		stop:   make(chan struct{}), done: make(chan struct{}),
	}, nil
}

// temporality is temporality_preference's selector, as otelconf has them.
func temporality(pref string) sdkmetric.TemporalitySelector {
	switch pref {
	case "delta":
		return func(k sdkmetric.InstrumentKind) metricdata.Temporality {
			switch k {
			case sdkmetric.InstrumentKindCounter, sdkmetric.InstrumentKindHistogram, sdkmetric.InstrumentKindObservableCounter:
				return metricdata.DeltaTemporality
			}
			return metricdata.CumulativeTemporality
		}
	case "lowmemory":
		return func(k sdkmetric.InstrumentKind) metricdata.Temporality {
			switch k {
			case sdkmetric.InstrumentKindCounter, sdkmetric.InstrumentKindHistogram:
				return metricdata.DeltaTemporality
			}
			return metricdata.CumulativeTemporality
		}
	}
	return sdkmetric.DefaultTemporalitySelector
}

func (p *periodic) start() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started {
		return
	}
	p.started = true
	go p.run()
}

func (p *periodic) run() {
	defer close(p.done)
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			if err := p.export(context.Background()); err != nil {
				p.log.Warn("telemetry: exporting otelstep's metrics failed", "reader", p.name, "endpoint", p.endpoint, "error", err)
			}
		}
	}
}

// export collects and exports once, within the reader's timeout.
func (p *periodic) export(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	if err := p.reader.Collect(ctx, &p.rm); err != nil {
		return fmt.Errorf("collect: %w", err)
	}
	if err := p.exp.Export(ctx, &p.rm); err != nil {
		return fmt.Errorf("export to %s: %w", p.endpoint, err)
	}
	return nil
}

// shutdown stops the loop, exports once more (what was recorded since the
// last export: the stop's final counts), and shuts the exporter down.
func (p *periodic) shutdown(ctx context.Context) error {
	p.mu.Lock()
	started := p.started
	p.started = true // no start after this
	p.mu.Unlock()
	if started {
		close(p.stop)
		<-p.done
	}
	var errs []error
	if started {
		// The last export has its own bound: otelstep's metrics are sent
		// after all the data, and a dead metrics backend (retried until
		// the deadline) must not hold the exit up to the stop's.
		ctx, cancel := context.WithTimeout(ctx, finalExportMax)
		defer cancel()
		if err := p.export(ctx); err != nil {
			errs = append(errs, fmt.Errorf("%s: final export: %w", p.name, err))
		}
	}
	if err := p.exp.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", p.name, err))
	}
	return errors.Join(errs...)
}

// pull is a pull reader: the metrics in the Prometheus text format on
// http://host:port/metrics, collected from a ManualReader per request.
type pull struct {
	name       string
	hostPort   string
	reader     *sdkmetric.ManualReader
	typeSuffix bool
	log        *slog.Logger

	mu  sync.Mutex
	ln  net.Listener
	srv *http.Server
}

// pullMaxConns bounds a pull reader's open connections.
const pullMaxConns = 32

func newPull(r config.MetricReader, log *slog.Logger) *pull {
	return &pull{
		name:       r.Path,
		hostPort:   net.JoinHostPort(r.Pull.Host, strconv.Itoa(r.Pull.Port)),
		reader:     sdkmetric.NewManualReader(),
		typeSuffix: !r.Pull.WithoutTypeSuffix,
		log:        log,
	}
}

func (p *pull) start(ctx context.Context) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", p.hostPort)
	if err != nil {
		return fmt.Errorf("%s: listen on %s for otelstep's metrics: %w", p.name, p.hostPort, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", newPromHandler(p.reader, p.typeSuffix))
	// Bounded as the health endpoint is: a Prometheus server scrapes it
	// once in a while, and a flood of connections to it must not take the
	// descriptors the receivers and sinks need; the timeouts free a slot
	// held by an idle or slow client within seconds.
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 2 * time.Second, ReadTimeout: 5 * time.Second,
		WriteTimeout: 10 * time.Second, IdleTimeout: 5 * time.Second, MaxHeaderBytes: 16 << 10}
	ln = netutil.LimitListener(ln, pullMaxConns)
	p.mu.Lock()
	p.ln, p.srv = ln, srv
	p.mu.Unlock()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.log.Error("telemetry: the metrics server stopped", "reader", p.name, "endpoint", ln.Addr().String(), "error", err)
		}
	}()
	p.log.Info("serving otelstep's metrics", "reader", p.name, "url", "http://"+ln.Addr().String()+"/metrics")
	return nil
}

func (p *pull) addr() net.Addr {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		return nil
	}
	return p.ln.Addr()
}

func (p *pull) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.srv != nil {
		_ = p.srv.Close()
	}
}
