package scraper

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"github.com/klauspost/compress/gzip"
	"github.com/otelstep/otelstep/internal/pool"
	"hash/fnv"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/prometheus/model/relabel"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/otelstep/otelstep/pipeline"
	"github.com/otelstep/otelstep/telemetry"
)

// Target is one scrape target of one scrape config.
type Target struct {
	JobName         string
	Address         string // host:port
	Scheme          string // "http" or "https"
	MetricsPath     string // default /metrics
	Params          url.Values
	Labels          map[string]string // static_configs labels (target labels), added as point attributes
	Interval        time.Duration
	Timeout         time.Duration
	HonorLabels     bool
	HonorTimestamps bool  // default true in config
	BodySizeLimit   int64 // 0 = 64 MiB default
	// Limits are the scrape config's sample_limit, label_limit,
	// label_name_length_limit and label_value_length_limit (limits.go).
	Limits Limits
	// ProxyFromEnvironment (proxy_from_environment) sends the scrapes
	// through the proxy HTTP_PROXY, HTTPS_PROXY and NO_PROXY name; unset,
	// as in Prometheus, they go straight to the target.
	ProxyFromEnvironment bool
	// Instance is the instance label (service.instance.id); "" means Address.
	Instance string
	// RelabelConfigs are the scrape config's relabel_configs: New applies
	// them to the target's labels (and drops the target if they say so).
	RelabelConfigs []*relabel.Config
	// MetricRelabelConfigs are applied to every series before conversion;
	// the verdict is cached per series.
	MetricRelabelConfigs []*relabel.Config
}

// instance is the target's instance label.
func (t Target) instance() string {
	if t.Instance != "" {
		return t.Instance
	}
	return t.Address
}

// Options configure a Manager.
type Options struct {
	Targets []Target
	Next    pipeline.Consumer // receives one *pipeline.Batch{Signal: pipeline.Metrics} per scrape
	Logger  *slog.Logger
	// Telemetry records each target's scrapes and counts their points as
	// the receiver's; nil records nothing.
	Telemetry *telemetry.Scrape
	// SharedAttrs is where the point attribute sets and metric metadata
	// are made, for the sinks' encoders given the same to store and reuse
	// their encodings; nil shares none.
	SharedAttrs *pipeline.SharedAttrs
	// MemoryLimit is the most the scrapes may hold at once, in bytes:
	// pages being read and converted, and the series kept between scrapes
	// (budget.go). 0 is DefaultMemoryLimit, less than 0 no bound.
	MemoryLimit int64
	// DownLogEvery is how often a target that stays down is logged again
	// (status.go); 0 is every 5 minutes.
	DownLogEvery time.Duration
	// rootCAs replaces the system's roots for https targets (tests).
	rootCAs *x509.CertPool
}

const defaultBodyLimit = 64 << 20

// Manager owns the scrape loops of all targets.
type Manager struct {
	opts  Options
	loops []*loop
	// bodies holds page buffers between scrapes, shared by every loop
	// rather than one per target: only the pages being read or converted
	// hold one (see pages). A free list, not a sync.Pool: the GC empties a
	// Pool every cycle, and regrowing a page buffer from scratch costs a
	// copy per doubling.
	bodies bodyList
	// pages bounds the pages read and converted at once (pages.go).
	pages pageGate
	// budget bounds the memory the scrapes hold (budget.go).
	budget *memBudget
	// gzipReaders are the readers of gzipped pages, reset for each one
	// (a reader is about 40 KB of window and tables).
	gzipReaders pool.Pool[gzip.Reader]
	// clients are the jobs' HTTP clients (fetch.go).
	clients []*http.Client
	// firstLeft counts the loops whose first scrape is not delivered yet;
	// the last one closes firstDone (see FirstScrapesDone).
	firstLeft atomic.Int64
	firstDone chan struct{}
	// live is the context of Run's scrapes: Run's own ends no scrape
	// in flight, Abort ends them (see Run).
	live  context.Context
	abort context.CancelFunc
	// inFlight counts Run's scrapes in flight.
	inFlight atomic.Int32
	// deadline is when a scrape that started at start with timeout
	// timeout must have converted its page: start + timeout; tests end
	// conversions at will with their own.
	deadline func(start time.Time, timeout time.Duration) time.Time
}

