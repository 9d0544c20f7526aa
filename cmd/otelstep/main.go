// Command otelstep is a single-binary replacement for the OpenTelemetry
// Collector step of a benchmark job: it scrapes the job's Prometheus
// targets, receives OTLP, stamps resource attributes and double-writes to an
// OTLP/HTTP backend and JSONL files.
//
//	otelstep [--config FILE]           run (the collector's command line; without --config, the embedded default)
//	otelstep validate --config FILE    check a config and print what would run
//	otelstep replay --endpoint URL PATH...  resend JSONL files to a backend
//	otelstep bench scrape|otlp [--peer CMD]  throughput against a peer
package main

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/otelstep/otelstep/cmd/otelstep/internal/boot"
	"github.com/otelstep/otelstep/config"
	"github.com/otelstep/otelstep/service"
)

// defaultConfig is what otelstep runs without --config.
//
//go:embed default.yaml
var defaultConfig []byte

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2 // bad flags or a config that is refused
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	cmd := "run"
	if len(args) > 0 {
		switch args[0] {
		case "validate", "run":
			cmd, args = args[0], args[1:]
		case "replay":
			boot.RestoreProcs()
			return runReplay(args[1:], stdout, stderr)
		case "bench":
			boot.RestoreProcs()
			return runBench(args[1:], stdout, stderr)
		case "help", "-h", "--help":
			usage(stderr)
			return exitOK
		}
	}
	fs := flag.NewFlagSet("otelstep "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "collector YAML `file` (as rendered for the job)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to `file` (for go tool pprof)")
	memProfile := fs.String("memprofile", "", "write a heap profile to `file` when the run ends")
	procs := fs.Int("procs", defaultProcs, "run Go code on at most `N` threads at once (GOMAXPROCS; 0: one per CPU); GOMAXPROCS, when set, is the default")
	fs.Usage = func() { usage(stderr); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "otelstep: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	if *procs < 0 {
		fmt.Fprintf(stderr, "otelstep: --procs %d: want 0 (one per CPU) or more\n", *procs)
		return exitUsage
	}
	procsSet := false
	fs.Visit(func(f *flag.Flag) { procsSet = procsSet || f.Name == "procs" })
	// Before anything is built: a change of GOMAXPROCS stops the world and
	// flushes the Ps it removes (package boot has set the default already).
	setProcs(*procs, procsSet, os.LookupEnv)
	slack, err := timerSlackFrom(os.LookupEnv)
	if err != nil {
		fmt.Fprintf(stderr, "otelstep: %v\n", err)
		return exitUsage
	}
	var cfg *config.Config
	if *cfgPath == "" {
		// No config: the embedded default, for a first run on a laptop.
		fmt.Fprintln(stderr, "otelstep: no --config given: running the embedded default (cmd/otelstep/default.yaml; JSONL under ./otel)")
		cfg, err = config.Parse("(embedded default)", defaultConfig, os.LookupEnv)
	} else {
		cfg, err = config.Load(*cfgPath, os.LookupEnv)
	}
	if err != nil {
		fmt.Fprintf(stderr, "otelstep: invalid config: %v\n", err)
		return exitUsage
	}
	if cmd == "validate" {
		cfg.Describe(stdout)
		return exitOK
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "otelstep: --cpuprofile: %v\n", err)
			return exitUsage
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(stderr, "otelstep: --cpuprofile: %v\n", err)
			return exitUsage
		}
		defer pprof.StopCPUProfile()
	}
	if *memProfile != "" {
		defer func() {
			f, err := os.Create(*memProfile)
			if err == nil {
				err = pprof.Lookup("heap").WriteTo(f, 0)
				f.Close()
			}
			if err != nil {
				fmt.Fprintf(stderr, "otelstep: --memprofile: %v\n", err)
			}
		}()
	}
	return serve(cfg, slack, stderr)
}

