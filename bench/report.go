package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteScrape prints the scrape report as a table, one column per
// collector, then the ceiling and the ratios. Over several rounds, each
// figure is its median with its least and greatest, the whole run's counts
// their totals, and each ratio a line of its own.
func WriteScrape(w io.Writer, r *ScrapeReport) {
	values := "new values every scrape"
	if r.Frozen {
		values = "the same values every scrape"
	}
	fmt.Fprintf(w, "scrape: %d targets (%s), %d samples per pass every %gs, %s%s\n", r.Targets, strings.Join(r.Pages, ", "), r.SamplesPerPass, r.IntervalSec, values, roundsNote(len(r.Rounds)))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := rowWriter(tw, len(r.Results))
	c := cells[ScrapeResult]{r.Results, r.ResultsMin, r.ResultsMax}
	row("", c.value(func(x ScrapeResult) string { return x.Name }))
	row("samples scraped/s", c.figure(func(x ScrapeResult) string { return fmt.Sprintf("%.0f", x.SamplesPerSecond) }))
	row("CPU seconds", c.figure(func(x ScrapeResult) string { return fmt.Sprintf("%.3f", x.CPUSeconds) }))
	row("samples per CPU-second", c.figure(func(x ScrapeResult) string { return fmt.Sprintf("%.0f", x.SamplesPerCPUSecond) }))
	row("allocs per sample", c.figure(func(x ScrapeResult) string { return optf(x.AllocsPerSample, "%.2f") }))
	row("alloc bytes per sample", c.figure(func(x ScrapeResult) string { return optf(x.AllocBytesPerSample, "%.0f") }))
	row("peak RSS MiB", c.figure(func(x ScrapeResult) string { return fmt.Sprintf("%.1f", float64(x.PeakRSSBytes)/(1<<20)) }))
	row("RSS at the end MiB", c.figure(func(x ScrapeResult) string { return fmt.Sprintf("%.1f", float64(x.EndRSSBytes)/(1<<20)) }))
	row("peak anon RSS MiB", c.figure(func(x ScrapeResult) string { return fmt.Sprintf("%.1f", float64(x.PeakAnonRSSBytes)/(1<<20)) }))
	row("JSONL bytes per sample", c.figure(func(x ScrapeResult) string { return fmt.Sprintf("%.1f", x.JSONLBytesPerSample) }))
	row("backend bytes per sample", c.figure(func(x ScrapeResult) string { return fmt.Sprintf("%.2f", x.BackendBytesPerSample) }))
	row("scrape p50 ms", c.figure(func(x ScrapeResult) string { return fmt.Sprintf("%.2f", x.ScrapeP50Seconds*1000) }))
	row("scrape p99 ms", c.figure(func(x ScrapeResult) string { return fmt.Sprintf("%.2f", x.ScrapeP99Seconds*1000) }))
	row("backend receives", c.value(func(x ScrapeResult) string { return x.BackendProtocol }))
	row("points JSONL / backend", c.value(func(x ScrapeResult) string {
		if x.BackendProtocol != "otlp" {
			return fmt.Sprintf("- / %d samples", x.BackendPoints)
		}
		return fmt.Sprintf("%d / %d", x.JSONLPoints, x.BackendPoints)
	}))
	row("dropped points", c.value(func(x ScrapeResult) string { return fmt.Sprintf("%d", x.Dropped) }))
	row("start to healthy ms", c.figure(func(x ScrapeResult) string { return fmt.Sprintf("%.1f", x.StartToHealthyMS) }))
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
		if q.OverRounds != nil {
			writeSpreads(w, q.Peer, q.OverRounds, [][2]string{{"samples_per_cpu_second", "samples per CPU-second"},
				{"peak_rss", "peak RSS"}, {"backend_bytes_per_sample", "backend bytes per sample"}})
			continue
		}
		fmt.Fprintf(w, "otelstep vs %s: %.2fx the samples per CPU-second, %.2fx the peak RSS, %.2fx the backend bytes per sample\n", q.Peer, q.SamplesPerCPUSecond, q.PeakRSS, q.BackendBytesPerSample)
	}
}

