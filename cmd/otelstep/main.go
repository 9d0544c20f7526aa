// Command otelstep is a single-binary replacement for the OpenTelemetry
// Collector step of a benchmark job: it scrapes the job's Prometheus
// targets, receives OTLP, stamps resource attributes and double-writes to an
// OTLP/HTTP backend and JSONL files.
//
//	otelstep [run] [--config FILE]     run (the collector's command line; without --config, the embedded default)
//	otelstep validate [--config] FILE  check a config, every error at once, and print what would run
//	otelstep version                   the module version and source revision (also --version)
//	otelstep replay --endpoint URL PATH...  resend JSONL files to a backend
//	otelstep bench scrape|otlp [--peer CMD] [--rounds N]  throughput against a peer
//	otelstep report DIR...             a job's metrics as a page or a summary
//	otelstep help                      all of the above, with every flag
package main

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
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

// command is one subcommand: run gets the arguments after its name.
type command struct {
	name    string
	summary string // one line, for the usage
	run     func(args []string, stdout, stderr io.Writer) int
}

// commands are otelstep's subcommands, in the order the usage lists them;
// without one, otelstep runs the collector ("run").
var commands = []command{
	{"run", "run the collector (the default: `otelstep --config FILE` is `otelstep run --config FILE`)", runCollector},
	{"validate", "check a config, every error at once, and print what would run", runValidate},
	{"replay", "resend a job's JSONL files to a backend", runReplay},
	{"bench", "measure scrape or OTLP ingest throughput", runBench},
	{"report", "a job's metrics as a page or a summary", runReport},
	{"version", "print the version and the source revision", runVersion},
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "help", "-h", "-help", "--help":
			help(stdout)
			return exitOK
		case "--version", "-version":
			return runVersion(nil, stdout, stderr)
		}
		for _, c := range commands {
			if args[0] == c.name {
				return c.run(args[1:], stdout, stderr)
			}
		}
	}
	return runCollector(args, stdout, stderr)
}

// parseFlags parses args into fs, whose usage is usage and its flags: on
// -h or --help that goes to stdout (done, exit 0), on a bad flag the error
// and the usage to stderr (done, exit 2).
func parseFlags(fs *flag.FlagSet, usage string, args []string, stdout, stderr io.Writer) (code int, done bool) {
	fs.SetOutput(stderr)
	var text strings.Builder
	fs.Usage = func() {
		text.Reset()
		text.WriteString(usage)
		fs.SetOutput(&text)
		fs.PrintDefaults()
		fs.SetOutput(stderr)
	}
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, text.String())
		return exitOK, true
	case err != nil:
		fmt.Fprint(stderr, text.String())
		return exitUsage, true
	}
	return exitOK, false
}

// help prints the usage of otelstep and every subcommand's flags.
func help(w io.Writer) {
	fmt.Fprint(w, usageText)
	for _, c := range commands {
		if c.name == "version" {
			continue // no flags
		}
		fmt.Fprintf(w, "\n==== otelstep %s: %s\n", c.name, c.summary)
		c.run([]string{"-h"}, w, io.Discard)
	}
}

// collectorFlags are the flags of run and validate.
type collectorFlags struct {
	config, cpuProfile, memProfile string
	procs                          int
}

func (f *collectorFlags) define(fs *flag.FlagSet, validate bool) {
	fs.StringVar(&f.config, "config", "", "collector YAML `file` (as rendered for the job)")
	if validate {
		return
	}
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the run to `file` (for go tool pprof)")
	fs.StringVar(&f.memProfile, "memprofile", "", "write a heap profile to `file` when the run ends")
	fs.IntVar(&f.procs, "procs", defaultProcs, "run Go code on at most `N` threads at once (GOMAXPROCS; 0: one per CPU); GOMAXPROCS, when set, is the default")
}

// loadConfig loads path, or the embedded default when path is "".
func loadConfig(path string, stderr io.Writer) (*config.Config, error) {
	if path == "" {
		// No config: the embedded default, for a first run on a laptop.
		fmt.Fprintln(stderr, "otelstep: no --config given: running the embedded default (cmd/otelstep/default.yaml; JSONL under ./otel)")
		return config.Parse("(embedded default)", defaultConfig, os.LookupEnv)
	}
	return config.Load(path, os.LookupEnv)
}

// printConfigErrors prints a refused config's errors, one a line.
func printConfigErrors(stderr io.Writer, err error) {
	errs := config.Errors(err)
	if len(errs) > 1 {
		fmt.Fprintf(stderr, "otelstep: invalid config: %d errors:\n", len(errs))
		for _, e := range errs {
			fmt.Fprintf(stderr, "%v\n", e)
		}
		return
	}
	fmt.Fprintf(stderr, "otelstep: invalid config: %v\n", err)
}

