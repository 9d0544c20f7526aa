package config

// The service section (pipelines, telemetry, extensions) and the checks of
// what it references against the components the file declares.

import (
	"fmt"
	"log/slog"
	"strings"

	"go.yaml.in/yaml/v3"
)

func (c *Config) service(d *dec, v *yaml.Node) error {
	return d.mapping(v, "service", []string{"extensions", "telemetry", "pipelines"}, func(key string, kn, vn *yaml.Node) error {
		kp := join("service", key)
		switch key {
		case "extensions":
			var err error
			c.Service.Extensions, err = d.strList(vn, kp)
			return err
		case "telemetry":
			return d.mapping(vn, kp, []string{"logs", "metrics", "resource"}, func(key string, kn, vn *yaml.Node) error {
				lp := join(kp, key)
				switch key {
				case "metrics":
					return c.telemetryMetrics(d, vn, lp)
				case "resource":
					return c.telemetryResource(d, vn, lp)
				}
				return d.mapping(vn, lp, []string{"level", "encoding", "output_paths", "error_output_paths", "sampling"}, func(key string, kn, vn *yaml.Node) error {
					if key != "level" {
						return c.logsKey(d, key, kn, vn, join(lp, key))
					}
					s, err := d.str(vn, join(lp, key))
					if err != nil {
						return err
					}
					switch strings.ToLower(s) {
					case "debug":
						c.Service.LogLevel = slog.LevelDebug
					case "info":
						c.Service.LogLevel = slog.LevelInfo
					case "warn":
						c.Service.LogLevel = slog.LevelWarn
					case "error":
						c.Service.LogLevel = slog.LevelError
					default:
						return d.errf(vn, join(lp, key), "unknown log level %q (debug, info, warn, error)", s)
					}
					return nil
				})
			})
		case "pipelines":
			return d.mapping(vn, kp, nil, func(id string, kn, vn *yaml.Node) error {
				pp := join(kp, id)
				sig, _, _ := strings.Cut(id, "/")
				if sig != "metrics" && sig != "traces" && sig != "logs" {
					return d.errf(kn, pp, "unknown pipeline type %q (metrics, traces or logs)", sig)
				}
				p := Pipeline{ID: id, Signal: sig, Line: kn.Line}
				err := d.mapping(vn, pp, []string{"receivers", "processors", "exporters"}, func(key string, kn, vn *yaml.Node) error {
					list, err := d.strList(vn, join(pp, key))
					var lines []int
					if vn.Kind == yaml.SequenceNode {
						for _, item := range vn.Content {
							lines = append(lines, item.Line)
						}
					}
					switch key {
					case "receivers":
						p.Receivers, p.ReceiverLines = list, lines
					case "processors":
						p.Processors = list
					case "exporters":
						p.Exporters, p.ExporterLines = list, lines
					}
					return err
				})
				c.Service.Pipelines = append(c.Service.Pipelines, p)
				return err
			})
		}
		return nil
	})
}

// validate checks references between the service section and components.
func (c *Config) validate(d *dec, doc *yaml.Node) error {
	line := func(path ...string) int {
		n := doc
		for _, p := range path {
			var next *yaml.Node
			if n == nil || n.Kind != yaml.MappingNode {
				return 0
			}
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == p {
					next = n.Content[i+1]
					if p == path[len(path)-1] {
						return n.Content[i].Line
					}
				}
			}
			n = next
		}
		return 0
	}
	var errs errList
	fail := func(l int, path, format string, args ...any) {
		errs = append(errs, &Error{File: c.File, Line: l, Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	// defined: id is a component of a section; one that failed to decode
	// was reported already, and a reference to it is not.
	defined := func(id string, in ...bool) bool {
		for _, ok := range in {
			if ok {
				return true
			}
		}
		return d.ids[id]
	}
	for _, e := range c.Service.Extensions {
		if _, ok := c.HealthCheck[e]; !defined(e, ok) {
			fail(line("service", "extensions"), "service.extensions", "extension %q is not defined under extensions", e)
		}
	}
	if len(c.Service.Pipelines) == 0 {
		fail(line("service"), "service.pipelines", "no pipelines defined")
	}
	fileUse := map[string]string{}
	for _, p := range c.Service.Pipelines {
		pp := "service.pipelines." + p.ID
		if len(p.Receivers) == 0 {
			fail(p.Line, pp, "pipeline has no receivers")
		}
		if len(p.Exporters) == 0 {
			fail(p.Line, pp, "pipeline has no exporters")
		}
		for i, r := range p.Receivers {
			if _, ok := c.Prometheus[r]; ok {
				if p.Signal != "metrics" {
					fail(p.itemLine(p.ReceiverLines, i), pp+".receivers", "receiver %q gives only metrics, not %s", r, p.Signal)
				}
				continue
			}
			_, o := c.OTLP[r]
			_, cn := c.Connectors[r] // checked by pipelineGraph
			if !defined(r, o, cn) {
				fail(p.itemLine(p.ReceiverLines, i), pp+".receivers", "receiver %q is not defined under receivers or connectors", r)
			}
		}
		for _, pr := range p.Processors {
			_, b := c.Batch[pr]
			_, r := c.Resource[pr]
			_, tr := c.Transform[pr]
			if !defined(pr, b, r, tr) {
				fail(p.Line, pp+".processors", "processor %q is not defined under processors", pr)
			}
		}
		for i, e := range p.Exporters {
			if _, ok := c.Files[e]; ok {
				if prev, ok := fileUse[e]; ok && prev != p.Signal {
					fail(p.itemLine(p.ExporterLines, i), pp+".exporters", "exporter %q is already used by a %s pipeline: one JSONL file holds one signal", e, prev)
				}
				fileUse[e] = p.Signal
				continue
			}
			_, h := c.OTLPHTTP[e]
			_, cn := c.Connectors[e] // checked by pipelineGraph
			if !defined(e, h, cn) {
				fail(p.itemLine(p.ExporterLines, i), pp+".exporters", "exporter %q is not defined under exporters or connectors", e)
			}
		}
	}
	if len(errs) == 0 {
		if err := c.pipelineGraph(); err != nil {
			errs = errs.add(err)
		}
	}
	paths := map[string]string{}
	for _, id := range sortedKeys(c.Files) {
		f := c.Files[id]
		if f.Path == "" {
			continue
		}
		if other, ok := paths[f.Path]; ok {
			fail(line("exporters", id), "exporters."+id, "path %q is also used by %s", f.Path, other)
		}
		paths[f.Path] = id
	}
	return errs.err()
}