// convertDeadline is when a scrape that started at start must have
// converted its page (see fetchAndConvert).
func (m *Manager) convertDeadline(start time.Time, timeout time.Duration) time.Time {
	if m.deadline != nil {
		return m.deadline(start, timeout)
	}
	return start.Add(timeout)
}

// startSpread is the window the targets' first scrapes are spread over.
const startSpread = 250 * time.Millisecond

// phaseGroup is how many targets of a job share one phase (see phase).
const phaseGroup = 32

type loop struct {
	t    Target
	url  string
	conv *Converter
	mu   sync.Mutex // one scrape at a time per target
	m    *Manager
	size int           // the last page's size: the next buffer is grown to it at once
	ph   time.Duration // offset of the scrapes within the interval
	// round is the loop's phase group's count of scrapes this interval.
	round *round
	// client is the job's HTTP client, req the request of every scrape
	// (fetch.go).
	client *http.Client
	req    *http.Request
	// tel records the target's scrapes (nil: not at all).
	tel *telemetry.ScrapeTarget
	// health is the target's status and the state of its log lines.
	health health
	// held is what the last scrape held of the budget at its end: its
	// page buffer and its series (before a failure gave them back).
	held int64
}

// New validates opts and returns a Manager.
func New(opts Options) (*Manager, error) {
	if opts.Next == nil {
		return nil, errors.New("scraper: Next is nil")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.DownLogEvery <= 0 {
		opts.DownLogEvery = defaultDownLogEvery
	}
	slots := max(runtime.GOMAXPROCS(0), 1)
	m := &Manager{opts: opts, pages: newPageGate(slots, pageWait), bodies: bodyList{keep: slots}, budget: newBudget(opts.MemoryLimit)}
	sets := newAttrSets(opts.SharedAttrs) // one for all targets: equal label sets are kept once (attrsets.go)
	pools := newSlabPools()               // one for all targets: a scrape's chunks go to the next (arena.go)
	metas := newMetaLines()               // one for all targets: a job's targets serve the same HELP and TYPE lines
	perJob := map[string]int{}            // targets kept so far, by job
	rounds := map[groupKey]*round{}
	jobs := map[string]int{} // targets of each job
	for _, t := range opts.Targets {
		jobs[t.JobName]++
	}
	keysOf := map[string]*seriesKeys{}
	clients := map[clientKey]*http.Client{}
	for i, t := range opts.Targets {
		if t.JobName == "" {
			return nil, fmt.Errorf("scraper: target %d: empty job name", i)
		}
		if t.Scheme == "" {
			t.Scheme = "http"
		}
		if t.MetricsPath == "" {
			t.MetricsPath = "/metrics"
		}
		if t.Interval <= 0 {
			return nil, fmt.Errorf("scraper: target %s/%s: interval must be > 0", t.JobName, t.Address)
		}
		if t.Timeout <= 0 || t.Timeout > t.Interval {
			t.Timeout = min(t.Interval, 10*time.Second)
		}
		rt, err := relabelTarget(t)
		if errors.Is(err, errTargetDropped) {
			opts.Logger.Debug("scrape target dropped by relabel_configs", "job", t.JobName, "target", t.Address)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("scraper: target %s/%s: %w", t.JobName, t.Address, err)
		}
		t = rt
		if t.JobName == "" {
			return nil, fmt.Errorf("scraper: target %d: relabel_configs left an empty job label", i)
		}
		if _, _, err := net.SplitHostPort(t.Address); err != nil {
			return nil, fmt.Errorf("scraper: target %d (%s): address %q: %w", i, t.JobName, t.Address, err)
		}
		if t.Scheme != "http" && t.Scheme != "https" {
			return nil, fmt.Errorf("scraper: target %s/%s: bad scheme %q", t.JobName, t.Address, t.Scheme)
		}
		if t.BodySizeLimit <= 0 {
			t.BodySizeLimit = defaultBodyLimit
		}
		u := url.URL{Scheme: t.Scheme, Host: t.Address, Path: t.MetricsPath, RawQuery: t.Params.Encode()}
		req, err := newRequest(u.String(), t.Timeout)
		if err != nil {
			return nil, fmt.Errorf("scraper: target %s/%s: %w", t.JobName, t.Address, err)
		}
		ck := clientKey{job: t.JobName, interval: t.Interval, proxyFromEnv: t.ProxyFromEnvironment}
		if clients[ck] == nil {
			clients[ck] = newClient(ck, opts.rootCAs)
			m.clients = append(m.clients, clients[ck])
		}
		n := perJob[t.JobName]
		perJob[t.JobName] = n + 1
		conv := newConverter(t, sets, pools, metas)
		conv.budget = m.budget
		if jobs[t.JobName] > 1 { // a job's targets mostly serve the same series bytes
			if keysOf[t.JobName] == nil {
				keysOf[t.JobName] = newSeriesKeys()
			}
			conv.keys = keysOf[t.JobName]
		}
		g := groupKey{t.JobName, n / phaseGroup}
		if rounds[g] == nil {
			rounds[g] = &round{}
		}
		rounds[g].size++
		l := &loop{t: t, url: u.String(), conv: conv, m: m,
			ph: phase(g.job, g.n, t.Interval), round: rounds[g], tel: opts.Telemetry.Target(t.JobName, t.instance()),
			client: clients[ck], req: req}
		l.health.st = TargetStatus{Job: t.JobName, Instance: t.instance(), URL: l.url}
		m.loops = append(m.loops, l)
	}
	for _, r := range rounds {
		r.left.Store(r.size)
	}
	m.firstDone = make(chan struct{})
	m.live, m.abort = context.WithCancel(context.Background())
	m.firstLeft.Store(int64(len(m.loops)))
	if len(m.loops) == 0 {
		close(m.firstDone)
	}
	return m, nil
}

// FirstScrapesDone is closed once every target's first scrape of Run has
// been delivered to Next (or given up on because Run is stopping). Those
// are the scrapes in which every series is new: the code that makes a
// series' state runs then, and seldom after.
func (m *Manager) FirstScrapesDone() <-chan struct{} { return m.firstDone }

// firstScraped counts one loop's first scrape as done.
func (m *Manager) firstScraped() {
	if m.firstLeft.Add(-1) == 0 {
		close(m.firstDone)
	}
}

// Run runs one loop per target: the first scrape right away (after a jitter
// of at most 5ms), then every Interval, each bounded by Timeout (a target's
// first conversion excepted, see fetchAndConvert). Ticks missed while a
// scrape runs or Next blocks are skipped. When ctx is done no scrape
// starts, and the scrapes in flight finish and are delivered: a stop is no
// failed scrape (no up = 0, no staleness markers), only Abort (or the end
// of Final's time) ends them sooner. Run returns when they have, with the targets'
// connections closed.
func (m *Manager) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, l := range m.loops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.run(ctx)
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		if n := m.inFlight.Load(); n > 0 {
			m.opts.Logger.Info("stopping: the scrapes in flight finish first", "scrapes", n)
		}
		<-done
	}
	m.Close()
	return nil
}

