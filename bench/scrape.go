package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/otelstep/otelstep/otlpwire"
	"github.com/otelstep/otelstep/pipeline"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

// Impl is a collector to measure: otelstep (argv is its own binary) or a
// peer (argv is the command given with --peer).
type Impl struct {
	Name string
	Argv []string
	Peer bool
	// Kind is how a peer is configured; "" is KindCollector.
	Kind PeerKind
	// V2 runs it on the orchestrator's v2 config (Scenario.V2).
	V2 bool
}

// ScrapeOptions is one `otelstep bench scrape` run.
type ScrapeOptions struct {
	Pages    []Page
	Copies   int  // targets per page
	Distinct bool // each copy's series carry a label of their own (Distinct)
	// Frozen serves the same page at every scrape instead of new values
	// (StartTargets).
	Frozen   bool
	Interval time.Duration
	Warmup   time.Duration // before the measured window: caches fill, first scrapes settle
	Duration time.Duration // the measured window, unless Count is set
	// Count, if above 0, ends the window once the targets have served this
	// many samples, however long that takes: a figure of a set amount of
	// work rather than of a set time (the tests, on a busy machine).
	Count int64
	Impls []Impl
	// Rounds, if above 1, measures every Impl once a round, for this many
	// rounds, alternating the order (runOrder), and reports each figure's
	// median over the rounds with its range (ScrapeReport).
	Rounds int
	// Log receives one line per phase; nil is quiet.
	Log func(format string, a ...any)
}

// ScrapeResult is one collector's row.
type ScrapeResult struct {
	Name                string  `json:"name"`
	StartToHealthyMS    float64 `json:"start_to_healthy_ms"`
	WindowSeconds       float64 `json:"window_seconds"`
	Samples             int64   `json:"samples"`
	SamplesPerSecond    float64 `json:"samples_per_second"`
	CPUSeconds          float64 `json:"cpu_seconds"`
	SamplesPerCPUSecond float64 `json:"samples_per_cpu_second"`
	// AllocsPerSample and AllocBytesPerSample come from the process's own
	// counters: otelstep's /metrics; absent for a peer.
	AllocsPerSample       *float64 `json:"allocs_per_sample,omitempty"`
	AllocBytesPerSample   *float64 `json:"alloc_bytes_per_sample,omitempty"`
	PeakRSSBytes          int64    `json:"peak_rss_bytes"`
	EndRSSBytes           int64    `json:"end_rss_bytes"`       // at the end of the window: steady state, not the start
	PeakAnonRSSBytes      int64    `json:"peak_anon_rss_bytes"` // RssAnon sampled every 20ms: without the binary's file pages
	JSONLBytesPerSample   float64  `json:"jsonl_bytes_per_sample"`
	BackendBytesPerSample float64  `json:"backend_bytes_per_sample"`
	// BackendProtocol is what the backend received: "otlp", or for a
	// vmagent "remote write" and its encoding (snappy or zstd).
	BackendProtocol  string  `json:"backend_protocol"`
	ScrapeP50Seconds float64 `json:"scrape_duration_p50_seconds"`
	ScrapeP99Seconds float64 `json:"scrape_duration_p99_seconds"`
	// JSONLPoints and BackendPoints count the whole run, after the process
	// stopped; Dropped is how many more the file holds than the backend got.
	// For a vmagent, BackendPoints are the pages' samples the backend got by
	// remote write (no JSONL) and Dropped is how many fewer than the
	// targets served it while it ran. Over several rounds, these four are
	// the rounds' totals.
	JSONLPoints   int64 `json:"jsonl_points" rounds:"total"`
	BackendPoints int64 `json:"backend_points" rounds:"total"`
	Dropped       int64 `json:"dropped_points" rounds:"total"`
	BadRequests   int64 `json:"backend_bad_requests" rounds:"total"`
}

