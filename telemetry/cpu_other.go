//go:build !unix

package telemetry

// cpuSeconds is not read outside Unix: otelcol_process_cpu_seconds is then
// not made.
func (p *process) cpuSeconds() (float64, bool) { return 0, false }
