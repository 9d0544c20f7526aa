package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/otelstep/otelstep/bench"
)

// runBench is `otelstep bench scrape|otlp`: see benchUsage.
func runBench(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help") {
		args = []string{"scrape|otlp", "-h"} // the usage and the flags, on stdout
	} else if len(args) == 0 || (args[0] != "scrape" && args[0] != "otlp") {
		fmt.Fprint(stderr, benchUsage)
		return exitUsage
	}
	kind, args := args[0], args[1:]
	fs := flag.NewFlagSet("otelstep bench "+kind, flag.ContinueOnError)
	peer := fs.String("peer", "", "also measure this collector `command` (split on spaces; --config FILE is appended, or a vmagent's flags)")
	peerKind := fs.String("peer-kind", "auto", "what the --peer is: collector (takes the collector config), vmagent (takes the scrape jobs and remote-writes to the backend; bench scrape only), or auto: vmagent if the binary was built from VictoriaMetrics' app/vmagent")
	asJSON := fs.Bool("json", false, "print the report as one JSON object")
	profile := fs.String("cpuprofile", "", "write otelstep's CPU profile over the run (with --rounds, the last round's) to `file`")
	memProfile := fs.String("memprofile", "", "write otelstep's heap profile at the end of the run (with --rounds, the last round's) to `file`")
	warmup := fs.Duration("warmup", 3*time.Second, "run this long before measuring")
	duration := fs.Duration("duration", 20*time.Second, "measured window")
	count := fs.Int64("count", 0, "measure until `N` samples were scraped (scrape) or items accepted (otlp), however long that takes, instead of for --duration")
	rounds := fs.Int("rounds", 1, "measure every collector once a round for `N` rounds, otelstep first in odd rounds and last in even ones, and report each figure's median and range, each ratio taken within a round")
	v2 := fs.Bool("v2", false, "also run otelstep on the orchestrator's v2 config (span_metrics, transform/identity) as a row of its own, \"otelstep-v2\"")
	// scrape
	pageList := fs.String("pages", "vllm,dcgm,node", "scrape: pages served, comma-separated: vllm, dcgm, node, gen:SERIES:BUCKETS")
	copies := fs.Int("targets", 10, "scrape: targets per page")
	distinct := fs.Bool("distinct", false, "scrape: give each target's series a label of its own (node=\"N\"), so no two targets share a label set")
	interval := fs.Duration("interval", time.Second, "scrape: scrape interval")
	frozen := fs.Bool("frozen", false, "scrape: serve the same values at every scrape (by default every scrape sees new ones, as from a live target)")
	// otlp
	sig := fs.String("signal", "traces", "otlp: traces, logs or metrics")
	proto := fs.String("protocol", "grpc", "otlp: grpc or http")
	batch := fs.Int("batch", 100, "otlp: items per request")
	attrs := fs.Int("attrs", 8, "otlp: attributes per item")
	attrBytes := fs.Int("attr-bytes", 16, "otlp: bytes per attribute value")
	workers := fs.Int("workers", 4, "otlp: concurrent senders")
	rate := fs.Float64("rate", 0, "otlp: requests per second in all, on a fixed schedule: a request due while every worker waits on an answer is sent as soon as one is free, one over 1s late is skipped (and counted) (0: as fast as accepted)")
	if code, done := parseFlags(fs, benchUsage, args, stdout, stderr); done {
		return code
	}
	if *rounds < 1 {
		fmt.Fprintf(stderr, "otelstep bench %s: --rounds %d: want 1 or more\n", kind, *rounds)
		return exitUsage
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "otelstep bench: cannot find my own binary: %v\n", err)
		return exitFailure
	}
	impls := []bench.Impl{{Name: "otelstep", Argv: []string{self}}}
	if *profile != "" {
		impls[0].Argv = append(impls[0].Argv, "--cpuprofile", *profile)
	}
	if *memProfile != "" {
		impls[0].Argv = append(impls[0].Argv, "--memprofile", *memProfile)
	}
	if *v2 {
		impls = append(impls, bench.Impl{Name: "otelstep-v2", Argv: impls[0].Argv[:1], V2: true})
	}
	if *peer != "" {
		argv := strings.Fields(*peer)
		name := argv[0][strings.LastIndexByte(argv[0], '/')+1:]
		var kind bench.PeerKind
		switch *peerKind {
		case "auto":
			kind = bench.DetectPeerKind(argv[0])
		case string(bench.KindCollector), string(bench.KindVMAgent):
			kind = bench.PeerKind(*peerKind)
		default:
			fmt.Fprintf(stderr, "otelstep bench: --peer-kind %q: want auto, collector or vmagent\n", *peerKind)
			return exitUsage
		}
		impls = append(impls, bench.Impl{Name: name, Argv: argv, Peer: true, Kind: kind})
	}
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, "bench: "+format+"\n", a...) }
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	var report any
	switch kind {
	case "scrape":
		var pages []bench.Page
		for _, n := range strings.Split(*pageList, ",") {
			p, err := bench.LoadPage(strings.TrimSpace(n))
			if err != nil {
				fmt.Fprintf(stderr, "otelstep bench scrape: --pages: %v\n", err)
				return exitUsage
			}
			pages = append(pages, p)
		}
		rep, err := bench.RunScrape(ctx, bench.ScrapeOptions{Pages: pages, Copies: *copies, Distinct: *distinct, Frozen: *frozen, Interval: *interval,
			Warmup: *warmup, Duration: *duration, Count: *count, Impls: impls, Rounds: *rounds, Log: logf})
		if err != nil {
			fmt.Fprintf(stderr, "otelstep bench scrape: %v\n", err)
			return exitFailure
		}
		report = rep
		if !*asJSON {
			bench.WriteScrape(stdout, rep)
		}
	case "otlp":
		rep, err := bench.RunOTLP(ctx, bench.OTLPOptions{Signal: *sig, Protocol: *proto, Batch: *batch, Attrs: *attrs, AttrBytes: *attrBytes,
			Workers: *workers, Rate: *rate, Warmup: *warmup, Duration: *duration, Count: *count, Impls: impls, Rounds: *rounds, Log: logf})
		if err != nil {
			fmt.Fprintf(stderr, "otelstep bench otlp: %v\n", err)
			return exitFailure
		}
		report = rep
		if !*asJSON {
			bench.WriteOTLP(stdout, rep)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(report)
	}
	return exitOK
}

const benchUsage = `usage: otelstep bench scrape [flags]   scrape throughput: synthetic targets -> the full pipeline -> both sinks
       otelstep bench otlp [flags]     OTLP ingest: a load generator -> the receivers -> both sinks

Each runs otelstep (and, with --peer CMD, another collector on the same
scenario and config, or a vmagent on the same scrape jobs) as a child
process and measures it from /proc: CPU seconds (user+system), peak RSS;
the tool serves the targets and a discard backend that decodes what it
gets (OTLP/HTTP, and remote write from a vmagent).

With --rounds N, it measures every collector once a round, N rounds on the
same load, otelstep first in odd rounds and the peers first in even ones,
and reports each figure's median over the rounds with its least and
greatest (the counts that must add up, such as dropped points, summed),
and each ratio as the median of the ratios taken within each round.

`