// WriteOTLP prints the OTLP ingest report.
func WriteOTLP(w io.Writer, r *OTLPReport) {
	item := map[string]string{"traces": "spans", "logs": "log records", "metrics": "points"}[r.Signal]
	fmt.Fprintf(w, "otlp: %s over %s, %d %s a request, %d attributes each%s\n", r.Signal, r.Protocol, r.Batch, item, r.Attrs, roundsNote(len(r.Rounds)))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := rowWriter(tw, len(r.Results))
	c := cells[OTLPResult]{r.Results, r.ResultsMin, r.ResultsMax}
	row("", c.value(func(x OTLPResult) string { return x.Name }))
	offered := c.figure(func(x OTLPResult) string { return optf(x.OfferedPerSecond, "%.0f") })
	sent := c.figure(func(x OTLPResult) string { return fmt.Sprintf("%.0f", x.SentPerSecond) })
	row(item+" offered / sent /s", func(i int) string { return offered(i) + " / " + sent(i) })
	row(item+" accepted/s", c.figure(func(x OTLPResult) string { return fmt.Sprintf("%.0f", x.ItemsPerSecond) }))
	row("CPU seconds", c.figure(func(x OTLPResult) string { return fmt.Sprintf("%.3f", x.CPUSeconds) }))
	row(item+" per CPU-second", c.figure(func(x OTLPResult) string { return fmt.Sprintf("%.0f", x.ItemsPerCPUSecond) }))
	row("peak RSS MiB", c.figure(func(x OTLPResult) string { return fmt.Sprintf("%.1f", float64(x.PeakRSSBytes)/(1<<20)) }))
	row("peak anon RSS MiB", c.figure(func(x OTLPResult) string { return fmt.Sprintf("%.1f", float64(x.PeakAnonRSSBytes)/(1<<20)) }))
	row("refused (retry later)", c.value(func(x OTLPResult) string { return fmt.Sprintf("%d", x.Refused) }))
	row(fmt.Sprintf("requests skipped (over %s late)", maxLag), c.value(func(x OTLPResult) string { return fmt.Sprintf("%d", x.Skipped) }))
	p50 := c.figure(func(x OTLPResult) string { return fmt.Sprintf("%.2f", x.AnswerP50MS) })
	p99 := c.figure(func(x OTLPResult) string { return fmt.Sprintf("%.2f", x.AnswerP99MS) })
	row("answer p50 / p99 ms", func(i int) string { return p50(i) + " / " + p99(i) })
	row("errors", c.value(func(x OTLPResult) string { return fmt.Sprintf("%d", x.Errors) }))
	row("accepted / at backend", c.value(func(x OTLPResult) string { return fmt.Sprintf("%d / %d", x.Accepted, x.BackendItems) }))
	one := map[string]string{"traces": "span", "logs": "log record", "metrics": "point"}[r.Signal]
	row("backend bytes per "+one, c.figure(func(x OTLPResult) string { return fmt.Sprintf("%.2f", x.BackendBytesPerItem) }))
	requests := c.value(func(x OTLPResult) string { return fmt.Sprintf("%d", x.BackendRequests) })
	perRequest := c.figure(func(x OTLPResult) string { return fmt.Sprintf("%.1f", x.BackendItemsPerRequest) })
	row("backend requests, "+item+" each", func(i int) string { return requests(i) + ", " + perRequest(i) })
	row("backend raw bytes per "+one, c.figure(func(x OTLPResult) string { return fmt.Sprintf("%.2f", x.BackendRawBytesPerItem) }))
	row("start to healthy ms", c.figure(func(x OTLPResult) string { return fmt.Sprintf("%.1f", x.StartToHealthyMS) }))
	tw.Flush()
	for _, q := range r.Ratios {
		if q.OverRounds != nil {
			writeSpreads(w, q.Peer, q.OverRounds, [][2]string{{"items_per_cpu_second", item + " per CPU-second"},
				{"peak_rss", "peak RSS"}, {"backend_bytes_per_item", "backend bytes per " + one}})
			continue
		}
		fmt.Fprintf(w, "otelstep vs %s: %.2fx the %s per CPU-second, %.2fx the peak RSS, %.2fx the backend bytes per item\n", q.Peer, q.ItemsPerCPUSecond, item, q.PeakRSS, q.BackendBytesPerItem)
	}
}

// roundsNote ends a report's first line when it has several rounds.
func roundsNote(rounds int) string {
	if rounds < 2 {
		return ""
	}
	return fmt.Sprintf("; medians of %d rounds (least–greatest), the counts summed", rounds)
}

// writeSpreads writes a line per ratio over the rounds, in the order of
// labels: a ratio's JSON name and the words for it.
func writeSpreads(w io.Writer, peer string, spreads map[string]Spread, labels [][2]string) {
	for _, l := range labels {
		s := spreads[l[0]]
		fmt.Fprintf(w, "otelstep/%s %s: median %.2f (%.2f–%.2f, %d rounds)\n", peer, l[1], s.Median, s.Min, s.Max, s.Rounds)
	}
}

// rowWriter returns a function that writes one table row: its name, then
// cell(i) for each of n collectors, a column each.
func rowWriter(w io.Writer, n int) func(name string, cell func(i int) string) {
	return func(name string, cell func(int) string) {
		fmt.Fprintf(w, "%s\t", name)
		for i := range n {
			fmt.Fprintf(w, "%s\t", cell(i))
		}
		fmt.Fprintln(w)
	}
}

// cells makes a table's cells from a report's results: med, and with
// several rounds lo and hi, the least and greatest each figure read.
type cells[R any] struct{ med, lo, hi []R }

// value is f of the i-th collector's result (a name, or a count that is
// the rounds' total).
func (c cells[R]) value(f func(R) string) func(i int) string {
	return func(i int) string { return f(c.med[i]) }
}

// figure is value, and with several rounds the least–greatest after it
// unless every round read the same (to the digits shown).
func (c cells[R]) figure(f func(R) string) func(i int) string {
	return func(i int) string {
		med := f(c.med[i])
		if c.lo == nil {
			return med
		}
		lo, hi := f(c.lo[i]), f(c.hi[i])
		if lo == hi {
			return med
		}
		return fmt.Sprintf("%s (%s–%s)", med, lo, hi)
	}
}

func optf(v *float64, format string) string {
	if v == nil {
		return "n/a"
	}
	return fmt.Sprintf(format, *v)
}
