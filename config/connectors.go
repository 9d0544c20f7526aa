package config

import (
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Connector is one connectors entry: an exporter of the pipelines of its
// From signal that is a receiver of the pipelines of its To signal, as in
// the collector.
type Connector struct {
	ID       string
	Type     string // span_metrics
	From, To string // the signals it takes and gives
	Line     int

	SpanMetrics *SpanMetrics // for Type span_metrics
}

// connectorSignals are the connector types otelstep implements, with the
// signals they take and give. The collector's contrib v0.161 spells the
// span metrics connector span_metrics; earlier versions spanmetrics.
var connectorSignals = map[string][2]string{
	"span_metrics": {"traces", "metrics"},
	"spanmetrics":  {"traces", "metrics"},
}

// SpanMetrics is the span_metrics connector's config, with the collector's
// defaults filled in.
type SpanMetrics struct {
	// Buckets are histogram.explicit.buckets; nil for the collector's
	// default buckets.
	Buckets       []time.Duration
	Dimensions    []SpanMetricsDimension
	FlushInterval time.Duration // metrics_flush_interval, default 60s
	Namespace     string        // default traces.span.metrics
	Unit          string        // histogram.unit: ms (default) or s
	Delta         bool          // aggregation_temporality: AGGREGATION_TEMPORALITY_DELTA
	CacheSize     int           // dimensions_cache_size, default 1000
}

// SpanMetricsDimension is one dimensions entry: a span attribute, else a
// resource attribute, else Default if set, else left out.
type SpanMetricsDimension struct {
	Name    string
	Default *string
}

func (c *Config) connector(d *dec) func(id, typ, path string, k, v *yaml.Node) error {
	return func(id, typ, path string, k, v *yaml.Node) error {
		sig := connectorSignals[typ]
		cn := &Connector{ID: id, Type: typ, From: sig[0], To: sig[1], Line: k.Line}
		c.Connectors[id] = cn
		var err error
		cn.SpanMetrics, err = d.spanMetrics(v, path)
		return err
	}
}

func (d *dec) spanMetrics(v *yaml.Node, path string) (*SpanMetrics, error) {
	sm := &SpanMetrics{FlushInterval: 60 * time.Second, Namespace: "traces.span.metrics", Unit: "ms", CacheSize: 1000}
	keys := []string{"histogram", "dimensions", "metrics_flush_interval", "namespace", "aggregation_temporality", "dimensions_cache_size"}
	err := d.mapping(v, path, keys, func(key string, kn, vn *yaml.Node) error {
		kp := join(path, key)
		var err error
		switch key {
		case "histogram":
			err = d.mapping(vn, kp, []string{"explicit", "unit"}, func(key string, kn, vn *yaml.Node) error {
				hp := join(kp, key)
				if key == "unit" {
					u, err := d.str(vn, hp)
					if err == nil && u != "ms" && u != "s" {
						err = d.errf(vn, hp, "unit %q: want ms or s", u)
					}
					sm.Unit = u
					return err
				}
				return d.mapping(vn, hp, []string{"buckets"}, func(key string, kn, vn *yaml.Node) error {
					bp := join(hp, key)
					sm.Buckets = []time.Duration{}
					return d.sequence(vn, bp, func(i int, vn *yaml.Node) error {
						b, err := d.duration(vn, fmt.Sprintf("%s[%d]", bp, i))
						if err == nil && len(sm.Buckets) > 0 && b <= sm.Buckets[len(sm.Buckets)-1] {
							err = d.errf(vn, fmt.Sprintf("%s[%d]", bp, i), "bucket %s is not above the one before it (%s): bounds must increase", b, sm.Buckets[len(sm.Buckets)-1])
						}
						sm.Buckets = append(sm.Buckets, b)
						return err
					})
				})
			})
		case "dimensions":
			seen := map[string]bool{}
			err = d.sequence(vn, kp, func(i int, vn *yaml.Node) error {
				dp := fmt.Sprintf("%s[%d]", kp, i)
				var dim SpanMetricsDimension
				err := d.mapping(vn, dp, []string{"name", "default"}, func(key string, kn, vn *yaml.Node) error {
					s, err := d.str(vn, join(dp, key))
					if key == "name" {
						dim.Name = s
					} else {
						dim.Default = &s
					}
					return err
				})
				if err != nil {
					return err
				}
				switch {
				case dim.Name == "":
					return d.errf(vn, dp, "name is required")
				case seen[dim.Name]:
					return d.errf(vn, dp, "dimension %q is listed twice", dim.Name)
				case contains([]string{"service.name", "span.name", "span.kind", "status.code"}, dim.Name):
					return d.errf(vn, dp, "dimension %q is always added: it cannot be listed", dim.Name)
				}
				seen[dim.Name] = true
				sm.Dimensions = append(sm.Dimensions, dim)
				return nil
			})
		case "metrics_flush_interval":
			sm.FlushInterval, err = d.duration(vn, kp)
			if err == nil && sm.FlushInterval <= 0 {
				err = d.errf(vn, kp, "must be positive")
			}
		case "namespace":
			sm.Namespace, err = d.str(vn, kp)
		case "aggregation_temporality":
			var s string
			s, err = d.str(vn, kp)
			switch s {
			case "AGGREGATION_TEMPORALITY_CUMULATIVE":
			case "AGGREGATION_TEMPORALITY_DELTA":
				sm.Delta = true
			default:
				if err == nil {
					err = d.errf(vn, kp, "unknown temporality %q (AGGREGATION_TEMPORALITY_CUMULATIVE or AGGREGATION_TEMPORALITY_DELTA)", s)
				}
			}
		case "dimensions_cache_size":
			sm.CacheSize, err = d.integer(vn, kp)
			if err == nil && sm.CacheSize == 0 {
				err = d.errf(vn, kp, "must be positive")
			}
		}
		return err
	})
	return sm, err
}

// pipelineGraph checks how the pipelines use the connectors: each used one
// must be an exporter of at least one pipeline of its From signal and a
// receiver of at least one of its To signal, and the pipelines linked
// through connectors must not form a cycle (a batch would go round
// forever).
func (c *Config) pipelineGraph() error {
	fail := func(l int, path, format string, args ...any) error {
		return &Error{File: c.File, Line: l, Path: path, Msg: fmt.Sprintf(format, args...)}
	}
	type use struct {
		pipeline string
		line     int
	}
	asExporter, asReceiver := map[string][]use{}, map[string][]use{}
	for _, p := range c.Service.Pipelines {
		for i, r := range p.Receivers {
			cn, ok := c.Connectors[r]
			if !ok {
				continue
			}
			if p.Signal != cn.To {
				return fail(p.itemLine(p.ReceiverLines, i), "service.pipelines."+p.ID+".receivers",
					"connector %q (line %d) gives %s, so it can be a receiver of %s pipelines only, not of %s pipeline %q", r, cn.Line, cn.To, cn.To, p.Signal, p.ID)
			}
			asReceiver[r] = append(asReceiver[r], use{p.ID, p.itemLine(p.ReceiverLines, i)})
		}
		for i, e := range p.Exporters {
			cn, ok := c.Connectors[e]
			if !ok {
				continue
			}
			if p.Signal != cn.From {
				return fail(p.itemLine(p.ExporterLines, i), "service.pipelines."+p.ID+".exporters",
					"connector %q (line %d) takes %s, so it can be an exporter of %s pipelines only, not of %s pipeline %q", e, cn.Line, cn.From, cn.From, p.Signal, p.ID)
			}
			asExporter[e] = append(asExporter[e], use{p.ID, p.itemLine(p.ExporterLines, i)})
		}
	}
	for _, id := range sortedKeys(c.Connectors) {
		cn := c.Connectors[id]
		ex, re := asExporter[id], asReceiver[id]
		switch {
		case len(ex) > 0 && len(re) == 0:
			return fail(ex[0].line, "service.pipelines."+ex[0].pipeline+".exporters",
				"connector %q (line %d) is an exporter of pipeline %q but a receiver of no %s pipeline: what it makes would go nowhere", id, cn.Line, ex[0].pipeline, cn.To)
		case len(re) > 0 && len(ex) == 0:
			return fail(re[0].line, "service.pipelines."+re[0].pipeline+".receivers",
				"connector %q (line %d) is a receiver of pipeline %q but an exporter of no %s pipeline: it would never get anything", id, cn.Line, re[0].pipeline, cn.From)
		}
	}
	// Depth-first search over pipeline -> connector -> pipeline edges.
	next := map[string][]string{} // pipeline id -> pipelines it feeds
	for id, ex := range asExporter {
		for _, from := range ex {
			for _, to := range asReceiver[id] {
				next[from.pipeline] = append(next[from.pipeline], to.pipeline)
			}
		}
	}
	const (
		unseen = iota
		onPath
		done
	)
	mark := map[string]int{}
	var path []string
	var visit func(p string) error
	visit = func(p string) error {
		mark[p] = onPath
		path = append(path, p)
		for _, q := range next[p] {
			switch mark[q] {
			case onPath:
				i := indexOf(path, q)
				cycle := append(append([]string(nil), path[i:]...), q)
				return fail(c.pipelineLine(q), "service.pipelines."+q,
					"pipelines form a cycle through connectors: %s", strings.Join(cycle, " -> "))
			case unseen:
				if err := visit(q); err != nil {
					return err
				}
			}
		}
		path = path[:len(path)-1]
		mark[p] = done
		return nil
	}
	for _, p := range c.Service.Pipelines {
		if mark[p.ID] == unseen {
			if err := visit(p.ID); err != nil {
				return err
			}
		}
	}
	return nil
}

// Order returns the pipelines so that every pipeline comes before those it
// feeds through connectors: the order to drain them in at stop. The config
// has been checked to have no cycle.
func (c *Config) Order() []Pipeline {
	feeds := map[string][]string{}
	for _, p := range c.Service.Pipelines {
		for _, e := range p.Exporters {
			if _, ok := c.Connectors[e]; !ok {
				continue
			}
			for _, q := range c.Service.Pipelines {
				if contains(q.Receivers, e) {
					feeds[p.ID] = append(feeds[p.ID], q.ID)
				}
			}
		}
	}
	byID := map[string]Pipeline{}
	for _, p := range c.Service.Pipelines {
		byID[p.ID] = p
	}
	seen := map[string]bool{}
	var rev []Pipeline
	var visit func(id string)
	visit = func(id string) {
		if seen[id] {
			return
		}
		seen[id] = true
		for _, q := range feeds[id] {
			visit(q)
		}
		rev = append(rev, byID[id])
	}
	for _, p := range c.Service.Pipelines {
		visit(p.ID)
	}
	out := make([]Pipeline, len(rev))
	for i, p := range rev {
		out[len(rev)-1-i] = p
	}
	return out
}

func (c *Config) pipelineLine(id string) int {
	for _, p := range c.Service.Pipelines {
		if p.ID == id {
			return p.Line
		}
	}
	return 0
}

func (p Pipeline) itemLine(lines []int, i int) int {
	if i < len(lines) {
		return lines[i]
	}
	return p.Line
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}
