package report

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"

	"github.com/otelstep/otelstep/redact"
)

// Target is one scrape target's health, from its `up` series.
type Target struct {
	Job      string  `json:"job"`
	Instance string  `json:"instance"`
	UpRatio  float64 `json:"up_ratio"` // share of scrapes that succeeded
	Scrapes  int     `json:"scrapes"`
	Down     int     `json:"down"` // scrapes with up = 0
	// Gaps are the spacings between scrapes longer than 1.5 times the
	// target's median spacing: scrapes that are missing altogether.
	Gaps int `json:"gaps"`
}

// Targets returns every scraped target's health, by job and instance.
func (j *Job) Targets() []Target {
	out := []Target{}
	for _, s := range j.store.sorted {
		if s.lset.Get(labels.MetricName) != "up" {
			continue
		}
		t := Target{Job: s.lset.Get("job"), Instance: s.lset.Get("instance")}
		up := 0
		var spacing []int64
		ss := s.samples()
		for i, x := range ss {
			v := x.f
			if value.IsStaleNaN(v) {
				continue
			}
			t.Scrapes++
			if v >= 1 {
				up++
			} else {
				t.Down++
			}
			if i > 0 {
				spacing = append(spacing, x.t-ss[i-1].t)
			}
		}
		if t.Scrapes > 0 {
			t.UpRatio = float64(up) / float64(t.Scrapes)
		}
		if len(spacing) > 0 {
			sorted := slices.Sorted(slices.Values(spacing))
			med := sorted[len(sorted)/2]
			for _, d := range spacing {
				if float64(d) > 1.5*float64(med) {
					t.Gaps++
				}
			}
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b Target) int { return cmp.Or(cmp.Compare(a.Job, b.Job), cmp.Compare(a.Instance, b.Instance)) })
	return out
}

