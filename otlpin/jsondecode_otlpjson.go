package otlpin

import "github.com/otelstep/otelstep/otlpwire"

// OTLP/JSON request decoders: hex trace and span ids, as the spec says.
var (
	decodeMetricsJSON = otlpwire.DecodeMetrics
	decodeTracesJSON  = otlpwire.DecodeTraces
	decodeLogsJSON    = otlpwire.DecodeLogs
)
