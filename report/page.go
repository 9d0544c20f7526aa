package report

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

var (
	//go:embed assets/uPlot.iife.min.js
	uplotJS string
	//go:embed assets/uPlot.min.css
	uplotCSS string
	//go:embed assets/LICENSE
	uplotLicense string
	//go:embed page.html.tmpl
	pageTmpl string
	//go:embed page.js
	pageJS string
)

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"fmtf":  fmtFloat,
	"pct":   func(f float64) string { return strconv.FormatFloat(100*f, 'f', 1, 64) + "%" },
	"left":  func(start, total float64) string { return pctOf(start, total) },
	"width": func(d, total float64) string { return pctOf(max(d, total/1000), total) },
	"indent": func(d int) template.CSS {
		return template.CSS(fmt.Sprintf("padding-left:%dpx", 4+12*min(d, 20)))
	},
	"letter": jobLetter,
}).Parse(pageTmpl))

func pctOf(v, total float64) string {
	if total <= 0 {
		return "0%"
	}
	return strconv.FormatFloat(min(100, 100*v/total), 'f', 2, 64) + "%"
}

func jobLetter(i int) string {
	if i < 26 {
		return string(rune('A' + i))
	}
	return "J" + strconv.Itoa(i+1)
}

// fmtFloat writes a figure with 4 significant digits.
func fmtFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "–"
	case math.IsInf(f, 0):
		return strconv.FormatFloat(f, 'f', -1, 64)
	case f == 0:
		return "0"
	}
	return strconv.FormatFloat(f, 'g', 4, 64)
}

// otherMetric is a metric no panel charts, evaluated for the page's list.
type otherMetric struct {
	Info  MetricInfo
	Query string
	res   PanelResult
}

const (
	maxOtherSeriesPerMetric = 40
	maxOtherSeries          = 3000
)

// otherMetrics evaluates every metric family the panels do not name: a
// counter's rate, a gauge as it is, a histogram's median.
func otherMetrics(ctx context.Context, ev *evaluator, j *Job) []otherMetric {
	var used strings.Builder
	for _, p := range DefaultPanels() {
		used.WriteString(p.Query)
		used.WriteByte(' ')
	}
	usedQ := used.String()
	var out []otherMetric
	total := 0
	for _, mi := range j.Metrics() {
		if strings.Contains(usedQ, mi.Name) {
			continue
		}
		var q string
		switch mi.Type {
		case "counter":
			q = fmt.Sprintf("rate(%s[$__rate_interval])", mi.Name)
		case "histogram":
			q = fmt.Sprintf("histogram_quantile(0.5, sum by (le, job, instance) (rate(%s_bucket[$__rate_interval])))", mi.Name)
		default:
			q = mi.Name
		}
		om := otherMetric{Info: mi, Query: q}
		if total < maxOtherSeries {
			om.res = ev.Eval(ctx, Panel{ID: mi.Name, Title: mi.Name, Query: q})
			om.res.Series = om.res.Series[:min(len(om.res.Series), maxOtherSeriesPerMetric, maxOtherSeries-total)]
			total += len(om.res.Series)
		}
		out = append(out, om)
	}
	return out
}

// pageData is what the page's script draws, inline as JSON.
type pageData struct {
	Compare bool        `json:"compare"`
	X       []float64   `json:"x"` // Unix seconds, or seconds from each job's start when comparing
	Jobs    []string    `json:"jobs"`
	Panels  []chartData `json:"panels"`
	Other   []chartData `json:"other"`
}

type chartData struct {
	ID     string       `json:"id"`
	Title  string       `json:"title"`
	Unit   string       `json:"unit"`
	Query  string       `json:"query"`
	Help   string       `json:"help,omitempty"`
	Series []seriesData `json:"series"`
}

type seriesData struct {
	Name   string    `json:"name"`
	Job    int       `json:"job"`
	Values []jsonNum `json:"values"`
}

// jsonNum is a chart value: 6 significant digits, null for no value.
type jsonNum float64

func (f jsonNum) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, float64(f), 'g', 6, 64), nil
}

func legend(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		if k != "__name__" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+m[k])
	}
	if len(parts) == 0 {
		return "value"
	}
	return strings.Join(parts, " ")
}

