package report

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPanelsFile: a --panels file replaces a default panel by id and adds
// its own, evaluated like the defaults.
func TestPanelsFile(t *testing.T) {
	dir := t.TempDir()
	for name, doc := range map[string]string{
		"list.yaml": `
- id: gpu_util
  title: Busiest GPU
  unit: "%"
  query: max(DCGM_FI_DEV_GPU_UTIL)
- id: tokens_per_min
  title: Tokens a minute
  unit: tokens/min
  query: sum(rate(vllm_generation_tokens_total[$__rate_interval])) * 60
`,
		"mapping.yaml": `
panels:
  - {id: gpu_util, title: Busiest GPU, unit: "%", query: max(DCGM_FI_DEV_GPU_UTIL)}
  - {id: tokens_per_min, title: Tokens a minute, unit: tokens/min, query: "sum(rate(vllm_generation_tokens_total[$__rate_interval])) * 60"}
`,
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, name)
			writeFile(t, p, []byte(doc))
			panels, err := LoadPanels(p, DefaultPanels())
			if err != nil {
				t.Fatal(err)
			}
			if len(panels) != len(DefaultPanels())+1 || panels[len(panels)-1].ID != "tokens_per_min" {
				t.Fatalf("panels: %d, last %+v", len(panels), panels[len(panels)-1])
			}
			k := slices.IndexFunc(panels, func(p Panel) bool { return p.ID == "gpu_util" })
			if panels[k].Title != "Busiest GPU" {
				t.Errorf("gpu_util not replaced: %+v", panels[k])
			}
			job := writeOtelstepJob(t, filepath.Join(t.TempDir(), "job"))
			r, err := Build(context.Background(), Config{Dirs: []string{job}, Panels: panels})
			if err != nil {
				t.Fatal(err)
			}
			js := r.Jobs[0]
			if s := js.Panels["tokens_per_min"].Series; len(s) != 1 || !near(s[0].Mean, genTokensPerS*60*rampFactor) {
				t.Errorf("tokens_per_min: %+v", s)
			}
			if s := js.Panels["gpu_util"].Series; len(s) != 1 || !near(s[0].Max, gpuUtilAt(1, 6)) {
				t.Errorf("gpu_util: %+v", s)
			}
		})
	}
}

func TestPanelsFileRefused(t *testing.T) {
	dir := t.TempDir()
	for doc, want := range map[string]string{
		"- id: a\n  query: 'rate(x[5m]'\n":             "panels[0] (a): query",
		"- id: 9a\n  query: up\n":                      `id "9a"`,
		"- id: a\n  query: up\n- id: a\n  query: up\n": `id "a" given twice`,
		"- id: a\n":                             "no query",
		"- id: a\n  query: up\n  colour: red\n": "colour",
	} {
		p := filepath.Join(dir, "p.yaml")
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadPanels(p, DefaultPanels())
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%q: %v, want an error naming %s and %q", doc, err, p, want)
		}
	}
}
