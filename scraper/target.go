package scraper

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/relabel"
)

// errTargetDropped means relabel_configs dropped the target: it is not scraped.
var errTargetDropped = errors.New("dropped by relabel_configs")

// targetLabels are t's labels as Prometheus's PopulateLabels has them
// before relabeling: the static labels with __address__ (the target's own,
// whatever a static label says), then job, __scrape_interval__,
// __scrape_timeout__, __metrics_path__, __scheme__ and __param_NAME from
// the scrape config where the static labels do not set them already.
func targetLabels(t Target) labels.Labels {
	m := map[string]string{}
	for k, v := range t.Labels {
		if v != "" {
			m[k] = v
		}
	}
	m[model.AddressLabel] = t.Address
	def := func(k, v string) {
		if m[k] == "" && v != "" {
			m[k] = v
		}
	}
	def(model.JobLabel, t.JobName)
	def(model.ScrapeIntervalLabel, model.Duration(t.Interval).String())
	def(model.ScrapeTimeoutLabel, model.Duration(t.Timeout).String())
	def(model.MetricsPathLabel, t.MetricsPath)
	def(model.SchemeLabel, t.Scheme)
	def(model.InstanceLabel, t.Instance)
	for k, v := range t.Params {
		if len(v) > 0 {
			def(model.ParamLabelPrefix+k, v[0])
		}
	}
	return labels.FromMap(m)
}

// relabelTarget returns the target t's labels describe, as Prometheus
// makes it (scrape.PopulateLabels, Target.URL): the labels of
// targetLabels, t.RelabelConfigs applied to them, then address, scheme,
// path, params, interval, timeout and job from the labels, instance
// defaulting to the address, and the labels not starting with "__" as the
// target's labels. A static label sets any of them as a rule would. It
// returns errTargetDropped when the rules drop the target, and an error
// naming the label when what they leave is not a target.
func relabelTarget(t Target) (Target, error) {
	lb := labels.NewBuilder(targetLabels(t))
	if len(t.RelabelConfigs) > 0 && !relabel.ProcessBuilder(lb, t.RelabelConfigs...) {
		return t, errTargetDropped
	}
	ls := lb.Labels()
	out := t
	out.Address = ls.Get(model.AddressLabel)
	if out.Address == "" {
		return t, fmt.Errorf("relabel_configs left no %s", model.AddressLabel)
	}
	var err error
	if out.Interval, err = labelDuration(ls, model.ScrapeIntervalLabel); err != nil {
		return t, err
	}
	if out.Timeout, err = labelDuration(ls, model.ScrapeTimeoutLabel); err != nil {
		return t, err
	}
	if out.Timeout > out.Interval {
		return t, fmt.Errorf("%s %s is longer than %s %s", model.ScrapeTimeoutLabel, out.Timeout, model.ScrapeIntervalLabel, out.Interval)
	}
	out.Scheme = ls.Get(model.SchemeLabel)
	out.MetricsPath = ls.Get(model.MetricsPathLabel)
	out.JobName = ls.Get(model.JobLabel)
	out.Instance = ls.Get(model.InstanceLabel)
	out.Labels = map[string]string{}
	params := url.Values{}
	for k, v := range t.Params {
		params[k] = v
	}
	ls.Range(func(l labels.Label) {
		switch {
		case strings.HasPrefix(l.Name, model.ParamLabelPrefix):
			// the label's value first; the config's other values stay
			name := strings.TrimPrefix(l.Name, model.ParamLabelPrefix)
			if len(params[name]) == 0 {
				params[name] = []string{l.Value}
			} else if params[name][0] != l.Value {
				params[name] = append([]string{l.Value}, params[name][1:]...)
			}
		case strings.HasPrefix(l.Name, model.ReservedLabelPrefix):
			// __meta_*, __tmp_* and the like: not the target's labels
		case l.Name == model.JobLabel, l.Name == model.InstanceLabel:
		default:
			out.Labels[l.Name] = l.Value
		}
	})
	if len(params) > 0 {
		out.Params = params
	}
	return out, nil
}

// labelDuration is the duration label name of ls holds, which must be more
// than zero.
func labelDuration(ls labels.Labels, name string) (time.Duration, error) {
	v := ls.Get(name)
	d, err := model.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s %q: %w", name, v, err)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%s %q: must be more than 0", name, v)
	}
	return time.Duration(d), nil
}