// ScrapeReport is the whole run.
type ScrapeReport struct {
	Pages          []string `json:"pages"`
	Targets        int      `json:"targets"`
	SamplesPerPass int      `json:"samples_per_pass"` // one scrape of every target
	// Frozen: the targets served the same values at every scrape.
	Frozen      bool    `json:"frozen_values"`
	IntervalSec float64 `json:"interval_seconds"`
	// The results and, against each peer, Ratios: samples per CPU-second
	// (otelstep/peer, higher is better) and peak RSS (otelstep/peer, lower
	// is better).
	Summary[ScrapeResult, Ratio]
	// TextparseSamplesPerSecond is the ceiling: model/textparse alone over
	// the same pages, samples per CPU-second of one thread in this process,
	// the faster of a reading before the runs and one after.
	TextparseSamplesPerSecond float64 `json:"textparse_samples_per_second"`
	// FractionOfTextparse is otelstep's samples per CPU-second over it.
	FractionOfTextparse float64 `json:"otelstep_fraction_of_textparse"`
}

// Ratio is otelstep against one peer.
type Ratio struct {
	Peer                string  `json:"peer"`
	SamplesPerCPUSecond float64 `json:"samples_per_cpu_second"`
	PeakRSS             float64 `json:"peak_rss"`
	// BackendBytesPerSample is otelstep's compressed bytes per sample at
	// the backend over the peer's.
	BackendBytesPerSample float64 `json:"backend_bytes_per_sample"`
	// OverRounds, with more than one round, is each ratio above (by its
	// JSON name) over the rounds: the figures above are the medians.
	OverRounds map[string]Spread `json:"over_rounds,omitempty"`
}

// RunScrape measures each Impl in turn on the same targets, in as many
// rounds as asked.
func RunScrape(ctx context.Context, o ScrapeOptions) (*ScrapeReport, error) {
	if o.Copies < 1 {
		o.Copies = 1
	}
	logf := o.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	rep := &ScrapeReport{IntervalSec: o.Interval.Seconds(), Frozen: o.Frozen}
	for _, p := range o.Pages {
		rep.Pages = append(rep.Pages, p.Name)
		rep.SamplesPerPass += p.Samples * o.Copies
	}
	rep.Targets = len(o.Pages) * o.Copies
	logf("ceiling: model/textparse alone on the pages")
	rep.TextparseSamplesPerSecond = TextparseRate(o.Pages, 500*time.Millisecond)

	tg, err := StartTargets(o.Pages, o.Copies, o.Distinct, o.Frozen)
	if err != nil {
		return nil, err
	}
	defer tg.Close()
	rounds, err := runRounds(ctx, o.Impls, o.Rounds, func(ctx context.Context, round int, im Impl) (ScrapeResult, error) {
		logf("%s%s: %d targets, %d samples every %s; warm-up %s, then %s measured", roundOf(round, o.Rounds), im.Name, rep.Targets, rep.SamplesPerPass, o.Interval, o.Warmup, window(o.Duration, o.Count, "samples"))
		r, err := scrapeOne(ctx, o, im, tg)
		if err != nil {
			return ScrapeResult{}, err
		}
		return *r, nil
	}, scrapeRatios)
	if err != nil {
		return nil, err
	}
	rep.Summary = summarize(rounds)
	// Measured again after the runs, the faster of the two standing: the
	// host's speed per CPU-second drifts within minutes, and the slower
	// reading would flatter the fraction.
	rep.TextparseSamplesPerSecond = max(rep.TextparseSamplesPerSecond, TextparseRate(o.Pages, 500*time.Millisecond))
	if len(rep.Results) > 0 && rep.TextparseSamplesPerSecond > 0 {
		rep.FractionOfTextparse = rep.Results[0].SamplesPerCPUSecond / rep.TextparseSamplesPerSecond
	}
	return rep, nil
}

// scrapeRatios compares otelstep (the first) with each of the others.
func scrapeRatios(results []ScrapeResult) []Ratio {
	var out []Ratio
	for _, r := range results[1:] {
		out = append(out, Ratio{Peer: r.Name,
			SamplesPerCPUSecond:   safeDiv(results[0].SamplesPerCPUSecond, r.SamplesPerCPUSecond),
			PeakRSS:               safeDiv(float64(results[0].PeakRSSBytes), float64(r.PeakRSSBytes)),
			BackendBytesPerSample: safeDiv(results[0].BackendBytesPerSample, r.BackendBytesPerSample)})
	}
	return out
}

// window describes the measured window for the log.
func window(d time.Duration, count int64, items string) string {
	if count > 0 {
		return fmt.Sprintf("%d %s", count, items)
	}
	return d.String()
}

