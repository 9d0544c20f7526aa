package config

import (
	"fmt"
	"io"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/otelstep/otelstep/redact"
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
			k := o.GRPCKeepalive
			p("listen   %s grpc %s max_connection_idle=%s max_connection_age=%s", id, o.GRPCEndpoint, orInfinite(k.MaxConnectionIdle), orInfinite(k.MaxConnectionAge))
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
	p("logs     level=%s encoding=%s to %s (write errors to %s)", strings.ToLower(c.Service.LogLevel.String()), c.Service.Logs.Encoding,
		strings.Join(c.Service.Logs.OutputPaths, ","), strings.Join(c.Service.Logs.ErrorOutputPaths, ","))
	c.describeTelemetry(p)
	for _, pl := range c.Order() {
		p("pipeline %s: %s -> %s -> %s", pl.ID, strings.Join(pl.Receivers, ","), strings.Join(pl.Processors, ","), strings.Join(pl.Exporters, ","))
	}
	for _, id := range sortedKeys(c.Connectors) {
		cn := c.Connectors[id]
		var from, to []string
		for _, pl := range c.Service.Pipelines {
			if contains(pl.Exporters, id) {
				from = append(from, pl.ID)
			}
			if contains(pl.Receivers, id) {
				to = append(to, pl.ID)
			}
		}
		if len(from) == 0 {
			continue // defined, in no pipeline: not started
		}
		p("connect  %s: %s -> %s -> %s", id, strings.Join(from, ","), id, strings.Join(to, ","))
		if sm := cn.SpanMetrics; sm != nil {
			dims := make([]string, 0, len(sm.Dimensions))
			for _, d := range sm.Dimensions {
				if d.Default != nil {
					dims = append(dims, d.Name+"(default "+*d.Default+")")
				} else {
					dims = append(dims, d.Name)
				}
			}
			buckets := "default"
			if sm.Buckets != nil {
				bs := make([]string, len(sm.Buckets))
				for i, b := range sm.Buckets {
					bs[i] = b.String()
				}
				buckets = strings.Join(bs, ",")
			}
			temporality := "cumulative"
			if sm.Delta {
				temporality = "delta"
			}
			p("connect  %s: span metrics %s.calls and %s.duration (%s, %s) every %s, dimensions [%s], buckets [%s], at most %d series",
				id, sm.Namespace, sm.Namespace, sm.Unit, temporality, sm.FlushInterval, strings.Join(dims, ","), buckets, sm.CacheSize)
		}
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
		comp := e.Compression
		if e.CompressionLevel != 0 {
			comp += fmt.Sprintf("(level %d)", e.CompressionLevel)
		}
		p("sink     %s otlp/http %s compression=%s timeout=%s queue=%d queue_bytes=%s retry=%v headers=[%s]", id, redactURL(e.Endpoint), comp, e.Timeout, e.QueueSize, queueBytes(e.QueueBytes), e.Retry.Enabled, strings.Join(hdr, "; "))
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

// SafeURL is s as a log line may show it: without userinfo, query or
// fragment, which may hold credentials.
func SafeURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}

// Redactor hides every secret, in every form package redact knows.
func (c *Config) Redactor() *redact.Redactor {
	return redact.New(c.Secrets...)
}

// orInfinite shows a gRPC keepalive bound, 0 being none.
func orInfinite(d time.Duration) string {
	if d == 0 {
		return "infinite"
	}
	return d.String()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// queueBytes is an exporter's queue bound in bytes as describe prints it.
func queueBytes(n int64) string {
	if n == 0 {
		return "default"
	}
	return fmt.Sprint(n)
}
