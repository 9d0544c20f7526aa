// Package anyvalue renders OTLP attribute values as strings the way the
// collector and Prometheus's OTLP ingestion do, for the packages that need
// a value as a name or a label (spanmetrics, report).
package anyvalue

import (
	"strconv"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
)

// Scalar is the string form of a string, bool, int or double value:
// strings as they are, numbers in their shortest form ('g'). ok is false
// for any other value (bytes, arrays, maps, none).
func Scalar(v *commonpb.AnyValue) (s string, ok bool) {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue, true
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue), true
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10), true
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64), true
	}
	return "", false
}