// sleep waits d, or until ctx ends (then returning its error).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waitCount waits until done() reaches n, looking every 10 ms, or ctx
// ends, or p exits.
func waitCount(ctx context.Context, p *Proc, done func() int64, n int64) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for done() < n {
		if p.Gone() {
			return fmt.Errorf("%s exited with %d of %d counted:\n%s", p.Name, done(), n, p.Log())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

func safeDiv(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func scrapeOne(ctx context.Context, o ScrapeOptions, im Impl, tg *Targets) (*ScrapeResult, error) {
	_, served0 := tg.Served()
	vm := im.Kind == KindVMAgent
	u, err := startUnderTest(ctx, im, o.Interval, tg.Addrs())
	if err != nil {
		return nil, err
	}
	defer u.close()
	be, dir, sc, p := u.be, u.dir, u.sc, u.p
	if err := sleep(ctx, o.Warmup); err != nil {
		return nil, err
	}
	metricsURL := "http://" + sc.Health + "/metrics"
	type mark struct {
		at              time.Time
		cpu             float64
		samples         int64
		mallocs, allocB float64
		allocOK         bool
		jsonl, wire     int64
	}
	take := func() (mark, error) {
		m := mark{at: time.Now()}
		var err error
		if m.cpu, err = p.CPU(); err != nil {
			return m, err
		}
		_, m.samples = tg.Served()
		if !im.Peer {
			var ok1, ok2 bool
			m.mallocs, ok1 = scrapeCounter(metricsURL, "otelstep_go_mallocs_total")
			m.allocB, ok2 = scrapeCounter(metricsURL, "otelcol_process_runtime_total_alloc_bytes_total")
			m.allocOK = ok1 && ok2
		}
		m.jsonl, m.wire = filesSize(dir), be.Totals(pipeline.Metrics).Wire
		if vm {
			rw, _ := be.RemoteWrite()
			m.wire = rw.Wire
		}
		return m, nil
	}
	m0, err := take()
	if err != nil {
		return nil, err
	}
	if o.Count > 0 {
		err = waitCount(ctx, p, func() int64 { _, n := tg.Served(); return n - m0.samples }, o.Count)
	} else {
		err = sleep(ctx, o.Duration)
	}
	if err != nil {
		return nil, err
	}
	m1, err := take()
	if err != nil {
		return nil, err
	}
	rss, err := p.PeakRSS()
	if err != nil {
		return nil, err
	}
	endRSS, err := p.RSS()
	if err != nil {
		return nil, err
	}
	if err := p.Stop(30 * time.Second); err != nil {
		return nil, err
	}
	r := &ScrapeResult{Name: im.Name, StartToHealthyMS: float64(p.Healthy.Microseconds()) / 1000, PeakRSSBytes: rss, EndRSSBytes: endRSS,
		PeakAnonRSSBytes: p.PeakAnonRSS()}
	r.WindowSeconds = m1.at.Sub(m0.at).Seconds()
	r.Samples = m1.samples - m0.samples
	r.CPUSeconds = m1.cpu - m0.cpu
	r.SamplesPerSecond = float64(r.Samples) / r.WindowSeconds
	r.SamplesPerCPUSecond = safeDiv(float64(r.Samples), r.CPUSeconds)
	if m0.allocOK && m1.allocOK && r.Samples > 0 {
		a := (m1.mallocs - m0.mallocs) / float64(r.Samples)
		bb := (m1.allocB - m0.allocB) / float64(r.Samples)
		r.AllocsPerSample, r.AllocBytesPerSample = &a, &bb
	}
	if r.Samples > 0 {
		r.JSONLBytesPerSample = float64(m1.jsonl-m0.jsonl) / float64(r.Samples)
		r.BackendBytesPerSample = float64(m1.wire-m0.wire) / float64(r.Samples)
	}
	r.ScrapeP50Seconds, r.ScrapeP99Seconds, _ = be.ScrapeDurations(m0.at, m1.at)
	r.BadRequests = be.Bad.Load()
	if vm {
		rw, enc := be.RemoteWrite()
		_, served1 := tg.Served()
		r.BackendProtocol = "remote write " + enc
		r.BackendPoints = rw.Items
		r.Dropped = max(0, served1-served0-rw.Items)
		return r, nil
	}
	r.BackendProtocol = "otlp"
	r.BackendPoints = be.Totals(pipeline.Metrics).Items
	if r.JSONLPoints, err = jsonlPoints(filepath.Join(dir, "metrics.jsonl")); err != nil {
		return nil, err
	}
	r.Dropped = max(0, r.JSONLPoints-r.BackendPoints)
	return r, nil
}

// underTest is one collector running on a scenario: its backend, its
// folder (config and JSONL files) and its process.
type underTest struct {
	be  *Backend
	dir string
	sc  Scenario
	p   *Proc
}

// startUnderTest starts a discard backend, writes the scenario's config
// (jobs may be empty: OTLP only) in a new folder and starts im on it.
func startUnderTest(ctx context.Context, im Impl, interval time.Duration, jobs map[string][]string) (*underTest, error) {
	u := &underTest{}
	var err error
	if u.be, err = StartBackend(); err != nil {
		return nil, err
	}
	if u.dir, err = os.MkdirTemp("", "otelstep-bench-"); err != nil {
		u.close()
		return nil, err
	}
	var args []string
	if u.sc, err = newScenario(interval, jobs, u.be.URL(), u.dir, im); err == nil {
		if im.Kind == KindVMAgent {
			args, err = u.sc.VMAgentArgs()
		} else {
			cfg := filepath.Join(u.dir, "collector.yaml")
			args, err = []string{"--config", cfg}, u.sc.WriteConfig(cfg)
		}
	}
	if err == nil {
		argv := append(append([]string{}, im.Argv...), args...)
		u.p, err = StartProc(ctx, im.Name, argv, u.sc.Health, []string{"OTEL_TOKEN=" + Token, "SLURM_JOB_ID=12345"})
	}
	if err != nil {
		u.close()
		return nil, err
	}
	return u, nil
}

// close kills the process if it still runs and removes what it wrote.
func (u *underTest) close() {
	if u.p != nil {
		u.p.Kill()
	}
	if u.be != nil {
		u.be.Close()
	}
	if u.dir != "" {
		os.RemoveAll(u.dir)
	}
}

func newScenario(interval time.Duration, addrs map[string][]string, backend, dir string, im Impl) (Scenario, error) {
	s := Scenario{Interval: interval, Jobs: addrs, Backend: backend, Dir: dir, Peer: im.Peer, V2: im.V2}
	ports, err := new(Ports).Take(3)
	if err != nil {
		return s, err
	}
	s.Health, s.GRPC, s.HTTP = ports[0], ports[1], ports[2]
	return s, nil
}

// jsonlPoints counts the data points in a metrics JSONL file.
func jsonlPoints(path string) (int64, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var n int64
	for lineNo := 1; ; lineNo++ {
		line, err := r.ReadBytes('\n')
		if len(line) > 1 {
			req, derr := otlpwire.DecodeMetrics(line)
			if derr != nil {
				return n, fmt.Errorf("%s:%d: %w", path, lineNo, derr)
			}
			for _, rm := range req.ResourceMetrics {
				n += int64(pipeline.ResourceMetricsPoints(rm))
			}
		}
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// TextparseRate is the ceiling: samples per CPU-second model/textparse
// alone parses on one core, over one copy of each page (each parsed for
// about per of that core), labels built as a scraper must. Its time is the
// CPU time of the thread it runs on, as the collectors' is their CPU
// seconds: wall time would count the host's steal and the tool's other
// goroutines against textparse alone. (Wall time where the thread's CPU
// time cannot be read.)
func TextparseRate(pages []Page, per time.Duration) float64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	now := threadCPU
	if _, err := threadCPU(); err != nil {
		now = func() (time.Duration, error) { return time.Duration(time.Now().UnixNano()), nil }
	}
	elapsed := func(since time.Duration) time.Duration { t, _ := now(); return t - since }
	var samples int
	var took time.Duration
	for _, p := range pages {
		st := labels.NewSymbolTable()
		var lb labels.Labels
		passes := 0
		start, _ := now()
		for elapsed(start) < per || passes == 0 {
			tp, err := textparse.New(p.Body, textContentType, st, textparse.ParserOptions{})
			if err != nil {
				return 0
			}
			for {
				e, err := tp.Next()
				if err != nil {
					break
				}
				if e == textparse.EntrySeries {
					tp.Labels(&lb)
				}
			}
			passes++
		}
		samples += p.Samples
		took += elapsed(start) / time.Duration(passes)
	}
	if took == 0 {
		return 0
	}
	return float64(samples) / took.Seconds()
}