func (r *Report) pageData() pageData {
	d := pageData{Compare: len(r.Jobs) > 1, Panels: []chartData{}, Other: []chartData{}, X: []float64{}}
	n := 0
	for _, js := range r.Jobs {
		n = max(n, js.grid.steps())
		d.Jobs = append(d.Jobs, js.Dir)
	}
	if len(r.Jobs) == 0 {
		return d
	}
	step := r.Jobs[0].grid.Step.Seconds()
	for i := 0; i < n; i++ {
		if d.Compare {
			d.X = append(d.X, float64(i)*step)
		} else {
			d.X = append(d.X, float64(r.Jobs[0].grid.Start)/1e3+float64(i)*step)
		}
	}
	series := func(ji int, p PanelResult) []seriesData {
		var out []seriesData
		for _, s := range p.Series {
			name := legend(s.Labels)
			if d.Compare {
				name = jobLetter(ji) + ": " + name
			}
			vals := make([]jsonNum, n)
			for i := range vals {
				vals[i] = jsonNum(math.NaN())
				if i < len(s.Values) {
					vals[i] = jsonNum(s.Values[i])
				}
			}
			out = append(out, seriesData{Name: name, Job: ji, Values: vals})
		}
		return out
	}
	for _, p := range r.Panels {
		cd := chartData{ID: p.ID, Title: p.Title, Unit: p.Unit, Query: p.Query, Series: []seriesData{}}
		for ji, js := range r.Jobs {
			cd.Series = append(cd.Series, series(ji, js.Panels[p.ID])...)
		}
		d.Panels = append(d.Panels, cd)
	}
	idx := map[string]int{}
	for ji, js := range r.Jobs {
		for _, om := range js.other {
			k, ok := idx[om.Info.Name]
			if !ok {
				k = len(d.Other)
				idx[om.Info.Name] = k
				d.Other = append(d.Other, chartData{ID: om.Info.Name, Title: om.Info.Name, Unit: om.Info.Type,
					Query: om.Query, Help: om.Info.Help, Series: []seriesData{}})
			}
			d.Other[k].Series = append(d.Other[k].Series, series(ji, om.res)...)
		}
	}
	slices.SortFunc(d.Other, func(a, b chartData) int { return strings.Compare(a.ID, b.ID) })
	return d
}

// diffRow is one figure of the jobs compared.
type diffRow struct {
	Figure string
	Unit   string
	Values []string
	Diffs  []string // per job after the first: the difference to the first
}

func (r *Report) diffRows() []diffRow {
	var rows []diffRow
	add := func(fig, unit string, vals []float64) {
		row := diffRow{Figure: fig, Unit: unit}
		for i, v := range vals {
			row.Values = append(row.Values, fmtFloat(v))
			if i == 0 {
				continue
			}
			d := v - vals[0]
			s := fmtFloat(d)
			if d > 0 {
				s = "+" + s
			}
			if vals[0] != 0 && !math.IsNaN(d) {
				s += fmt.Sprintf(" (%+.1f%%)", 100*d/math.Abs(vals[0]))
			}
			row.Diffs = append(row.Diffs, s)
		}
		rows = append(rows, row)
	}
	for _, p := range r.Panels {
		vals := make([]float64, len(r.Jobs))
		any := false
		for i, js := range r.Jobs {
			vals[i] = seriesMean(js.Panels[p.ID].Series)
			any = any || !math.IsNaN(vals[i])
		}
		if any {
			add(p.Title+" (mean)", p.Unit, vals)
		}
	}
	spans := make([]float64, len(r.Jobs))
	errs := make([]float64, len(r.Jobs))
	logErrs := make([]float64, len(r.Jobs))
	dur := make([]float64, len(r.Jobs))
	for i, js := range r.Jobs {
		for _, s := range js.Spans {
			spans[i] += float64(s.Count)
			errs[i] += float64(s.Errors)
		}
		logErrs[i] = float64(js.Logs.Errors)
		dur[i] = float64(js.job.End-js.job.Start) / 1e3
	}
	add("duration", "s", dur)
	add("spans", "", spans)
	add("span errors", "", errs)
	add("error log records", "", logErrs)
	return rows
}

// seriesMean is the mean of a panel's series' means: the panel's figure
// when it has one series.
func seriesMean(ss []SeriesResult) float64 {
	if len(ss) == 0 {
		return math.NaN()
	}
	sum := 0.0
	for _, s := range ss {
		sum += s.Mean
	}
	return sum / float64(len(ss))
}

