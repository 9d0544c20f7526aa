package config

import (
	"fmt"

	"github.com/otelstep/otelstep/resource/ottl"
	"go.yaml.in/yaml/v3"
)

// The transform processor's statements are OTTL, parsed by package
// resource/ottl while the config loads, so a statement outside the subset
// it implements is refused at startup with its line.

func (d *dec) transform(v *yaml.Node, path string) (*Transform, error) {
	t := &Transform{ErrorMode: "propagate"}
	err := d.mapping(v, path, []string{"error_mode", "metric_statements", "trace_statements", "log_statements"}, func(key string, kn, vn *yaml.Node) error {
		kp := join(path, key)
		if key == "error_mode" {
			s, err := d.str(vn, kp)
			if err == nil && s != "propagate" && s != "ignore" && s != "silent" {
				err = d.errf(vn, kp, "unknown error_mode %q (propagate, ignore or silent)", s)
			}
			t.ErrorMode = s
			return err
		}
		signal := map[string]string{"metric_statements": "metrics", "trace_statements": "traces", "log_statements": "logs"}[key]
		return d.sequence(vn, kp, func(i int, vn *yaml.Node) error {
			gp := fmt.Sprintf("%s[%d]", kp, i)
			if vn.Kind == yaml.ScalarNode {
				return d.errf(vn, gp, "statements without a context are not implemented: use {context: ..., statements: [...]}")
			}
			var ctx string
			var stmts *yaml.Node
			err := d.mapping(vn, gp, []string{"context", "statements", "conditions"}, func(key string, kn, vn *yaml.Node) error {
				var err error
				switch key {
				case "context":
					ctx, err = d.str(vn, join(gp, key))
				case "statements":
					stmts = vn
				case "conditions":
					err = d.errf(kn, join(gp, key), "conditions are not implemented")
				}
				return err
			})
			if err != nil {
				return err
			}
			switch ottl.Context(ctx) {
			case ottl.ContextMetric, ottl.ContextResource:
				if ctx == "metric" && signal != "metrics" {
					return d.errf(vn, join(gp, "context"), "context metric is only valid in metric_statements")
				}
			case "":
				return d.errf(vn, gp, "context is required")
			default:
				return d.errf(vn, join(gp, "context"), "context %q is not implemented (metric, resource)", ctx)
			}
			return d.sequence(stmts, join(gp, "statements"), func(j int, sn *yaml.Node) error {
				sp := fmt.Sprintf("%s.statements[%d]", gp, j)
				text, err := d.str(sn, sp)
				if err != nil {
					return err
				}
				st, perr := ottl.Parse(text, ottl.Context(ctx))
				if perr != nil {
					return d.errf(sn, sp, "statement %q: %v", text, perr)
				}
				t.Statements = append(t.Statements, Statement{Signal: signal, Line: sn.Line, Statement: st})
				return nil
			})
		})
	})
	return t, err
}
