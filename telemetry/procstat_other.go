//go:build !linux

package telemetry

// cpuSeconds is not read outside Linux: otelcol_process_cpu_seconds is
// then not made.
func (p *process) cpuSeconds() (float64, bool) { return 0, false }

// rssBytes is not read outside Linux: otelcol_process_memory_rss is then
// not made.
func (p *process) rssBytes() (int64, bool) { return 0, false }
