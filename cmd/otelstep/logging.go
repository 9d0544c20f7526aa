package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/otelstep/otelstep/config"
	"github.com/otelstep/otelstep/service"
)

// newLogger builds the log service.telemetry.logs asks for: its level,
// console (slog's text) or json lines, to its output paths; a failure to
// write the log is reported, once per output, on its error output paths.
// A file's folder is created as a JSONL file's is.
// The redacting handler is in front of either encoding. close closes the
// files opened.
func newLogger(cfg *config.Config, stdout, stderr io.Writer) (log *slog.Logger, close func(), err error) {
	var files []*os.File
	close = func() {
		for _, f := range files {
			f.Close()
		}
	}
	open := func(paths []string, key string) ([]namedWriter, error) {
		var ws []namedWriter
		for _, p := range paths {
			switch p {
			case "stderr":
				ws = append(ws, namedWriter{p, stderr})
			case "stdout":
				ws = append(ws, namedWriter{p, stdout})
			default:
				err := os.MkdirAll(filepath.Dir(p), 0o755)
				var f *os.File
				if err == nil {
					f, err = os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
				}
				if err != nil {
					return nil, fmt.Errorf("service.telemetry.logs.%s: %w", key, err)
				}
				files = append(files, f)
				ws = append(ws, namedWriter{p, f})
			}
		}
		return ws, nil
	}
	l := cfg.Service.Logs
	outs, err := open(l.OutputPaths, "output_paths")
	if err == nil {
		var errOuts []namedWriter
		errOuts, err = open(l.ErrorOutputPaths, "error_output_paths")
		if err == nil {
			w := &logWriter{outs: outs, errs: errOuts, failed: make([]bool, len(outs))}
			opts := &slog.HandlerOptions{Level: cfg.Service.LogLevel}
			var h slog.Handler = slog.NewTextHandler(w, opts)
			if l.Encoding == "json" {
				h = slog.NewJSONHandler(w, opts)
			}
			return slog.New(service.NewRedactingHandler(h, cfg.Secrets)), close, nil
		}
	}
	close()
	return nil, nil, err
}

type namedWriter struct {
	name string
	w    io.Writer
}

// logWriter writes each log line to every output; the first failure of
// an output is reported on the error outputs, and its recovery.
type logWriter struct {
	mu     sync.Mutex
	outs   []namedWriter
	errs   []namedWriter
	failed []bool
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, o := range w.outs {
		_, err := o.w.Write(p)
		switch {
		case err != nil && !w.failed[i]:
			w.failed[i] = true
			w.report(fmt.Sprintf("otelstep: cannot write the log to %s: %v (log lines are lost there until it recovers)\n", o.name, err))
		case err == nil && w.failed[i]:
			w.failed[i] = false
			w.report(fmt.Sprintf("otelstep: writing the log to %s again\n", o.name))
		}
	}
	return len(p), nil
}

func (w *logWriter) report(s string) {
	for _, e := range w.errs {
		_, _ = io.WriteString(e.w, s)
	}
}

// startAttrs are what the first log line says of the config: the version,
// the config file, the health address, the JSONL files and the exporters'
// endpoints (without userinfo or query; no header is shown).
func startAttrs(cfg *config.Config) []any {
	var health, jsonl, exporters []string
	for id, h := range cfg.HealthCheck {
		for _, e := range cfg.Service.Extensions {
			if e == id {
				health = append(health, "http://"+h.Endpoint+h.Path)
			}
		}
	}
	for _, f := range cfg.Files {
		jsonl = append(jsonl, f.Path)
	}
	for id, e := range cfg.OTLPHTTP {
		ep := e.Endpoint
		if ep == "" {
			ep = e.TracesEndpoint
		}
		exporters = append(exporters, id+"="+config.SafeURL(ep))
	}
	sort.Strings(health)
	sort.Strings(jsonl)
	sort.Strings(exporters)
	orNone := func(s []string) string {
		if len(s) == 0 {
			return "none"
		}
		return strings.Join(s, ",")
	}
	return []any{"version", version(), "config", cfg.File, "health", orNone(health), "jsonl", orNone(jsonl), "exporters", orNone(exporters)}
}
