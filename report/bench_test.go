package report

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/otelstep/otelstep/otlpwire"
	"github.com/otelstep/otelstep/pipeline"
)

// writeLargeJob writes a job of about mb MB of JSONL in otelstep's format:
// metrics, the test job's targets plus a node-exporter-sized target of
// nodeSeries series and an 8-GPU DCGM of 30 fields, scraped every 5 s; then
// a fifth as much of traces (three spans a trace) and a tenth of logs.
func writeLargeJob(tb testing.TB, dir string, mb int) int64 {
	tb.Helper()
	otel := filepath.Join(dir, "otel")
	if err := os.MkdirAll(otel, 0o755); err != nil {
		tb.Fatal(err)
	}
	const nodeSeries = 1000
	written := writeLines(tb, filepath.Join(otel, "metrics.jsonl"), int64(mb)<<20, func(dst []byte, i int) []byte {
		rms := testScrape(vllmV1, false, i)
		t := nanos(testT0.Add(time.Duration(i) * testInterval))
		var node, gpus []*metricspb.Metric
		for k := 0; k < nodeSeries; k++ {
			node = append(node, counter(fmt.Sprintf("node_extra_%d_total", k%50), t, nanos(testT0), float64(i*k), str("device", "dev"+strconv.Itoa(k/50))))
		}
		for g := 0; g < 8; g++ {
			for k := 0; k < 30; k++ {
				gpus = append(gpus, gauge(fmt.Sprintf("DCGM_FI_EXTRA_%d", k), t, float64(i%100+k), str("gpu", strconv.Itoa(g)),
					str("UUID", "GPU-"+strconv.Itoa(g)), str("modelName", "H100"), str("Hostname", "node1")))
			}
		}
		rms = append(rms, scrapeResource(resource("node-extra", "node1:9100", false), "prometheusreceiver", node...),
			scrapeResource(resource("dcgm-extra", "node1:9400", false), "prometheusreceiver", gpus...))
		return otlpwire.AppendMetrics(dst, rms)
	})
	written += writeLines(tb, filepath.Join(otel, "traces.jsonl"), int64(mb)<<20/5, func(dst []byte, i int) []byte {
		_, ts, _ := testRequestsAt(i)
		return otlpwire.AppendTraces(dst, pipeline.TracesFromProto(ts))
	})
	written += writeLines(tb, filepath.Join(otel, "logs.jsonl"), int64(mb)<<20/10, func(dst []byte, i int) []byte {
		_, _, ls := testRequestsAt(i)
		return otlpwire.AppendLogs(dst, pipeline.LogsFromProto(ls))
	})
	return written
}

// testRequestsAt is the spans and logs of the test job moved i runs on:
// 100 traces and 56 log records a line, with new trace ids.
func testRequestsAt(i int) (any, []*tracepb.ResourceSpans, []*logspb.ResourceLogs) {
	_, ts, ls := testRequests(vllmV1, false)
	var rss []*tracepb.ResourceSpans
	for k, r := range ts[:min(len(ts), 100)] {
		for _, ss := range r.ResourceSpans[0].ScopeSpans {
			for _, sp := range ss.Spans {
				sp.TraceId = slices.Clone(sp.TraceId)
				sp.TraceId[1], sp.TraceId[2], sp.TraceId[3] = byte(i), byte(i>>8), byte(i>>16)
				sp.TraceId[4] = byte(k)
			}
		}
		rss = append(rss, r.ResourceSpans...)
	}
	return nil, rss, ls[0].ResourceLogs
}

func writeLines(tb testing.TB, path string, size int64, line func(dst []byte, i int) []byte) int64 {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var n int64
	var b []byte
	for i := 0; n < size; i++ {
		b = append(line(b[:0], i), '\n')
		if _, err := w.Write(b); err != nil {
			tb.Fatal(err)
		}
		n += int64(len(b))
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return n
}

// BenchmarkReportLargeJob summarises a job of OTELSTEP_REPORT_BENCH_MB MB
// (default 20) of metrics JSONL; OTELSTEP_REPORT_BENCH_DIR keeps the job
// there (written once) for measuring the binary against other readers.
func BenchmarkReportLargeJob(b *testing.B) {
	mb := 20
	if v, err := strconv.Atoi(os.Getenv("OTELSTEP_REPORT_BENCH_MB")); err == nil && v > 0 {
		mb = v
	}
	dir := os.Getenv("OTELSTEP_REPORT_BENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	var size int64
	if _, err := os.Stat(filepath.Join(dir, "otel", "metrics.jsonl")); err == nil {
		for _, f := range signalFiles {
			if st, err := os.Stat(filepath.Join(dir, "otel", f)); err == nil {
				size += st.Size()
			}
		}
	} else {
		size = writeLargeJob(b, dir, mb)
	}
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		r, err := Build(context.Background(), Config{Dirs: []string{dir}})
		if err != nil {
			b.Fatal(err)
		}
		if len(r.Jobs[0].Panels["gpu_util"].Series) != 2 {
			b.Fatal("gpu_util not evaluated")
		}
	}
}