// Abort ends Run's scrapes in flight at once (a stop out of time): they
// deliver nothing, and count as no failed scrape either.
func (m *Manager) Abort() { m.abort() }

// Close closes the connections the targets' scrapes keep open between
// scrapes. A later scrape opens its own again.
func (m *Manager) Close() {
	for _, c := range m.clients {
		c.CloseIdleConnections()
	}
}

// ScrapeAll scrapes every target once more, concurrently, and delivers the
// results to Next before returning. It works after Run has returned; the
// connections it opens stay open until Close.
func (m *Manager) ScrapeAll(ctx context.Context) {
	var wg sync.WaitGroup
	for _, l := range m.loops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.scrapeAndSend(ctx)
		}()
	}
	wg.Wait()
}

// Final takes every target's final scrape at a stop, once Run's context
// is done: each target's as soon as its own scrape in flight (Run's) has
// finished, side by side with the other targets', each within its scrape
// timeout and ctx. When ctx ends, what is still in flight, Run's or a
// final scrape, is cut (as Abort cuts it: nothing recorded, no failed
// scrape); a target that holds its scrape is cut alone, and the others'
// final scrapes are delivered. Final returns when every target's is
// delivered or cut, with the targets' connections closed.
func (m *Manager) Final(ctx context.Context) {
	stop := context.AfterFunc(ctx, m.abort)
	defer stop()
	var wg sync.WaitGroup
	for _, l := range m.loops {
		wg.Go(func() { l.final(ctx) })
	}
	wg.Wait()
	// A scrape Run began after the stop (a tick taken as its context
	// ended) is no final scrape: it is cut, not waited for.
	m.abort()
	m.Close()
}

