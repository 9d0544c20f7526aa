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
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

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
	exitUsage   = 2 // bad flags, a config that is refused, or a setup that fails (a port in use, a path that cannot be written)
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
			return runReplay(args[1:], stdout, stderr)
		case "bench":
			return runBench(args[1:], stdout, stderr)
		case "report":
			return runReport(args[1:], stdout, stderr)
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
	// Before anything is built: the collector's process-wide settings,
	// all in tuning.go.
	slackNote := tune(*procs, procsSet, slack, os.LookupEnv)
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
	return serve(cfg, slackNote, stderr)
}

// serve runs the collector for cfg until a signal stops it. slackNote is
// what tune made of the timer slack.
func serve(cfg *config.Config, slackNote string, stderr io.Writer) int {
	h := slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.Service.LogLevel})
	log := slog.New(service.NewRedactingHandler(h, cfg.Secrets))
	procs, gogc := settings()
	log.Info("otelstep starting", "GOMAXPROCS", procs, "GOGC", gogc, "timer_slack", slackNote)
	svc, err := service.New(cfg, log)
	if err != nil {
		// A setup error, like a refused config: a JSONL path that cannot
		// be written, say.
		log.Error("cannot build pipelines", "err", err)
		return exitUsage
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ignoreFileSizeSignal()
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
	if err := svc.Run(ctx, nil); err != nil {
		if errors.Is(err, service.ErrStart) {
			// A port in use, say: a setup error like a refused config.
			log.Error("otelstep could not start", "err", err)
			return exitUsage
		}
		took, batches, items := svc.Stopped()
		log.Error("otelstep stopped with errors", "err", err, "stop", took.Round(time.Millisecond).String(),
			"backend_unsent_batches", batches, "backend_unsent_items", items)
		return exitFailure
	}
	// What the backend did not get by the end of its time is in the JSONL
	// files: the stop did its work.
	took, batches, items := svc.Stopped()
	log.Info("otelstep stopped", "stop", took.Round(time.Millisecond).String(),
		"backend_unsent_batches", batches, "backend_unsent_items", items)
	return exitOK
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
