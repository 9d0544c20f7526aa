package config

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/relabel"
	"go.yaml.in/yaml/v3"
)

// The prometheus receiver's config: its scrape configs, their targets and
// limits, read with Prometheus's names, defaults and inheritance from global.

// Prometheus is receivers.prometheus.
type Prometheus struct {
	ScrapeInterval time.Duration // global.scrape_interval, default 1m
	ScrapeTimeout  time.Duration // global.scrape_timeout, default 10s
	ExternalLabels map[string]string
	ScrapeConfigs  []ScrapeConfig
	BodySizeLimit  int64
	// Limits are global's sample_limit, label_limit,
	// label_name_length_limit and label_value_length_limit: a scrape
	// config's own (when not 0) replace them one by one.
	Limits             ScrapeLimits
	TrimMetricSuffixes bool
	// MemoryLimit is memory_limit_mib, otelstep's own key beside config:
	// the most, in bytes, the receiver's scrapes may hold at once (pages
	// being read and converted, the series kept between scrapes). 0 is
	// unset (the scraper's default), -1 no bound (memory_limit_mib: 0).
	MemoryLimit int64
}

// maxMemoryLimitMiB is the most memory_limit_mib may be (1 TiB).
const maxMemoryLimitMiB = 1 << 20

// ScrapeLimits are what one scrape may hold, as Prometheus's scrape
// config has them: a scrape whose page breaks one fails (up = 0). 0 is no
// limit of the config's own; a label name or value longer than
// MaxLabelLength fails the scrape whatever the config says.
type ScrapeLimits struct {
	// Samples (sample_limit) is the most samples a page may have once
	// metric_relabel_configs have dropped theirs.
	Samples int
	// Labels (label_limit) is the most labels a series may have after
	// metric relabeling, __name__ and the target's labels included.
	Labels int
	// LabelNameLength (label_name_length_limit) and LabelValueLength
	// (label_value_length_limit) are the longest, in bytes, a label name
	// and a label value (the metric name included) may be after metric
	// relabeling.
	LabelNameLength  int
	LabelValueLength int
}

// MaxLabelLength is the longest label name or value, in bytes, a scrape
// may hold (16 MiB): the most the Prometheus labels library encodes (a
// longer one panics in it). label_name_length_limit and
// label_value_length_limit may be no more.
const MaxLabelLength = 1 << 24

// or is l with the limits it leaves at 0 taken from def, as Prometheus
// fills a scrape config's from global.
func (l ScrapeLimits) or(def ScrapeLimits) ScrapeLimits {
	pick := func(v, d int) int {
		if v == 0 {
			return d
		}
		return v
	}
	return ScrapeLimits{Samples: pick(l.Samples, def.Samples), Labels: pick(l.Labels, def.Labels),
		LabelNameLength: pick(l.LabelNameLength, def.LabelNameLength), LabelValueLength: pick(l.LabelValueLength, def.LabelValueLength)}
}

// limitKeys are the keys of ScrapeLimits, in global and in a scrape config.
var limitKeys = []string{"sample_limit", "label_limit", "label_name_length_limit", "label_value_length_limit"}

// scrapeLimit reads key (one of limitKeys) into l: a count of 0 or more,
// a length no more than MaxLabelLength.
func (d *dec) scrapeLimit(key string, n *yaml.Node, path string, l *ScrapeLimits) error {
	v, err := d.integer(n, path)
	if err != nil {
		return err
	}
	switch key {
	case "sample_limit":
		l.Samples = v
	case "label_limit":
		l.Labels = v
	case "label_name_length_limit", "label_value_length_limit":
		if v > MaxLabelLength {
			return d.errf(n, path, "%s %d is more than %d bytes, the longest label otelstep can hold", key, v, MaxLabelLength)
		}
		if key == "label_name_length_limit" {
			l.LabelNameLength = v
		} else {
			l.LabelValueLength = v
		}
	}
	return nil
}

