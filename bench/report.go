package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteScrape prints the scrape report as a table, one column per
// collector, then the ceiling and the ratios.
func WriteScrape(w io.Writer, r *ScrapeReport) {
	values := "new values every scrape"
	if r.Frozen {
		values = "the same values every scrape"
	}
	fmt.Fprintf(w, "scrape: %d targets (%s), %d samples per pass every %gs, %s\n", r.Targets, strings.Join(r.Pages, ", "), r.SamplesPerPass, r.IntervalSec, values)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := rowWriter(tw, r.Results)
	row("", func(x ScrapeResult) string { return x.Name })
	row("samples scraped/s", func(x ScrapeResult) string { return fmt.Sprintf("%.0f", x.SamplesPerSecond) })
	row("CPU seconds", func(x ScrapeResult) string { return fmt.Sprintf("%.3f", x.CPUSeconds) })
	row("samples per CPU-second", func(x ScrapeResult) string { return fmt.Sprintf("%.0f", x.SamplesPerCPUSecond) })
	row("allocs per sample", func(x ScrapeResult) string { return optf(x.AllocsPerSample, "%.2f") })
	row("alloc bytes per sample", func(x ScrapeResult) string { return optf(x.AllocBytesPerSample, "%.0f") })
	row("peak RSS MiB", func(x ScrapeResult) string { return fmt.Sprintf("%.1f", float64(x.PeakRSSBytes)/(1<<20)) })
	row("RSS at the end MiB", func(x ScrapeResult) string { return fmt.Sprintf("%.1f", float64(x.EndRSSBytes)/(1<<20)) })
	row("peak anon RSS MiB", func(x ScrapeResult) string { return fmt.Sprintf("%.1f", float64(x.PeakAnonRSSBytes)/(1<<20)) })
	row("JSONL bytes per sample", func(x ScrapeResult) string { return fmt.Sprintf("%.1f", x.JSONLBytesPerSample) })
	row("backend bytes per sample", func(x ScrapeResult) string { return fmt.Sprintf("%.2f", x.BackendBytesPerSample) })
	row("scrape p50 ms", func(x ScrapeResult) string { return fmt.Sprintf("%.2f", x.ScrapeP50Seconds*1000) })
	row("scrape p99 ms", func(x ScrapeResult) string { return fmt.Sprintf("%.2f", x.ScrapeP99Seconds*1000) })
	row("backend receives", func(x ScrapeResult) string { return x.BackendProtocol })
	row("points JSONL / backend", func(x ScrapeResult) string {
		if x.BackendProtocol != "otlp" {
			return fmt.Sprintf("- / %d samples", x.BackendPoints)
		}
		return fmt.Sprintf("%d / %d", x.JSONLPoints, x.BackendPoints)
	})
	row("dropped points", func(x ScrapeResult) string { return fmt.Sprintf("%d", x.Dropped) })
	row("start to healthy ms", func(x ScrapeResult) string { return fmt.Sprintf("%.1f", x.StartToHealthyMS) })
	tw.Flush()
	fmt.Fprintf(w, "ceiling: model/textparse alone parses %.0f samples/s on one core; otelstep end to end is %.0f%% of it\n",
		r.TextparseSamplesPerSecond, 100*r.FractionOfTextparse)
	scraped := map[string]int64{}
	for _, x := range r.Results {
		scraped[x.Name] = x.Samples
	}
	for _, q := range r.Ratios {
		if scraped[q.Peer] == 0 {
			fmt.Fprintf(w, "otelstep vs %s: no ratio: %s scraped nothing in the window (a longer --warmup or --duration?)\n", q.Peer, q.Peer)
			continue
		}
		fmt.Fprintf(w, "otelstep vs %s: %.2fx the samples per CPU-second, %.2fx the peak RSS, %.2fx the backend bytes per sample\n", q.Peer, q.SamplesPerCPUSecond, q.PeakRSS, q.BackendBytesPerSample)
	}
}

// WriteOTLP prints the OTLP ingest report.
func WriteOTLP(w io.Writer, r *OTLPReport) {
	item := map[string]string{"traces": "spans", "logs": "log records", "metrics": "points"}[r.Signal]
	fmt.Fprintf(w, "otlp: %s over %s, %d %s a request, %d attributes each\n", r.Signal, r.Protocol, r.Batch, item, r.Attrs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := rowWriter(tw, r.Results)
	row("", func(x OTLPResult) string { return x.Name })
	row(item+" accepted/s", func(x OTLPResult) string { return fmt.Sprintf("%.0f", x.ItemsPerSecond) })
	row("CPU seconds", func(x OTLPResult) string { return fmt.Sprintf("%.3f", x.CPUSeconds) })
	row(item+" per CPU-second", func(x OTLPResult) string { return fmt.Sprintf("%.0f", x.ItemsPerCPUSecond) })
	row("peak RSS MiB", func(x OTLPResult) string { return fmt.Sprintf("%.1f", float64(x.PeakRSSBytes)/(1<<20)) })
	row("peak anon RSS MiB", func(x OTLPResult) string { return fmt.Sprintf("%.1f", float64(x.PeakAnonRSSBytes)/(1<<20)) })
	row("refused (retry later)", func(x OTLPResult) string { return fmt.Sprintf("%d", x.Refused) })
	row("answer p50 / p99 ms", func(x OTLPResult) string { return fmt.Sprintf("%.2f / %.2f", x.AnswerP50MS, x.AnswerP99MS) })
	row("errors", func(x OTLPResult) string { return fmt.Sprintf("%d", x.Errors) })
	row("sent / at backend", func(x OTLPResult) string { return fmt.Sprintf("%d / %d", x.Sent, x.BackendItems) })
	one := map[string]string{"traces": "span", "logs": "log record", "metrics": "point"}[r.Signal]
	row("backend bytes per "+one, func(x OTLPResult) string { return fmt.Sprintf("%.2f", x.BackendBytesPerItem) })
	row("backend requests, "+item+" each", func(x OTLPResult) string {
		return fmt.Sprintf("%d, %.1f", x.BackendRequests, x.BackendItemsPerRequest)
	})
	row("backend raw bytes per "+one, func(x OTLPResult) string { return fmt.Sprintf("%.2f", x.BackendRawBytesPerItem) })
	row("start to healthy ms", func(x OTLPResult) string { return fmt.Sprintf("%.1f", x.StartToHealthyMS) })
	tw.Flush()
	for _, q := range r.Ratios {
		fmt.Fprintf(w, "otelstep vs %s: %.2fx the %s per CPU-second, %.2fx the peak RSS, %.2fx the backend bytes per item\n", q.Peer, q.ItemsPerCPUSecond, item, q.PeakRSS, q.BackendBytesPerItem)
	}
}

// rowWriter returns a function that writes one table row: its name, then
// f of each result, a column per collector.
func rowWriter[R any](w io.Writer, results []R) func(name string, f func(R) string) {
	return func(name string, f func(R) string) {
		fmt.Fprintf(w, "%s\t", name)
		for _, x := range results {
			fmt.Fprintf(w, "%s\t", f(x))
		}
		fmt.Fprintln(w)
	}
}

func optf(v *float64, format string) string {
	if v == nil {
		return "n/a"
	}
	return fmt.Sprintf(format, *v)
}