// Metrics returns every Prometheus metric family of the job, by name.
func (j *Job) Metrics() []MetricInfo {
	out := make([]MetricInfo, 0, len(j.store.metrics))
	for _, m := range j.store.metrics {
		out = append(out, *m)
	}
	slices.SortFunc(out, func(a, b MetricInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// JobSummary is one DIR's entry of the summary.
type JobSummary struct {
	Dir      string                 `json:"dir"`
	Resource map[string]string      `json:"resource"`
	Start    string                 `json:"start"`
	End      string                 `json:"end"`
	Step     string                 `json:"step"`
	Panels   map[string]PanelResult `json:"panels"`
	Spans    []SpanStats            `json:"spans"`
	Logs     LogStats               `json:"logs"`
	Targets  []Target               `json:"targets"`
	Files    []FileStats            `json:"files"`
	// NotCharted counts points with no Prometheus float series
	// (exponential histograms).
	NotCharted int `json:"not_charted_points,omitempty"`

	order  []string // panel ids in panel order
	job    *Job
	grid   Grid
	traces []Trace
	other  []otherMetric
}

// PanelIDs returns the ids of the job's panels in panel order.
func (js *JobSummary) PanelIDs() []string { return slices.Clone(js.order) }

// Report is what `otelstep report` makes of its DIRs.
type Report struct {
	Jobs    []*JobSummary
	Panels  []Panel
	secrets *redact.Redactor
}

// Config says what to build.
type Config struct {
	Dirs   []string
	Panels []Panel // nil: DefaultPanels
	Read   Options
	// Points is about how many steps the panels are evaluated at (0: 240).
	Points int
	// Page: also evaluate what the page needs beyond the summary (the
	// other metrics' series).
	Page bool
}

// Build reads every DIR and evaluates its panels.
func Build(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Panels == nil {
		cfg.Panels = DefaultPanels()
	}
	if cfg.Points <= 0 {
		cfg.Points = 240
	}
	r := &Report{Panels: cfg.Panels}
	var secrets []string
	var jobs []*Job
	for _, d := range cfg.Dirs {
		j, err := Read(ctx, d, cfg.Read)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
		secrets = append(secrets, j.secrets...)
	}
	// Jobs compared share one step, so their charts overlay step for step.
	var step time.Duration
	for _, j := range jobs {
		step = max(step, j.MakeGrid(cfg.Points, 0).Step)
	}
	eng := newEngine()
	for _, j := range jobs {
		g := j.MakeGrid(cfg.Points, step)
		js := &JobSummary{Dir: j.Dir, Resource: j.Resource, Panels: map[string]PanelResult{},
			Files: j.Files, job: j, grid: g, NotCharted: j.store.Unsupported}
		if j.Start != 0 || j.End != 0 {
			js.Start = time.UnixMilli(j.Start).UTC().Format(time.RFC3339Nano)
			js.End = time.UnixMilli(j.End).UTC().Format(time.RFC3339Nano)
			js.Step = g.Step.String()
		}
		ev := &evaluator{eng: eng, job: j, g: g}
		for _, p := range cfg.Panels {
			js.Panels[p.ID] = ev.Eval(ctx, p)
			js.order = append(js.order, p.ID)
		}
		js.Spans = j.Spans()
		js.Logs = j.Logs(10)
		js.Targets = j.Targets()
		if cfg.Page {
			js.traces = j.SlowestTraces()
			js.other = otherMetrics(ctx, ev, j)
		}
		r.Jobs = append(r.Jobs, js)
	}
	r.secrets = redact.New(secrets...)
	return r, nil
}

// jsonFloat writes NaN and infinities, which JSON has not, as null.
type jsonFloat float64

func (f jsonFloat) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(f))
}

// summaryJSON is the summary's shape, floats that may be NaN as jsonFloat.
func (r *Report) summaryDoc() any {
	type series struct {
		Labels map[string]string `json:"labels"`
		Mean   jsonFloat         `json:"mean"`
		Min    jsonFloat         `json:"min"`
		Max    jsonFloat         `json:"max"`
		Last   jsonFloat         `json:"last"`
	}
	type panel struct {
		Title  string   `json:"title"`
		Unit   string   `json:"unit"`
		Query  string   `json:"query"`
		Series []series `json:"series"`
		Error  string   `json:"error,omitempty"`
	}
	type span struct {
		Service string    `json:"service"`
		Name    string    `json:"name"`
		Count   int       `json:"count"`
		Errors  int       `json:"errors"`
		P50     jsonFloat `json:"p50_s"`
		P99     jsonFloat `json:"p99_s"`
		Max     jsonFloat `json:"max_s"`
	}
	type job struct {
		Dir        string            `json:"dir"`
		Resource   map[string]string `json:"resource"`
		Start      string            `json:"start"`
		End        string            `json:"end"`
		Step       string            `json:"step,omitempty"`
		Panels     map[string]panel  `json:"panels"`
		Spans      []span            `json:"spans"`
		Logs       LogStats          `json:"logs"`
		Targets    []Target          `json:"targets"`
		Files      []FileStats       `json:"files"`
		NotCharted int               `json:"not_charted_points,omitempty"`
	}
	doc := struct {
		Jobs []job `json:"jobs"`
	}{Jobs: []job{}}
	for _, js := range r.Jobs {
		j := job{Dir: js.Dir, Resource: js.Resource, Start: js.Start, End: js.End, Step: js.Step,
			Panels: map[string]panel{}, Spans: []span{}, Logs: js.Logs, Targets: js.Targets, Files: js.Files, NotCharted: js.NotCharted}
		for id, p := range js.Panels {
			pp := panel{Title: p.Title, Unit: p.Unit, Query: p.Query, Series: []series{}, Error: p.Error}
			for _, s := range p.Series {
				pp.Series = append(pp.Series, series{s.Labels, jsonFloat(s.Mean), jsonFloat(s.Min), jsonFloat(s.Max), jsonFloat(s.Last)})
			}
			j.Panels[id] = pp
		}
		for _, s := range js.Spans {
			j.Spans = append(j.Spans, span{s.Service, s.Name, s.Count, s.Errors, jsonFloat(s.P50), jsonFloat(s.P99), jsonFloat(s.Max)})
		}
		doc.Jobs = append(doc.Jobs, j)
	}
	return doc
}

// WriteJSON writes the summary as one JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(r.summaryDoc(), "", "  ")
	if err != nil {
		return fmt.Errorf("report: summary: %w", err)
	}
	_, err = io.WriteString(w, r.secrets.Replace(string(b))+"\n")
	return err
}

