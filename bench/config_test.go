package bench

import (
	"strings"
	"testing"

	"github.com/otelstep/otelstep/config"
)

// The scenarios' configs are what otelstep accepts: v1 without a
// connector, v2 with span_metrics from the traces pipeline to the metrics
// pipeline and the identity rule in every pipeline.
func TestScenarioConfigs(t *testing.T) {
	env := func(k string) (string, bool) { return map[string]string{"OTEL_TOKEN": Token}[k], k == "OTEL_TOKEN" }
	for _, v2 := range []bool{false, true} {
		s := Scenario{Interval: 1e9, Jobs: map[string][]string{"vllm": {"127.0.0.1:1"}}, Health: "127.0.0.1:2", GRPC: "127.0.0.1:3",
			HTTP: "127.0.0.1:4", Backend: "http://127.0.0.1:5", Dir: t.TempDir(), V2: v2}
		c, err := config.Parse("scenario.yaml", []byte(s.YAML()), env)
		if err != nil {
			t.Fatalf("v2=%v: %v\n%s", v2, err, s.YAML())
		}
		if got := len(c.Connectors); got != map[bool]int{false: 0, true: 1}[v2] {
			t.Errorf("v2=%v: %d connectors", v2, got)
		}
		for _, p := range c.Service.Pipelines {
			if has := strings.Contains(strings.Join(p.Processors, ","), "transform/identity"); has != v2 {
				t.Errorf("v2=%v: pipeline %s processors %v", v2, p.ID, p.Processors)
			}
		}
	}
}
