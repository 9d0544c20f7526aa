package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/otelstep/otelstep/report"
)

const reportUsage = `usage: otelstep report [--out FILE.html] [--summary json|markdown] [--panels FILE] DIR...

Reads each DIR (a job's otel/ folder, or a job folder holding one): its metrics, traces and logs JSONL files,
otelstep's or the collector's file exporter's. Writes the page to --out (one self-contained HTML file, the jobs
side by side when several DIRs are given) and/or the summary to stdout. Without --out and --summary: the
markdown summary. Nothing is written into the DIRs.

`

// runReport is `otelstep report`: see reportUsage and package report.
func runReport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("otelstep report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "write the page to `FILE.html`")
	summary := fs.String("summary", "", "print the summary on stdout as `json|markdown`")
	panels := fs.String("panels", "", "YAML `file` of panels (id, title, unit, query) added to the defaults or replacing them by id")
	points := fs.Int("points", 240, "evaluate the panels at about `N` steps over the job's time span")
	if code, done := parseFlags(fs, reportUsage, args, stdout, stderr); done {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "otelstep report: no DIR given")
		fs.Usage()
		return exitUsage
	}
	switch *summary {
	case "", "json", "markdown":
	default:
		fmt.Fprintf(stderr, "otelstep report: --summary %q: want json or markdown\n", *summary)
		return exitUsage
	}
	if *out == "" && *summary == "" {
		*summary = "markdown"
	}
	cfg := report.Config{Dirs: fs.Args(), Points: *points, Page: *out != ""}
	if *panels != "" {
		ps, err := report.LoadPanels(*panels, report.DefaultPanels())
		if err != nil {
			fmt.Fprintf(stderr, "otelstep report: %v\n", err)
			return exitUsage
		}
		cfg.Panels = ps
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	r, err := report.Build(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "otelstep report: %v\n", err)
		return exitFailure
	}
	// A panel whose query fails (a --panels query PromQL refuses at
	// evaluation) is reported, not fatal: the others are still worth having.
	for _, js := range r.Jobs {
		for _, id := range js.PanelIDs() {
			if e := js.Panels[id].Error; e != "" {
				fmt.Fprintf(stderr, "otelstep report: %s: panel %s: %s\n", js.Dir, id, e)
			}
		}
	}
	if *out != "" {
		if err := writeFileAtomic(*out, r.WritePage); err != nil {
			fmt.Fprintf(stderr, "otelstep report: %v\n", err)
			return exitFailure
		}
	}
	switch *summary {
	case "json":
		err = r.WriteJSON(stdout)
	case "markdown":
		err = r.WriteMarkdown(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "otelstep report: %v\n", err)
		return exitFailure
	}
	return exitOK
}

// writeFileAtomic writes path through a temporary file beside it, so that
// a page being rewritten is never seen half written.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
