package config

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// Describe writes what the config would run: listeners, targets,
// pipelines and sinks. Secrets are shown as <redacted>.
func (c *Config) Describe(w io.Writer) {
	red := c.Redactor()
	p := func(format string, args ...any) { fmt.Fprintf(w, "%s\n", red.Replace(fmt.Sprintf(format, args...))) }
	p("config %s: OK", c.File)
	for _, id := range sortedKeys(c.HealthCheck) {
		if contains(c.Service.Extensions, id) {
			h := c.HealthCheck[id]
			p("health   %s on http://%s%s", id, h.Endpoint, h.Path)
		}
	}
	for _, id := range sortedKeys(c.OTLP) {
		o := c.OTLP[id]
		if o.GRPCEndpoint != "" {
			p("listen   %s grpc %s", id, o.GRPCEndpoint)
		}
		if o.HTTPEndpoint != "" {
			p("listen   %s http %s", id, o.HTTPEndpoint)
		}
	}
	for _, id := range sortedKeys(c.Prometheus) {
		for _, sc := range c.Prometheus[id].ScrapeConfigs {
			for _, st := range sc.StaticConfigs {
				for _, t := range st.Targets {
					labels := make([]string, 0, len(st.Labels))
					for _, k := range sortedKeys(st.Labels) {
						labels = append(labels, k+"="+st.Labels[k])
					}
					p("scrape   %s job=%s %s://%s%s every %s timeout %s %s", id, sc.JobName, sc.Scheme, t, sc.MetricsPath, sc.Interval, sc.Timeout, strings.Join(labels, ","))
				}
			}
		}
	}
	for _, pl := range c.Service.Pipelines {
		p("pipeline %s: %s -> %s -> %s", pl.ID, strings.Join(pl.Receivers, ","), strings.Join(pl.Processors, ","), strings.Join(pl.Exporters, ","))
	}
	for _, id := range sortedKeys(c.Files) {
		p("sink     %s jsonl %s", id, c.Files[id].Path)
	}
	for _, id := range sortedKeys(c.OTLPHTTP) {
		e := c.OTLPHTTP[id]
		hdr := make([]string, 0, len(e.Headers))
		for _, k := range sortedKeys(e.Headers) {
			v := e.Headers[k]
			if IsSecretKey(k) {
				v = "<redacted>"
			}
			hdr = append(hdr, k+": "+v)
		}
		p("sink     %s otlp/http %s compression=%s timeout=%s queue=%d retry=%v headers=[%s]", id, redactURL(e.Endpoint), e.Compression, e.Timeout, e.QueueSize, e.Retry.Enabled, strings.Join(hdr, "; "))
	}
	for _, id := range sortedKeys(c.Resource) {
		for _, a := range c.Resource[id] {
			v := fmt.Sprint(a.Value)
			if IsSecretKey(a.Key) {
				v = "<redacted>"
			}
			if a.Value == nil {
				v = a.FromAttribute + a.ConvertedType
			}
			p("resource %s %s %s %s", id, a.Action, a.Key, v)
		}
	}
}

// Redactor replaces every secret with <redacted>.
func (c *Config) Redactor() *strings.Replacer {
	args := make([]string, 0, 2*len(c.Secrets))
	for _, s := range c.Secrets {
		args = append(args, s, "<redacted>")
	}
	return strings.NewReplacer(args...)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
