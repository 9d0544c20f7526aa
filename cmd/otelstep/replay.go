package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/otelstep/otelstep/internal/shellquote"
	"github.com/otelstep/otelstep/pipeline"
	"github.com/otelstep/otelstep/redact"
	"github.com/otelstep/otelstep/replay"
)

// headerFlags collects repeated --header K=V.
type headerFlags map[string]string

func (h headerFlags) String() string { return fmt.Sprintf("%d headers", len(h)) } // values are secrets

func (h headerFlags) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	k = strings.TrimSpace(k)
	if !ok || k == "" {
		return errors.New("want K=V")
	}
	h[k] = v
	return nil
}

// runReplay is `otelstep replay`: see replayUsage.
func runReplay(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("otelstep replay", flag.ContinueOnError)
	var o replay.Options
	headers := headerFlags{}
	fs.StringVar(&o.Endpoint, "endpoint", "", "backend base `URL`: lines go to URL/v1/{metrics,traces,logs}")
	tokenEnv := fs.String("token-env", "OTEL_TOKEN", "environment `variable` holding the ingest token")
	fs.Var(headers, "header", "`K=V` header added to every request (repeatable)")
	fs.StringVar(&o.StateDir, "state", "", "`folder` for the checkpoints (default: beside each file)")
	fs.BoolVar(&o.FromStart, "from-start", false, "ignore the checkpoints: send everything again")
	fs.BoolVar(&o.AcceptSkipped, "accept-skipped", false, "accept the lines earlier runs reported and skipped: they stay unsent but no longer fail this run or later ones")
	strict := fs.Bool("strict", false, "exit 1 also when a file ends in a line with no newline (being written, or cut short by a killed job; it is kept for a later run either way)")
	fs.BoolVar(&o.DryRun, "dry-run", false, "decode and count everything, send nothing")
	sigs := fs.String("signal", "", "replay only `metrics|traces|logs` (comma-separated)")
	fs.Float64Var(&o.Rate, "rate", 0, "at most `N` requests per second (0: no cap)")
	fs.IntVar(&o.Concurrency, "concurrency", 4, "requests in flight")
	batch := fs.Int("batch-bytes", 4<<20, "JSON bytes of lines grouped into one request (a longer line is sent in requests of about this much)")
	fs.IntVar(&o.MaxLineBytes, "max-line-bytes", replay.DefaultMaxLineBytes, "skip, reporting it, a line longer than this many `bytes` (it is held in memory whole)")
	fs.DurationVar(&o.Timeout, "timeout", 30*time.Second, "per request")
	fs.DurationVar(&o.Retry.MaxElapsedTime, "retry-max", 5*time.Minute, "give up on a backend that takes no request for this long")
	progress := fs.String("progress", "auto", "the progress display on stderr: `auto|bar|plain|none` (auto: a bar on a terminal, else a line every 10s)")
	if code, done := parseFlags(fs, replayUsage, args, stdout, stderr); done {
		return code
	}
	o.Paths = fs.Args()
	o.Headers = headers
	o.BatchBytes = *batch
	if *sigs != "" {
		for _, s := range strings.Split(*sigs, ",") {
			sig, ok := pipeline.ParseSignal(strings.TrimSpace(s))
			if !ok {
				fmt.Fprintf(stderr, "otelstep replay: --signal %q: want metrics, traces or logs\n", s)
				return exitUsage
			}
			o.Signals = append(o.Signals, sig)
		}
	}
	if o.Endpoint == "" && !o.DryRun {
		fmt.Fprintln(stderr, "otelstep replay: --endpoint URL is required")
		return exitUsage
	}
	tok, ok := os.LookupEnv(*tokenEnv)
	if (!ok || tok == "") && !o.DryRun {
		fmt.Fprintf(stderr, "otelstep replay: the ingest token variable %s is not set (or empty): nothing was sent; set it or name another with --token-env\n", *tokenEnv)
		return exitUsage
	}
	o.Token = tok
	switch *progress {
	case "auto":
		o.Progress, o.Terminal = stderr, isTerminal(stderr)
	case "bar":
		o.Progress, o.Terminal = stderr, true
	case "plain":
		o.Progress = stderr
	case "none":
		o.Progress = io.Discard
	default:
		fmt.Fprintf(stderr, "otelstep replay: --progress %q: want auto, bar, plain or none\n", *progress)
		return exitUsage
	}
	if o.Progress == io.Discard {
		// Skipped lines are still worth seeing.
		o.Progress = skippedOnly{stderr}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigc := make(chan os.Signal, 2)
	signal.Notify(sigc, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigc)
	go func() {
		select {
		case <-sigc:
		case <-ctx.Done():
			return
		}
		fmt.Fprintln(stderr, "\notelstep replay: stopping: requests in flight finish, progress is saved; a second signal exits at once")
		cancel()
		<-sigc
		fmt.Fprintln(stderr, "otelstep replay: second signal, exiting now: the last requests may be sent again on resume")
		os.Exit(exitFailure)
	}()

	sum, err := replay.Run(ctx, o)
	if errors.Is(err, replay.ErrBadToken) {
		err = fmt.Errorf("the variable %s: %w", *tokenEnv, err)
	}
	if err != nil {
		fmt.Fprintf(stderr, "otelstep replay: %v\n", err)
		if errors.Is(err, replay.ErrNoToken) {
			return exitUsage
		}
		return exitUsage
	}
	sum.Write(stdout)
	if !sum.OK() {
		fmt.Fprintf(stderr, "otelstep replay: not everything was sent: %s\n", sum.Reason())
		if sum.Stopped {
			secrets := []string{tok}
			for _, v := range headers {
				secrets = append(secrets, v)
			}
			fmt.Fprintf(stderr, "otelstep replay: to continue: %s\n", redact.New(secrets...).Replace(resumeCommand(args)))
		}
		return exitFailure
	}
	if *strict && sum.Pending > 0 {
		n := fmt.Sprintf("%d files end", sum.Pending)
		if sum.Pending == 1 {
			n = "1 file ends"
		}
		fmt.Fprintf(stderr, "otelstep replay: --strict: %s in a line with no newline, not sent (kept for a later run)\n", n)
		return exitFailure
	}
	return exitOK
}

// resumeCommand is the replay command line args continue with: the same,
// but for --from-start, which would send everything again.
func resumeCommand(args []string) string {
	out := []string{"otelstep", "replay"}
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && name == "from-start" {
			continue
		}
		out = append(out, shellquote.Quote(a))
	}
	return strings.Join(out, " ")
}