// defaultGCPercent is the GC target otelstep runs at unless GOGC is set.
// Its memory is the benchmark job's. The GC's CPU is the marking of the
// live heap once per GOGC% of it allocated, so it scales with the bytes
// allocated, not with the heap: at 84 targets (40,000 samples a second)
// GOGC=50 measured 131 → 107 MiB peak RSS against the Go default of 100,
// and since a scrape's points come from pooled chunks (scraper/arena.go) and
// request bodies are pooled (otlpin/bodies.go), little is allocated: 23
// bytes a sample, and marking under 5% of the CPU. GOGC=25 then measured
// 3–6 MiB less peak RSS again on the scrape mix, 41.4–41.7 MiB against
// 43.0–47.0 on three generated 13,000-sample targets, with the scrape mix's
// samples and gRPC traces' spans per CPU-second within the run-to-run
// noise of GOGC=50 (two pairs each, 2026-12-04, bench/README.md); GOGC=15
// saved a further 2 MiB and began to cost CPU. A job can still set GOGC.
const defaultGCPercent = 25

// setGCPercent sets defaultGCPercent unless GOGC is set (the runtime has
// applied that one already).
func setGCPercent(lookup func(string) (string, bool)) {
	if _, set := lookup("GOGC"); !set {
		debug.SetGCPercent(defaultGCPercent)
	}
}

// startHeapLimit bounds the process's Go memory while the GC is off for the
// start (see gcOffForStart): a start allocates 3–6 MB (84 targets) and
// stays under it; a config that makes it allocate more, or the first
// scrapes when nothing asks the health endpoint (startSettle), are
// collected at this limit rather than not at all. It is under what the
// same process uses once running (about 29 MiB at 84 targets), so it does
// not raise the peak.
const startHeapLimit = 24 << 20

// gcOffForStart turns the GC off until settled is called, unless GOGC or
// GOMEMLIMIT is set. A start allocates its tables in a few milliseconds, and
// with the GC on (the runtime's 4 MB first goal) it ran a cycle in the
// middle of them, about 3 ms of CPU on the one P; settled sets otelstep's
// GC target (setGCPercent) once running and seen to be.
func gcOffForStart(lookup func(string) (string, bool)) (settled func()) {
	_, gogc := lookup("GOGC")
	_, limit := lookup("GOMEMLIMIT")
	if gogc || limit {
		return func() { setGCPercent(lookup) }
	}
	debug.SetMemoryLimit(startHeapLimit)
	debug.SetGCPercent(-1)
	return func() {
		debug.SetGCPercent(defaultGCPercent)
		debug.SetMemoryLimit(math.MaxInt64)
	}
}

// startSettle is the longest the work of a start's end (the GC's target,
// releasing the start's pages) waits for the health endpoint's first
// answer of running: without a health check, or with none asking.
const startSettle = 250 * time.Millisecond

// defaultProcs is how many threads run otelstep's Go code at once unless
// --procs or GOMAXPROCS says otherwise. It runs beside a benchmark on the
// benchmark's cores, and its load is small and bursty: many short scrapes
// and requests handed between goroutines. With more than one P the runtime
// wakes an idle thread for every goroutine made runnable and lets it spin
// for work, and each such wake-up is a futex and a context switch, which on
// the job's VMs cost more than the work handed over; and the GC runs a
// quarter of GOMAXPROCS dedicated mark workers, which on a 64-core node is
// 16 threads taken from the benchmark. One P measured 10–16% more samples
// and 2–27% more spans and points (log records the same) per CPU-second
// on this 2-core machine, and about a third less peak RSS under OTLP load
// (bench/README.md); its ceiling, a million samples or 180,000–230,000
// spans a second, is well above a job's load.
const defaultProcs = boot.Procs

