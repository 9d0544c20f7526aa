package scraper

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/relabel"
)

// errTargetDropped means relabel_configs dropped the target: it is not scraped.
var errTargetDropped = errors.New("dropped by relabel_configs")

// targetLabels are t's labels as Prometheus sees them before relabeling:
// the static labels plus __address__, __scheme__, __metrics_path__,
// __scrape_interval__, __scrape_timeout__, __param_NAME and job.
func targetLabels(t Target) labels.Labels {
	m := map[string]string{}
	for k, v := range t.Labels {
		m[k] = v
	}
	m[model.AddressLabel] = t.Address
	m[model.SchemeLabel] = t.Scheme
	m[model.MetricsPathLabel] = t.MetricsPath
	m[model.ScrapeIntervalLabel] = model.Duration(t.Interval).String()
	m[model.ScrapeTimeoutLabel] = model.Duration(t.Timeout).String()
	m[model.JobLabel] = t.JobName
	if t.Instance != "" {
		m[model.InstanceLabel] = t.Instance
	}
	for k, v := range t.Params {
		if len(v) > 0 {
			m[model.ParamLabelPrefix+k] = v[0]
		}
	}
	return labels.FromMap(m)
}

// relabelTarget applies t.RelabelConfigs to t's labels and returns the
// target they describe: address, scheme, path, params and job from the
// reserved labels, instance defaulting to the address, and the other
// labels (those not starting with "__") as its static labels. It returns
// errTargetDropped when the rules drop it.
func relabelTarget(t Target) (Target, error) {
	if len(t.RelabelConfigs) == 0 {
		return t, nil
	}
	lb := labels.NewBuilder(targetLabels(t))
	if !relabel.ProcessBuilder(lb, t.RelabelConfigs...) {
		return t, errTargetDropped
	}
	ls := lb.Labels()
	out := t
	out.Address = ls.Get(model.AddressLabel)
	if out.Address == "" {
		return t, fmt.Errorf("relabel_configs left no %s", model.AddressLabel)
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
			name := strings.TrimPrefix(l.Name, model.ParamLabelPrefix)
			if len(params[name]) == 0 {
				params[name] = []string{l.Value}
			} else if params[name][0] != l.Value {
				params[name] = append([]string{l.Value}, params[name][1:]...)
			}
		case strings.HasPrefix(l.Name, model.ReservedLabelPrefix):
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