// skippedOnly passes on the lines that name a skipped line or a failure,
// for --progress none.
type skippedOnly struct{ w io.Writer }

func (s skippedOnly) Write(p []byte) (int, error) {
	if strings.HasPrefix(string(p), "replay: ") {
		return len(p), nil
	}
	return s.w.Write(p)
}

// isTerminal reports whether w is a character device (a terminal), without
// a dependency: enough to choose between a bar and plain lines.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

const replayUsage = `usage: otelstep replay --endpoint URL [--token-env OTEL_TOKEN] [--header K=V]... PATH...

Resends JSONL files (one OTLP/JSON export request per line, as otelstep and
the collector's file exporter write them) to an OTLP/HTTP backend: protobuf,
gzip, "Authorization: Bearer <token>" and the Authorization resource
attribute on every resource, from the variable --token-env names.
PATH is a file, a job's otel folder (its *.jsonl files) or a glob.
Progress is checkpointed per file: run the same command again (without
--from-start) to continue. A last line with no newline (being written, or
cut short by a killed job) is reported and kept for a later run (exit 0
unless --strict). Lines skipped (corrupt, refused as bad by the backend)
are listed by the run that skips them; later runs exit 1 for them until
--accept-skipped acknowledges them.

Exit status: 0 everything read was sent, 1 not (stopped, skipped lines,
the backend refused), 2 a usage error.

`