// setProcs sets GOMAXPROCS to n (0: the runtime's own choice, one per CPU
// the process may use) if --procs was given or GOMAXPROCS is not set (the
// runtime has applied that one already).
func setProcs(n int, given bool, lookup func(string) (string, bool)) {
	if _, set := lookup("GOMAXPROCS"); set && !given {
		return
	}
	if n == 0 {
		runtime.SetDefaultGOMAXPROCS()
		return
	}
	runtime.GOMAXPROCS(n)
}

// serve runs the collector for cfg until a signal stops it. Once it is
// running, every thread's timer slack becomes slack unless that is 0
// (timerslack.go).
func serve(cfg *config.Config, slack time.Duration, stderr io.Writer) int {
	h := slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.Service.LogLevel})
	log := slog.New(service.NewRedactingHandler(h, cfg.Secrets))
	settled := gcOffForStart(os.LookupEnv)
	svc, err := service.New(cfg, log)
	if err != nil {
		log.Error("cannot build pipelines", "err", err)
		return exitFailure
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		s := <-sigs
		log.Info("signal received, stopping: a second signal exits at once", "signal", s.String())
		cancel()
		s = <-sigs
		log.Warn("second signal, exiting now", "signal", s.String())
		os.Exit(exitFailure)
	}()
	ready := make(chan struct{})
	go func() {
		// What startup alone touched of the binary can go once running;
		// what the first scrapes alone ran (every series new), once they
		// are done (startpages.go).
		release := func(after string) {
			if kb, err := releaseStartPages(); err != nil {
				log.Warn("cannot release the binary's startup pages", "after", after, "err", err)
			} else {
				log.Debug("released the binary's startup pages", "after", after, "resident_kB", kb)
			}
		}
		select {
		case <-ready:
		case <-ctx.Done():
			return
		}
		// Not before: a start allocates about 3 MB, mostly tables that
		// last, and at GOGC=25 of a heap never yet marked the GC ran in
		// the middle of it, once or twice, and every P's cached spans
		// were swept after it (20% of a start's CPU). And not before the
		// health endpoint has said so: on the one P, the GC's first cycle
		// and releasing the pages (reading /proc/self/smaps, 3–5 ms) ran
		// before its answer, which a supervisor waits for.
		t := time.NewTimer(startSettle)
		select {
		case <-svc.HealthAnswered():
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
		t.Stop()
		settled()
		if slack > 0 {
			setSlack(log, slack)
		}
		release("running")
		if svc.WaitFirstScrapes(ctx) {
			release("first scrapes")
		}
	}()
	if err := svc.Run(ctx, ready); err != nil {
		log.Error("otelstep stopped with errors", "err", err)
		return exitFailure
	}
	log.Info("otelstep stopped")
	return exitOK
}

// setSlack sets every thread's timer slack and logs what came of it.
func setSlack(log *slog.Logger, slack time.Duration) {
	was, err := setTimerSlack(slack)
	switch {
	case err == nil:
		log.Debug("timer slack set", "slack", slack, "was", was)
	case errors.Is(err, errSlackChosen):
		log.Debug("timer slack left as started", "slack", was)
	case errors.Is(err, errors.ErrUnsupported):
		// A build with cgo: Go cannot reach the threads C may have
		// started. The release build has none (README.md).
		log.Info("timer slack left as started: a build with cgo cannot set it on every thread, a static one (CGO_ENABLED=0) can, and uses less CPU for it (cmd/otelstep/timerslack.go)", "err", err)
	default:
		log.Warn("cannot set the timer slack", "slack", slack, "err", err)
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage:
  otelstep [--config FILE] [--procs N]
                                     run the collector config FILE (without it: the embedded default)
                                     on N threads at once (default 1, 0: one per CPU)
  otelstep validate --config FILE    check FILE and print what would run (secrets redacted)
  otelstep replay --endpoint URL [--token-env OTEL_TOKEN] [--header K=V]... PATH...
                                     resend a job's JSONL files to a backend (see replay -h)
  otelstep bench scrape|otlp [--peer CMD] [--json]
                                     measure scrape or OTLP ingest throughput (see bench -h)
`)
}