// runValidate is `otelstep validate [--config] FILE`.
func runValidate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("otelstep validate", flag.ContinueOnError)
	var f collectorFlags
	f.define(fs, true)
	if code, done := parseFlags(fs, validateUsage, args, stdout, stderr); done {
		return code
	}
	switch {
	case fs.NArg() == 1 && f.config == "":
		f.config = fs.Arg(0)
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "otelstep validate: unexpected argument %q (one FILE, or --config FILE)\n", fs.Arg(fs.NArg()-1))
		return exitUsage
	}
	// The environment the run would read, then the file: every error.
	failed := false
	if _, err := timerSlackFrom(os.LookupEnv); err != nil {
		fmt.Fprintf(stderr, "otelstep: %v\n", err)
		failed = true
	}
	cfg, err := loadConfig(f.config, stderr)
	if err != nil {
		printConfigErrors(stderr, err)
		return exitUsage
	}
	for _, p := range config.Check(cfg) {
		fmt.Fprintf(stderr, "%s\n", p)
		failed = failed || !p.Warning
	}
	if failed {
		return exitUsage
	}
	cfg.Describe(stdout)
	return exitOK
}

// runCollector is `otelstep [run] [--config FILE]`.
func runCollector(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("otelstep run", flag.ContinueOnError)
	var f collectorFlags
	f.define(fs, false)
	if code, done := parseFlags(fs, runUsage, args, stdout, stderr); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "otelstep: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	if f.procs < 0 {
		fmt.Fprintf(stderr, "otelstep: --procs %d: want 0 (one per CPU) or more\n", f.procs)
		return exitUsage
	}
	procsSet := false
	fs.Visit(func(fl *flag.Flag) { procsSet = procsSet || fl.Name == "procs" })
	slack, err := timerSlackFrom(os.LookupEnv)
	if err != nil {
		fmt.Fprintf(stderr, "otelstep: %v\n", err)
		return exitUsage
	}
	cfg, err := loadConfig(f.config, stderr)
	if err != nil {
		printConfigErrors(stderr, err)
		return exitUsage
	}
	// Before anything is built: the collector's process-wide settings,
	// all in tuning.go.
	slackNote := tune(f.procs, procsSet, slack, os.LookupEnv)
	if f.cpuProfile != "" {
		pf, err := os.Create(f.cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "otelstep: --cpuprofile: %v\n", err)
			return exitUsage
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			fmt.Fprintf(stderr, "otelstep: --cpuprofile: %v\n", err)
			return exitUsage
		}
		defer pprof.StopCPUProfile()
	}
	if f.memProfile != "" {
		defer func() {
			pf, err := os.Create(f.memProfile)
			if err == nil {
				err = pprof.Lookup("heap").WriteTo(pf, 0)
				pf.Close()
			}
			if err != nil {
				fmt.Fprintf(stderr, "otelstep: --memprofile: %v\n", err)
			}
		}()
	}
	return serve(cfg, slackNote, stdout, stderr)
}

// serve runs the collector for cfg until a signal stops it. slackNote is
// what tune made of the timer slack.
func serve(cfg *config.Config, slackNote string, stdout, stderr io.Writer) int {
	log, closeLog, err := newLogger(cfg, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "otelstep: %v\n", err)
		return exitUsage
	}
	defer closeLog()
	procs, gogc := settings()
	log.Info("otelstep starting", append(startAttrs(cfg), "GOMAXPROCS", procs, "GOGC", gogc, "GOMEMLIMIT", memoryLimit(), "timer_slack", slackNote)...)
	for _, w := range cfg.Warnings {
		log.Warn(w.Err.Msg, "config", w.Err.File, "line", w.Err.Line, "path", w.Err.Path)
	}
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
		took, _, _ := svc.Stopped()
		log.Error("otelstep stopped with errors", append([]any{"err", err, "stop", took.Round(time.Millisecond).String()},
			svc.Delivery()...)...)
		return exitFailure
	}
	// What the backend did not get by the end of its time is in the JSONL
	// files: the stop did its work.
	took, _, _ := svc.Stopped()
	log.Info("otelstep stopped", append([]any{"stop", took.Round(time.Millisecond).String()}, svc.Delivery()...)...)
	return exitOK
}

const usageText = `usage:
  otelstep [run] [--config FILE] [--procs N]
                                     run the collector config FILE (without it: the embedded default)
                                     on N threads at once (default 1, 0: one per CPU)
  otelstep validate [--config] FILE  check FILE, every error at once, and print what would run (secrets redacted)
  otelstep replay --endpoint URL [--token-env OTEL_TOKEN] [--header K=V]... PATH...
                                     resend a job's JSONL files to a backend
  otelstep bench scrape|otlp [--peer CMD] [--rounds N] [--json]
                                     measure scrape or OTLP ingest throughput
  otelstep report [--out FILE.html] [--summary json|markdown] DIR...
                                     a job's metrics as a page or a summary
  otelstep version, otelstep --version
                                     print the version and the source revision
  otelstep help, -h, --help          this, with every subcommand's flags (each has its own -h)

Exit status: 0 done, 1 failed while running, 2 a usage or config error or a setup that failed.
`

const runUsage = `usage: otelstep [run] [--config FILE] [--procs N] [--cpuprofile FILE] [--memprofile FILE]

Runs the collector config FILE until SIGTERM or SIGINT (a second one exits
at once). Without --config, the embedded default: JSONL under ./otel.

`

const validateUsage = `usage: otelstep validate [--config] FILE

Checks FILE as the run would, reporting every error it holds at once
(FILE:LINE: path: reason, a line each, then exit 2), and what the run
would meet: a JSONL folder that cannot be written (an error), a variable
stamped on every resource that is set but empty, a port already in use
(warnings). Then prints what would run, secrets redacted.

`
