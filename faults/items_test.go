package faults

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"

	"github.com/otelstep/otelstep/otlpwire"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// Items counts telemetry by identity: spans by name, log records by body
// (the suite's senders name each one uniquely), data points by metric
// name.
type Items struct {
	Spans, Logs, Points map[string]int
}

func newItems() Items {
	return Items{Spans: map[string]int{}, Logs: map[string]int{}, Points: map[string]int{}}
}

func (it Items) clone() Items {
	return Items{Spans: maps.Clone(it.Spans), Logs: maps.Clone(it.Logs), Points: maps.Clone(it.Points)}
}

func (it Items) merge(o Items) {
	for k, n := range o.Spans {
		it.Spans[k] += n
	}
	for k, n := range o.Logs {
		it.Logs[k] += n
	}
	for k, n := range o.Points {
		it.Points[k] += n
	}
}

// Total is the number of items.
func (it Items) Total() int {
	n := 0
	for _, m := range []map[string]int{it.Spans, it.Logs, it.Points} {
		for _, c := range m {
			n += c
		}
	}
	return n
}

// Missing is how many of want's items are not in it (an item twice in
// want and once in it is one missing).
func (it Items) Missing(want Items) int {
	n := 0
	for _, p := range [][2]map[string]int{{want.Spans, it.Spans}, {want.Logs, it.Logs}, {want.Points, it.Points}} {
		for k, c := range p[0] {
			n += max(0, c-p[1][k])
		}
	}
	return n
}

func (it Items) addTraces(rss []*tracepb.ResourceSpans) {
	for _, rs := range rss {
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				it.Spans[sp.Name]++
			}
		}
	}
}

func (it Items) addLogs(rls []*logspb.ResourceLogs) {
	for _, rl := range rls {
		for _, sl := range rl.ScopeLogs {
			for _, lr := range sl.LogRecords {
				it.Logs[lr.Body.GetStringValue()]++
			}
		}
	}
}

func (it Items) addMetrics(rms []*metricspb.ResourceMetrics) {
	for _, rm := range rms {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				n := 0
				switch d := m.Data.(type) {
				case *metricspb.Metric_Gauge:
					n = len(d.Gauge.DataPoints)
				case *metricspb.Metric_Sum:
					n = len(d.Sum.DataPoints)
				case *metricspb.Metric_Histogram:
					n = len(d.Histogram.DataPoints)
				case *metricspb.Metric_Summary:
					n = len(d.Summary.DataPoints)
				case *metricspb.Metric_ExponentialHistogram:
					n = len(d.ExponentialHistogram.DataPoints)
				}
				it.Points[m.Name] += n
			}
		}
	}
}

// readJSONL decodes otelstep's JSONL files in dir (metrics.jsonl,
// traces.jsonl, logs.jsonl, those that exist) and counts their items. Every
// line must be whole and decode: a partial line is an error.
func readJSONL(dir string) (Items, error) {
	it := newItems()
	for _, name := range []string{"metrics.jsonl", "traces.jsonl", "logs.jsonl"} {
		path := filepath.Join(dir, name)
		f, err := os.Open(path)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return it, err
		}
		err = readLines(f, func(n int, line []byte) error {
			if err := it.addLine(name, line); err != nil {
				return fmt.Errorf("%s line %d: %w", path, n, err)
			}
			return nil
		})
		f.Close()
		if err != nil {
			return it, fmt.Errorf("%s: %w", path, err)
		}
	}
	return it, nil
}

// addLine decodes a line of the JSONL file name (metrics.jsonl,
// traces.jsonl or logs.jsonl) and counts its items.
func (it Items) addLine(name string, line []byte) error {
	switch name {
	case "metrics.jsonl":
		req, err := otlpwire.DecodeMetrics(line)
		if err != nil {
			return err
		}
		it.addMetrics(req.ResourceMetrics)
	case "traces.jsonl":
		req, err := otlpwire.DecodeTraces(line)
		if err != nil {
			return err
		}
		it.addTraces(req.ResourceSpans)
	case "logs.jsonl":
		req, err := otlpwire.DecodeLogs(line)
		if err != nil {
			return err
		}
		it.addLogs(req.ResourceLogs)
	}
	return nil
}

// readLines calls fn with each line of r (numbered from 1), which must end
// with a line feed.
func readLines(r io.Reader, fn func(int, []byte) error) error {
	br := bufio.NewReaderSize(r, 1<<20)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err == io.EOF {
			if len(line) > 0 {
				return fmt.Errorf("line %d has no line end (%d bytes)", n, len(line))
			}
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(n, bytes.TrimSuffix(line, []byte("\n"))); err != nil {
			return err
		}
	}
}