// final is the target's final scrape (Final): after its scrape in flight,
// unless ctx ended first.
func (l *loop) final(ctx context.Context) {
	if !l.waitIdle(ctx) {
		l.m.opts.Logger.Info("final scrape not taken: the target held its last scrape past the stop's time for scrapes",
			"job", l.t.JobName, "target", l.url)
		l.round.delivered()
		return
	}
	l.scrapeAndSend(ctx)
}

// waitIdle waits until no scrape of the target is in flight, or ctx ends
// (false). The scrape in flight holds l.mu; ctx ending aborts it (Final),
// so the wait is bounded by ctx.
func (l *loop) waitIdle(ctx context.Context) bool {
	l.mu.Lock()
	l.mu.Unlock() //nolint:staticcheck // an empty critical section: only the wait matters
	return ctx.Err() == nil
}

func (l *loop) run(ctx context.Context) {
	// The first scrape is within startSpread of the start (a job wants its
	// targets' state from the start, but a hundred targets scraped in the
	// same instant would hold up the health endpoint and the receivers);
	// then the loop moves to its group's phase (see phase).
	ph := l.ph
	select {
	case <-ctx.Done():
		l.m.firstScraped()
		return
	case <-time.After(ph % min(l.t.Interval, startSpread)):
	}
	// The scrapes run in the Manager's live context, not ctx: a stop
	// lets the one in flight finish (see Run).
	l.runScrape()
	l.m.firstScraped()
	select {
	case <-ctx.Done():
		return
	case <-time.After(untilPhase(time.Now(), l.t.Interval, ph)):
	}
	tick := time.NewTicker(l.t.Interval)
	defer tick.Stop()
	for {
		l.runScrape()
		// drop a tick that piled up while we were blocked: no bursts
		select {
		case <-tick.C:
		default:
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// phase is the offset within its interval of the scrapes of group g of a
// job's targets (the job's targets in config order, phaseGroup at a time):
// a hash of the job and g, so it is the same every run.
//
// Prometheus gives every target its own phase, which smooths the load of a
// server scraping thousands of targets. A sidecar scrapes a job's handful,
// and there the cost that dominates is waking up: every idle-to-busy
// transition of the process costs the Go scheduler's spinning threads and
// sysmon's short sleeps a burst of context switches, which on a VM cost
// more than converting the page (30 targets each in its own phase used
// twice the CPU of the same targets in three phases).
// So a job's targets are scraped in the same instant, which also puts their
// samples at the same timestamps; jobs stay spread, and a job of many
// targets is split into groups so that one instant's burst stays bounded.
func phase(job string, g int, interval time.Duration) time.Duration {
	if interval <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(job))
	h.Write([]byte{0})
	h.Write(strconv.AppendInt(nil, int64(g), 10))
	return time.Duration(h.Sum64() % uint64(interval))
}

// untilPhase is how long from now until the next instant whose offset
// within interval (since the Unix epoch) is ph.
func untilPhase(now time.Time, interval, ph time.Duration) time.Duration {
	if interval <= 0 {
		return 0
	}
	off := time.Duration(now.UnixNano() % int64(interval))
	d := ph - off
	if d <= 0 {
		d += interval
	}
	return d
}

// runScrape is one of Run's scrapes.
func (l *loop) runScrape() {
	l.m.inFlight.Add(1)
	defer l.m.inFlight.Add(-1)
	l.scrapeAndSend(l.m.live)
}

// scrapeAndSend scrapes and delivers the result; nothing when ctx ended
// the scrape (see scrape).
func (l *loop) scrapeAndSend(ctx context.Context) {
	rms, leases := l.scrape(ctx)
	if rms == nil {
		l.round.delivered() // counted all the same: the round goes on
		return
	}
	b := &pipeline.Batch{Signal: pipeline.Metrics, Metrics: rms, Leases: leases, Scraped: true}
	b.Items = pipeline.CountItems(b) // a metric's points at a time, once: every stage after reads it
	points := b.Items                // before Consume: the batch is then downstream's
	err := l.m.opts.Next.Consume(ctx, b)
	l.tel.Delivered(points, err)
	if err != nil {
		b.Release() // not taken: still ours
		if ctx.Err() == nil {
			l.m.opts.Logger.Warn("scrape: delivering failed", "job", l.t.JobName, "target", l.url, "error", err)
		}
	}
	if l.round.delivered() {
		pipeline.Flush(ctx, l.m.opts.Next)
	}
}

// groupKey names a phase group: a job's targets n*phaseGroup to
// (n+1)*phaseGroup-1 in config order, scraped in the same instant.
type groupKey struct {
	job string
	n   int
}

// round counts a phase group's scrapes, so that the last of each interval
// tells Next the round is over (pipeline.Flusher): the batch processor then
// sends the round's remainder while the process is awake, not at its
// timeout. A scrape that runs late or is skipped shifts which scrape tells
// it, never whether the data is sent.
type round struct {
	size int32        // the group's targets
	left atomic.Int32 // scrapes of this round not yet delivered
}

// delivered counts one scrape of the group and reports whether it was the
// round's last. Every size-th call over the group's life reports true.
func (r *round) delivered() bool {
	if r.left.Add(-1) != 0 {
		return false
	}
	r.left.Add(r.size)
	return true
}

// scrape does one scrape and returns its resources (DownAll on failure) and
// the leases of their memory. A scrape that ctx ended (Abort, or the end of
// ScrapeAll's time) is no failed scrape of the target: it returns nothing.
// A panic in the scrape fails it like any error: it is the page's, and
// one page must not take the process, or the other targets, down.
func (l *loop) scrape(ctx context.Context) ([]*metricspb.ResourceMetrics, []*pipeline.Lease) {
	l.mu.Lock()
	defer l.mu.Unlock()
	start := time.Now()
	rms, leases, err := l.fetchAndConvert(ctx, start)
	if err == nil {
		d, n := time.Since(start), l.conv.lastCounts()
		l.health.scraped(l.m.opts.Logger, l.m.opts.DownLogEvery, start, d, nil, n.samples)
		l.tel.Scraped(true, d, n.samples, n.kept, n.added)
		return rms, leases
	}
	if ctx.Err() != nil {
		l.m.opts.Logger.Info("scrape cut short by the stop: nothing recorded", "job", l.t.JobName, "target", l.url, "error", err)
		return nil, nil
	}
	var pe *panicError
	if errors.As(err, &pe) {
		l.m.opts.Logger.Debug("scrape panicked", "job", l.t.JobName, "target", l.url, "error", err, "stack", string(pe.stack))
	}
	var n scrapeCounts // what the page counted before it failed, as Prometheus reports it
	var pgErr *pageError
	keep := false
	if errors.As(err, &pgErr) {
		// A page whose conversion ran past the timeout fails the scrape
		// as any failure does (up = 0, none of its samples, the last
		// page's series marked stale), but the series it resolved are
		// kept for the next scrape of the page, which goes on from there
		// (Converter.restart): forgotten, each scrape would start from
		// nothing again and, as slow, never end. What was kept makes the
		// next scrape's output no different from a fresh converter's.
		n, keep = pgErr.n, pgErr.cut
	}
	d := time.Since(start)
	l.health.scraped(l.m.opts.Logger, l.m.opts.DownLogEvery, start, d, err, n.samples)
	l.tel.Scraped(false, d, n.samples, n.kept, n.added)
	rms, leases = l.conv.downLeased(start, d, n, keep)
	if l.held-l.conv.held > bigBody {
		// A failed scrape that held a huge page or many series (a target
		// over its limits, or the budget) leaves that much garbage, and
		// an otherwise idle process may not collect it for minutes, nor
		// give the memory back: collect and return it now. Only after
		// such a failure, never on the scrapes of a healthy target, nor
		// for the series a failure keeps.
		debug.FreeOSMemory()
	}
	return rms, leases
}

// fetchAndConvert reads the target's page and converts it. A panic in
// either is its error (a pageError's when the conversion's own recovery
// caught it, see Converter.parseSafe).
func (l *loop) fetchAndConvert(ctx context.Context, start time.Time) (rms []*metricspb.ResourceMetrics, leases []*pipeline.Lease, err error) {
	pg := pageBuf{l: l}
	defer pg.done()
	defer func() {
		if r := recover(); r != nil {
			rms, leases, err = nil, nil, recovered(r, debug.Stack())
		}
	}()
	ct, err := l.fetch(ctx, &pg)
	if err != nil {
		l.held = pg.charged
		return nil, nil, err
	}
	// The conversion ends with ctx (a stop), and is bound by the scrape's
	// timeout too, the fetch having had its share of it, so that a scrape
	// ends near its timeout whatever the page holds: what takes long is
	// series new to the converter (a steady page's lines come from the
	// line cache), and a page whose new series take past the timeout
	// fails as a timeout, keeping what it resolved for the next scrape
	// (see scrape).
	//
	// Except a scrape that begins with no series kept (a target's first,
	// or its first since a failure that forgot them): every series of it
	// is new, so it converts several times slower than the scrapes after
	// it, and on a busy machine a big page can take longer than the
	// timeout although the target answered in time. It is judged on its
	// fetch alone, as Prometheus and the collector judge every scrape
	// (their scrape_timeout bounds the request, not what is done with
	// the page): a healthy target is up from its first page, rather than
	// reported down for otelstep's own slowness until the kept series
	// add up, each retry fetching the page again. Its conversion is still
	// bounded: in work by the memory budget and sample_limit (the series
	// it may make), in time by ctx (Final's time, Abort).
	var deadline time.Time
	if l.conv.seriesKept() > 0 {
		deadline = l.m.convertDeadline(start, l.t.Timeout)
	}
	l.conv.pageHeld = pg.charged
	rms, leases, err = l.conv.convertBy(ctx, pg.bytes(), ct, start, time.Since(start), deadline)
	l.held = pg.charged + l.conv.held
	pg.ok = err == nil
	pg.done() // the page is converted: its buffer and slot are free
	return rms, leases, err
}