// WriteMarkdown writes the summary as markdown tables, for a CI log or a
// pull request.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	esc := func(s string) string {
		return strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ").Replace(s)
	}
	if len(r.Jobs) > 1 {
		b.WriteString("## Jobs compared\n\n| figure | unit |")
		for i := range r.Jobs {
			fmt.Fprintf(&b, " %s |", jobLetter(i))
		}
		for i := 1; i < len(r.Jobs); i++ {
			fmt.Fprintf(&b, " %s − A |", jobLetter(i))
		}
		b.WriteString("\n|---|---|" + strings.Repeat("---:|", 2*len(r.Jobs)-1) + "\n")
		for _, row := range r.diffRows() {
			fmt.Fprintf(&b, "| %s | %s | %s |", esc(row.Figure), esc(row.Unit), strings.Join(row.Values, " | "))
			if len(row.Diffs) > 0 {
				fmt.Fprintf(&b, " %s |", strings.Join(row.Diffs, " | "))
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	for i, js := range r.Jobs {
		title := js.Dir
		if len(r.Jobs) > 1 {
			title = jobLetter(i) + ": " + js.Dir
		}
		fmt.Fprintf(&b, "## %s\n\n", esc(title))
		keys := make([]string, 0, len(js.Resource))
		for k := range js.Resource {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteString("| attribute | value |\n|---|---|\n")
		for _, k := range keys {
			fmt.Fprintf(&b, "| %s | %s |\n", esc(k), esc(js.Resource[k]))
		}
		fmt.Fprintf(&b, "| start | %s |\n| end | %s |\n| step | %s |\n", js.Start, js.End, js.Step)
		lines, skipped := 0, 0
		for _, f := range js.Files {
			lines, skipped = lines+f.Lines, skipped+f.Skipped
		}
		fmt.Fprintf(&b, "| lines read | %d (%d skipped) |\n\n", lines, skipped)

		b.WriteString("### Panels\n\n| panel | unit | series | mean | min | max | last |\n|---|---|---|---:|---:|---:|---:|\n")
		for _, id := range js.order {
			p := js.Panels[id]
			if len(p.Series) == 0 {
				continue
			}
			for _, s := range p.Series {
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", esc(id), esc(p.Unit), esc(legend(s.Labels)),
					fmtFloat(s.Mean), fmtFloat(s.Min), fmtFloat(s.Max), fmtFloat(s.Last))
			}
		}
		b.WriteString("\n")
		if len(js.Spans) > 0 {
			b.WriteString("### Spans\n\n| service | span | count | errors | p50 s | p99 s |\n|---|---|---:|---:|---:|---:|\n")
			for _, s := range js.Spans {
				fmt.Fprintf(&b, "| %s | %s | %d | %d | %s | %s |\n", esc(s.Service), esc(s.Name), s.Count, s.Errors, fmtFloat(s.P50), fmtFloat(s.P99))
			}
			b.WriteString("\n")
		}
		if len(js.Logs.BySeverity) > 0 {
			sevs := slices.Sorted(maps.Keys(js.Logs.BySeverity))
			b.WriteString("### Logs\n\n| severity | records |\n|---|---:|\n")
			for _, k := range sevs {
				fmt.Fprintf(&b, "| %s | %d |\n", esc(k), js.Logs.BySeverity[k])
			}
			b.WriteString("\n")
			if len(js.Logs.TopErrors) > 0 {
				b.WriteString("| error body | count |\n|---|---:|\n")
				for _, e := range js.Logs.TopErrors {
					fmt.Fprintf(&b, "| %s | %d |\n", esc(e.Body), e.Count)
				}
				b.WriteString("\n")
			}
		}
		if len(js.Targets) > 0 {
			b.WriteString("### Scrape targets\n\n| job | instance | up | scrapes | down | gaps |\n|---|---|---:|---:|---:|---:|\n")
			for _, t := range js.Targets {
				fmt.Fprintf(&b, "| %s | %s | %.1f%% | %d | %d | %d |\n", esc(t.Job), esc(t.Instance), 100*t.UpRatio, t.Scrapes, t.Down, t.Gaps)
			}
			b.WriteString("\n")
		}
	}
	_, err := io.WriteString(w, r.secrets.Replace(b.String()))
	return err
}
