package config

import (
	"fmt"
	"strconv"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/relabel"
	"go.yaml.in/yaml/v3"
)

// relabelKeys are the keys of one relabel_configs / metric_relabel_configs entry.
var relabelKeys = []string{"source_labels", "separator", "regex", "modulus", "target_label", "replacement", "action"}

// relabelConfigs decodes a relabel_configs or metric_relabel_configs list
// strictly: unknown keys, a regex that does not compile, an unknown action
// or an entry Prometheus would refuse are errors naming file:line and the
// entry's field path. Every action of model/relabel is accepted.
func (d *dec) relabelConfigs(n *yaml.Node, path string) ([]*relabel.Config, error) {
	var out []*relabel.Config
	err := d.sequence(n, path, func(i int, vn *yaml.Node) error {
		ep := fmt.Sprintf("%s[%d]", path, i)
		rc, err := d.relabelConfig(vn, ep)
		out = append(out, rc)
		return err
	})
	return out, err
}

func (d *dec) relabelConfig(n *yaml.Node, path string) (*relabel.Config, error) {
	rc := relabel.DefaultRelabelConfig // action replace, separator ";", regex (.*), replacement $1
	if isNull(n) {
		return nil, d.errf(n, path, "empty relabel config")
	}
	err := d.mapping(n, path, relabelKeys, func(key string, kn, vn *yaml.Node) error {
		kp := join(path, key)
		switch key {
		case "source_labels":
			names, err := d.strList(vn, kp)
			if err != nil {
				return err
			}
			rc.SourceLabels = make(model.LabelNames, len(names))
			for i, s := range names {
				rc.SourceLabels[i] = model.LabelName(s)
			}
		case "separator":
			s, err := d.str(vn, kp)
			rc.Separator = s
			return err
		case "regex":
			s, err := d.str(vn, kp)
			if err != nil {
				return err
			}
			re, err := relabel.NewRegexp(s)
			if err != nil {
				return d.errf(vn, kp, "bad regex %q: %v", s, err)
			}
			rc.Regex = re
		case "modulus":
			s, err := d.str(vn, kp)
			if err != nil {
				return err
			}
			m, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return d.errf(vn, kp, "modulus must be a non-negative integer, got %q", s)
			}
			rc.Modulus = m
		case "target_label":
			s, err := d.str(vn, kp)
			rc.TargetLabel = s
			return err
		case "replacement":
			s, err := d.str(vn, kp)
			rc.Replacement = s
			return err
		case "action":
			s, err := d.str(vn, kp)
			if err != nil {
				return err
			}
			// Action's own decoder lowercases and knows every action.
			if err := rc.Action.UnmarshalYAML(func(v any) error { *v.(*string) = s; return nil }); err != nil {
				return d.errf(vn, kp, "%v", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := rc.Validate(model.UTF8Validation); err != nil {
		return nil, d.errf(n, path, "%v", err)
	}
	return &rc, nil
}
