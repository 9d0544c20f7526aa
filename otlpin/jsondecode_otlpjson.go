package otlpin

import "github.com/otelstep/otelstep/otlpjson"

// OTLP/JSON request decoders: hex trace and span ids, as the spec says.
var (
	decodeMetricsJSON = otlpjson.DecodeMetrics
	decodeTracesJSON  = otlpjson.DecodeTraces
	decodeLogsJSON    = otlpjson.DecodeLogs
)
