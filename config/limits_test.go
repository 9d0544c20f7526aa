package config

import (
	"errors"
	"strings"
	"testing"
)

// limitsConfig is a config of two scrape configs under global (its lines
// indented for global), the first with own (its lines indented for a
// scrape config), the second with none.
func limitsConfig(global, own string) string {
	return `receivers:
  prometheus:
    config:
      global:
        scrape_interval: 15s
` + global + `      scrape_configs:
        - job_name: a
          static_configs:
            - targets: [127.0.0.1:9100]
` + own + `        - job_name: b
          static_configs:
            - targets: [127.0.0.1:9101]
exporters:
  file:
    path: /tmp/m.jsonl
service:
  pipelines:
    metrics:
      receivers: [prometheus]
      exporters: [file]
`
}

// The limits are read from global and from each scrape config, a scrape
// config's 0 or absence taking global's, as Prometheus fills them.
func TestScrapeLimits(t *testing.T) {
	for _, tc := range []struct {
		name, global, own string
		a, b              ScrapeLimits
	}{
		{"none", "", "", ScrapeLimits{}, ScrapeLimits{}},
		{"global only",
			"        sample_limit: 1000\n        label_limit: 30\n        label_name_length_limit: 200\n        label_value_length_limit: 2048\n", "",
			ScrapeLimits{1000, 30, 200, 2048}, ScrapeLimits{1000, 30, 200, 2048}},
		{"own over global",
			"        sample_limit: 1000\n        label_value_length_limit: 2048\n",
			"          sample_limit: 50\n          label_limit: 0\n          label_name_length_limit: 64\n",
			ScrapeLimits{50, 0, 64, 2048}, ScrapeLimits{1000, 0, 0, 2048}},
		{"own 0 takes global", "        sample_limit: 1000\n", "          sample_limit: 0\n",
			ScrapeLimits{Samples: 1000}, ScrapeLimits{Samples: 1000}},
		{"the most a label holds", "", "          label_value_length_limit: 16777216\n",
			ScrapeLimits{LabelValueLength: MaxLabelLength}, ScrapeLimits{}},
	} {
		c, err := Parse("t.yaml", []byte(limitsConfig(tc.global, tc.own)), env(nil))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		scs := c.Prometheus["prometheus"].ScrapeConfigs
		if scs[0].Limits != tc.a || scs[1].Limits != tc.b {
			t.Errorf("%s: limits %+v and %+v, want %+v and %+v", tc.name, scs[0].Limits, scs[1].Limits, tc.a, tc.b)
		}
	}
}

// A limit that is no count, or a length more than a label can hold, is
// refused naming the key, where it is and its line.
func TestScrapeLimitsRefused(t *testing.T) {
	for _, tc := range []struct {
		global, own string
		path        string
		line        int
		msg         string
	}{
		{"        sample_limit: -1\n", "", "receivers.prometheus.config.global.sample_limit", 6, "must not be negative"},
		{"        label_limit: many\n", "", "receivers.prometheus.config.global.label_limit", 6, "expected an integer"},
		{"", "          label_name_length_limit: 16777217\n", "receivers.prometheus.config.scrape_configs[0].label_name_length_limit", 10, "label_name_length_limit 16777217 is more than 16777216 bytes"},
		{"", "          label_value_length_limit: 1e9\n", "receivers.prometheus.config.scrape_configs[0].label_value_length_limit", 10, "expected an integer"},
		{"", "          label_value_length_limit: 99999999\n", "receivers.prometheus.config.scrape_configs[0].label_value_length_limit", 10, "more than 16777216 bytes"},
		{"", "          sample_limit: [1]\n", "receivers.prometheus.config.scrape_configs[0].sample_limit", 10, "expected an integer"},
	} {
		_, err := Parse("t.yaml", []byte(limitsConfig(tc.global, tc.own)), env(nil))
		var ce *Error
		if !errors.As(err, &ce) {
			t.Fatalf("%q%q: not a config error: %v", tc.global, tc.own, err)
		}
		if ce.Path != tc.path || ce.Line != tc.line || !strings.Contains(ce.Msg, tc.msg) {
			t.Errorf("%q%q: %s (path %s, line %d), want %s at line %d: %s", tc.global, tc.own, err, ce.Path, ce.Line, tc.path, tc.line, tc.msg)
		}
	}
}

// body_size_limit 0 in a scrape config takes global's, as Prometheus fills it.
func TestBodySizeLimitZeroTakesGlobal(t *testing.T) {
	c, err := Parse("t.yaml", []byte(limitsConfig("        body_size_limit: 10MiB\n", "          body_size_limit: 0\n")), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	for i, sc := range c.Prometheus["prometheus"].ScrapeConfigs {
		if sc.BodySizeLimit != 10<<20 {
			t.Errorf("scrape config %d: body_size_limit %d, want global's %d", i, sc.BodySizeLimit, 10<<20)
		}
	}
}

// memory_limit_mib, beside the receiver's config: unset is the scraper's
// default (0 here), 0 no bound (-1), else MiB; what is not a count up to
// 1 TiB is refused naming the key and its line.
func TestScrapeMemoryLimit(t *testing.T) {
	with := func(v string) string {
		return strings.Replace(limitsConfig("", ""), "  prometheus:\n", "  prometheus:\n    memory_limit_mib: "+v+"\n", 1)
	}
	for v, want := range map[string]int64{"": 0, "0": -1, "64": 64 << 20} {
		cfg := limitsConfig("", "")
		if v != "" {
			cfg = with(v)
		}
		c, err := Parse("t.yaml", []byte(cfg), env(nil))
		if err != nil {
			t.Fatalf("memory_limit_mib %q: %v", v, err)
		}
		if got := c.Prometheus["prometheus"].MemoryLimit; got != want {
			t.Errorf("memory_limit_mib %q: %d, want %d", v, got, want)
		}
	}
	for v, msg := range map[string]string{"-1": "must not be negative", "128MiB": "expected an integer", "2000000": "want 0 (no bound) to 1048576"} {
		_, err := Parse("t.yaml", []byte(with(v)), env(nil))
		var ce *Error
		if !errors.As(err, &ce) || ce.Path != "receivers.prometheus.memory_limit_mib" || ce.Line != 3 || !strings.Contains(ce.Msg, msg) {
			t.Errorf("memory_limit_mib %s: %v, want %q at line 3", v, err, msg)
		}
	}
}