// ScrapeConfig is one scrape_configs entry.
type ScrapeConfig struct {
	JobName         string
	Interval        time.Duration
	Timeout         time.Duration
	MetricsPath     string
	Scheme          string
	Params          url.Values
	HonorLabels     bool
	HonorTimestamps bool
	BodySizeLimit   int64
	// Limits are the scrape config's limits, global's where it sets none.
	Limits ScrapeLimits
	// ProxyFromEnvironment (proxy_from_environment) scrapes through the
	// proxy HTTP_PROXY, HTTPS_PROXY and NO_PROXY name; false, as in
	// Prometheus, scrapes directly.
	ProxyFromEnvironment bool
	StaticConfigs        []StaticConfig
	// RelabelConfigs (relabel_configs) rewrite or drop each target's labels.
	RelabelConfigs []*relabel.Config
	// MetricRelabelConfigs (metric_relabel_configs) rewrite or drop series.
	MetricRelabelConfigs []*relabel.Config
	Line                 int
}

// StaticConfig is one static_configs entry.
type StaticConfig struct {
	Targets []string
	Labels  map[string]string
}

func (d *dec) prometheus(v *yaml.Node, path string) (*Prometheus, error) {
	p := &Prometheus{ScrapeInterval: time.Minute, ScrapeTimeout: 10 * time.Second}
	var cfgNode *yaml.Node
	err := d.mapping(v, path, []string{"config", "trim_metric_suffixes", "memory_limit_mib"}, func(key string, kn, vn *yaml.Node) error {
		if key == "memory_limit_mib" {
			mib, err := d.integer(vn, join(path, key))
			if err != nil {
				return err
			}
			switch {
			case mib > maxMemoryLimitMiB:
				return d.errf(vn, join(path, key), "memory_limit_mib %d: want 0 (no bound) to %d", mib, maxMemoryLimitMiB)
			case mib == 0:
				p.MemoryLimit = -1
			default:
				p.MemoryLimit = int64(mib) << 20
			}
			return nil
		}
		if key == "trim_metric_suffixes" {
			b, err := d.boolean(vn, join(path, key))
			if b {
				return d.errf(vn, join(path, key), "trim_metric_suffixes: true is not implemented")
			}
			return err
		}
		cfgNode = vn
		return nil
	})
	if err != nil {
		return nil, err
	}
	path = join(path, "config")
	if cfgNode == nil {
		return nil, d.errf(v, path, "receivers.prometheus needs a config with scrape_configs")
	}
	var scNode *yaml.Node
	err = d.mapping(cfgNode, path, []string{"global", "scrape_configs"}, func(key string, kn, vn *yaml.Node) error {
		if key == "scrape_configs" {
			scNode = vn
			return nil
		}
		gp := join(path, key)
		known := append([]string{"scrape_interval", "scrape_timeout", "external_labels", "body_size_limit"}, limitKeys...)
		return d.mapping(vn, gp, known, func(key string, kn, vn *yaml.Node) error {
			var err error
			switch key {
			case "scrape_interval":
				p.ScrapeInterval, err = d.duration(vn, join(gp, key))
			case "scrape_timeout":
				p.ScrapeTimeout, err = d.duration(vn, join(gp, key))
			case "external_labels":
				p.ExternalLabels, err = d.strMap(vn, join(gp, key))
			case "body_size_limit":
				p.BodySizeLimit, err = d.byteSize(vn, join(gp, key))
			default:
				err = d.scrapeLimit(key, vn, join(gp, key), &p.Limits)
			}
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	if len(p.ExternalLabels) > 0 {
		return nil, d.errf(cfgNode, join(path, "global.external_labels"), "external_labels is not implemented")
	}
	jobs := map[string]bool{}
	err = d.sequence(scNode, join(path, "scrape_configs"), func(i int, vn *yaml.Node) error {
		sp := fmt.Sprintf("%s.scrape_configs[%d]", path, i)
		sc := ScrapeConfig{MetricsPath: "/metrics", Scheme: "http", HonorTimestamps: true, Line: vn.Line, BodySizeLimit: p.BodySizeLimit}
		interval, timeout := time.Duration(0), time.Duration(0)
		known := append([]string{"job_name", "scrape_interval", "scrape_timeout", "metrics_path", "scheme", "params", "honor_labels", "honor_timestamps", "static_configs", "body_size_limit", "relabel_configs", "metric_relabel_configs", "proxy_from_environment"}, limitKeys...)
		err := d.mapping(vn, sp, known, func(key string, kn, vn *yaml.Node) error {
			kp := join(sp, key)
			var err error
			switch key {
			case "job_name":
				sc.JobName, err = d.str(vn, kp)
			case "scrape_interval":
				interval, err = d.duration(vn, kp)
			case "scrape_timeout":
				timeout, err = d.duration(vn, kp)
			case "metrics_path":
				sc.MetricsPath, err = d.str(vn, kp)
			case "scheme":
				sc.Scheme, err = d.str(vn, kp)
				if err == nil && sc.Scheme != "http" && sc.Scheme != "https" {
					err = d.errf(vn, kp, "scheme must be http or https, got %q", sc.Scheme)
				}
			case "params":
				sc.Params = url.Values{}
				err = d.mapping(vn, kp, nil, func(name string, kn, vn *yaml.Node) error {
					vals, err := d.strList(vn, join(kp, name))
					sc.Params[name] = vals
					return err
				})
			case "honor_labels":
				sc.HonorLabels, err = d.boolean(vn, kp)
			case "honor_timestamps":
				sc.HonorTimestamps, err = d.boolean(vn, kp)
			case "body_size_limit":
				var v int64
				if v, err = d.byteSize(vn, kp); v != 0 { // 0 takes global's, as in Prometheus
					sc.BodySizeLimit = v
				}
			case "proxy_from_environment":
				sc.ProxyFromEnvironment, err = d.boolean(vn, kp)
			case "relabel_configs":
				sc.RelabelConfigs, err = d.relabelConfigs(vn, kp)
			case "metric_relabel_configs":
				sc.MetricRelabelConfigs, err = d.relabelConfigs(vn, kp)
			case "sample_limit", "label_limit", "label_name_length_limit", "label_value_length_limit":
				err = d.scrapeLimit(key, vn, kp, &sc.Limits)
			case "static_configs":
				err = d.sequence(vn, kp, func(j int, vn *yaml.Node) error {
					stp := fmt.Sprintf("%s[%d]", kp, j)
					var st StaticConfig
					err := d.mapping(vn, stp, []string{"targets", "labels"}, func(key string, kn, vn *yaml.Node) error {
						var err error
						if key == "targets" {
							st.Targets, err = d.strList(vn, join(stp, key))
							for _, t := range st.Targets {
								if err == nil && (t == "" || strings.Contains(t, "/")) {
									err = d.errf(vn, join(stp, key), "target %q must be host:port", t)
								}
							}
						} else {
							st.Labels, err = d.strMap(vn, join(stp, key))
						}
						return err
					})
					sc.StaticConfigs = append(sc.StaticConfigs, st)
					return err
				})
			}
			return err
		})
		if err != nil {
			return err
		}
		if sc.JobName == "" {
			return d.errf(vn, sp, "job_name is required")
		}
		if jobs[sc.JobName] {
			return d.errf(vn, sp, "duplicate job_name %q", sc.JobName)
		}
		jobs[sc.JobName] = true
		if interval == 0 {
			interval = p.ScrapeInterval
		}
		if timeout == 0 {
			timeout = p.ScrapeTimeout
			if timeout > interval {
				timeout = interval
			}
		}
		if timeout > interval {
			return d.errf(vn, sp, "scrape_timeout %s is greater than scrape_interval %s", timeout, interval)
		}
		sc.Interval, sc.Timeout = interval, timeout
		sc.Limits = sc.Limits.or(p.Limits)
		p.ScrapeConfigs = append(p.ScrapeConfigs, sc)
		return nil
	})
	return p, err
}

func (d *dec) strMap(n *yaml.Node, path string) (map[string]string, error) {
	m := map[string]string{}
	err := d.mapping(n, path, nil, func(key string, kn, vn *yaml.Node) error {
		s, err := d.str(vn, join(path, key))
		m[key] = s
		return err
	})
	return m, err
}

func (d *dec) byteSize(n *yaml.Node, path string) (int64, error) {
	s, err := d.str(n, path)
	if err != nil {
		return 0, err
	}
	mult := int64(1)
	for _, u := range []struct {
		suf string
		m   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"B", 1}} {
		if strings.HasSuffix(s, u.suf) {
			s, mult = strings.TrimSuffix(s, u.suf), u.m
			break
		}
	}
	var v int64
	if _, err := fmt.Sscanf(s, "%d", &v); err != nil || v < 0 {
		return 0, d.errf(n, path, "expected a size like 64MiB, got %q", n.Value)
	}
	return v * mult, nil
}
