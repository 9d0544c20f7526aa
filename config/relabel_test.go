package config

import (
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/relabel"
)

// promConfig is a minimal config with one prometheus scrape config whose
// extra keys (indented for a scrape_configs entry) are extra.
func promConfig(extra string) string {
	return `receivers:
  prometheus:
    config:
      scrape_configs:
        - job_name: j
          static_configs:
            - targets: [127.0.0.1:9100]
` + extra + `exporters:
  file:
    path: /tmp/m.jsonl
service:
  pipelines:
    metrics:
      receivers: [prometheus]
      exporters: [file]
`
}

func TestRelabelConfigs(t *testing.T) {
	src := promConfig(`          relabel_configs:
            - source_labels: [__address__]
              regex: '([^:]+):\d+'
              target_label: host
            - action: labelmap
              regex: __meta_(.+)
            - {action: Drop, source_labels: [job], regex: never}
            - action: hashmod
              source_labels: [__address__]
              modulus: 4
              target_label: __tmp_shard
          metric_relabel_configs:
            - source_labels: [__name__]
              regex: go_.*
              action: drop
            - action: keep
              source_labels: [__name__]
              regex: .+
            - action: labeldrop
              regex: pid
            - action: labelkeep
              regex: .+
            - action: replace
              source_labels: [a, b]
              separator: "-"
              target_label: ab
              replacement: x$1
            - {action: lowercase, source_labels: [a], target_label: a}
            - {action: uppercase, source_labels: [a], target_label: A}
            - {action: keepequal, source_labels: [a], target_label: b}
            - {action: dropequal, source_labels: [a], target_label: c}
`)
	c, err := Parse("t.yaml", []byte(src), jobEnv)
	if err != nil {
		t.Fatal(err)
	}
	sc := c.Prometheus["prometheus"].ScrapeConfigs[0]
	if len(sc.RelabelConfigs) != 4 || len(sc.MetricRelabelConfigs) != 9 {
		t.Fatalf("relabel %d, metric relabel %d", len(sc.RelabelConfigs), len(sc.MetricRelabelConfigs))
	}
	r0 := sc.RelabelConfigs[0]
	if r0.Action != relabel.Replace || r0.Separator != ";" || r0.Replacement != "$1" || r0.TargetLabel != "host" {
		t.Errorf("defaults not applied: %+v", r0)
	}
	if sc.RelabelConfigs[2].Action != relabel.Drop || sc.RelabelConfigs[3].Modulus != 4 {
		t.Errorf("action case / modulus: %+v %+v", sc.RelabelConfigs[2], sc.RelabelConfigs[3])
	}
	// the decoded rules work
	lb := labels.NewBuilder(labels.FromStrings("__address__", "node1:9100", "__meta_zone", "z1", "job", "j"))
	keep := relabel.ProcessBuilder(lb, sc.RelabelConfigs...)
	if out := lb.Labels(); !keep || out.Get("host") != "node1" || out.Get("zone") != "z1" {
		t.Errorf("relabel result %v keep=%v", out, keep)
	}
	if relabel.ProcessBuilder(labels.NewBuilder(labels.FromStrings("__name__", "go_gc")), sc.MetricRelabelConfigs...) {
		t.Error("go_ series not dropped")
	}
}

func TestRelabelConfigsRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		extra string
		want  []string
	}{
		"bad regex": {`          metric_relabel_configs:
            - source_labels: [__name__]
              regex: "go_(.*"
              action: drop
`, []string{"t.yaml:10:", "scrape_configs[0].metric_relabel_configs[0].regex", "bad regex"}},
		"unknown action": {`          relabel_configs:
            - action: explode
`, []string{"t.yaml:9:", "scrape_configs[0].relabel_configs[0].action", "unknown relabel action"}},
		"unknown key": {`          metric_relabel_configs:
            - action: drop
              regexp: x
`, []string{"t.yaml:10:", "scrape_configs[0].metric_relabel_configs[0].regexp", "unknown key"}},
		"replace without target": {`          relabel_configs:
            - source_labels: [a]
              action: replace
              target_label: ""
`, []string{"t.yaml:9:", "relabel_configs[0]", "target_label"}},
		"hashmod without modulus": {`          relabel_configs:
            - {action: hashmod, source_labels: [a], target_label: b}
`, []string{"t.yaml:9:", "relabel_configs[0]", "modulus"}},
		"labeldrop with source": {`          metric_relabel_configs:
            - {action: labeldrop, regex: a, source_labels: [b]}
`, []string{"t.yaml:9:", "metric_relabel_configs[0]", "requires only 'regex'"}},
		"bad modulus": {`          relabel_configs:
            - {action: hashmod, source_labels: [a], target_label: b, modulus: -1}
`, []string{"t.yaml:9:", "relabel_configs[0].modulus"}},
		"not a list": {`          relabel_configs: {action: drop}
`, []string{"t.yaml:8:", "relabel_configs", "expected a list"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(promConfig(tc.extra)), jobEnv)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