type pageJob struct {
	*JobSummary
	Letter   string
	Identity [][2]string
	Span     string
	Traces   []Trace
	Severity [][2]string
	Empty    []string // panels without data
	Lines    int
	Skipped  int
}

var identityKeys = []string{"benchmark", "model", "run_id", "slurm_job_id", "cluster", "user"}

// WritePage writes the self-contained HTML page.
func (r *Report) WritePage(w io.Writer) error {
	d := r.pageData()
	raw, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("report: page data: %w", err)
	}
	// The secrets' redaction runs over the data, never over the script.
	data := r.secrets.Replace(string(raw))
	var jobs []pageJob
	for i, js := range r.Jobs {
		pj := pageJob{JobSummary: js, Letter: jobLetter(i), Traces: js.traces}
		for _, k := range identityKeys {
			pj.Identity = append(pj.Identity, [2]string{k, orDash(js.Resource[k])})
		}
		rest := make([]string, 0, len(js.Resource))
		for k := range js.Resource {
			if !slices.Contains(identityKeys, k) {
				rest = append(rest, k)
			}
		}
		slices.Sort(rest)
		for _, k := range rest {
			pj.Identity = append(pj.Identity, [2]string{k, js.Resource[k]})
		}
		if js.Start != "" {
			pj.Span = fmt.Sprintf("%s → %s (%s)", time.UnixMilli(js.job.Start).UTC().Format("2006-01-02 15:04:05"),
				time.UnixMilli(js.job.End).UTC().Format("15:04:05 MST"), (time.Duration(js.job.End-js.job.Start) * time.Millisecond).String())
		}
		sevs := make([]string, 0, len(js.Logs.BySeverity))
		for k := range js.Logs.BySeverity {
			sevs = append(sevs, k)
		}
		slices.Sort(sevs)
		for _, k := range sevs {
			pj.Severity = append(pj.Severity, [2]string{k, strconv.Itoa(js.Logs.BySeverity[k])})
		}
		for _, f := range js.Files {
			pj.Lines += f.Lines
			pj.Skipped += f.Skipped
		}
		jobs = append(jobs, pj)
	}
	var drawn, empty []Panel
	for _, p := range r.Panels {
		has := false
		for _, js := range r.Jobs {
			has = has || len(js.Panels[p.ID].Series) > 0
		}
		if has {
			drawn = append(drawn, p)
		} else {
			empty = append(empty, p)
		}
	}
	var buf bytes.Buffer
	err = pageTemplate.Execute(&buf, map[string]any{
		"Jobs":     jobs,
		"Compare":  len(jobs) > 1,
		"Panels":   drawn,
		"Empty":    empty,
		"Diff":     r.diffRows(),
		"Data":     template.JS(strings.ReplaceAll(data, "</", `<\/`)),
		"UPlotJS":  template.JS(uplotJS),
		"UPlotCSS": template.CSS(uplotCSS),
		"PageJS":   template.JS(pageJS),
		"License":  uplotLicense,
	})
	if err != nil {
		return fmt.Errorf("report: page: %w", err)
	}
	// Tables hold labels, names and bodies: redacted as the data is. The
	// script and styles are written as they are.
	out := buf.String()
	if !r.secrets.Empty() {
		out = redactOutsideScripts(out, r.secrets.Replace)
	}
	_, err = io.WriteString(w, out)
	return err
}

// redactOutsideScripts applies f to the page's text outside <script> and
// <style> elements, whose code must not be altered (the data script is
// redacted before it is written).
func redactOutsideScripts(page string, f func(string) string) string {
	var b strings.Builder
	for {
		i := strings.Index(page, "<script")
		j := strings.Index(page, "<style")
		if j >= 0 && (i < 0 || j < i) {
			i = j
		}
		if i < 0 {
			b.WriteString(f(page))
			return b.String()
		}
		end := "</script>"
		if strings.HasPrefix(page[i:], "<style") {
			end = "</style>"
		}
		k := strings.Index(page[i:], end)
		if k < 0 {
			b.WriteString(f(page))
			return b.String()
		}
		b.WriteString(f(page[:i]))
		b.WriteString(page[i : i+k+len(end)])
		page = page[i+k+len(end):]
	}
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}
