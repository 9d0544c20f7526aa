//go:build !linux

package telemetry

// rssBytes is not read outside Linux: otelcol_process_memory_rss is then
// not made.
func (p *process) rssBytes() (int64, bool) { return 0, false }
