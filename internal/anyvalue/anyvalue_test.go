package anyvalue

import (
	"math"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
)

func TestScalar(t *testing.T) {
	for _, c := range []struct {
		v    *commonpb.AnyValue
		want string
		ok   bool
	}{
		{&commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "svc"}}, "svc", true},
		{&commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: true}}, "true", true},
		{&commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: -42}}, "-42", true},
		{&commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: 1e21}}, "1e+21", true},
		{&commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: math.Inf(-1)}}, "-Inf", true},
		{&commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte{1}}}, "", false},
		{&commonpb.AnyValue{}, "", false},
		{nil, "", false},
	} {
		if got, ok := Scalar(c.v); got != c.want || ok != c.ok {
			t.Errorf("Scalar(%v) = %q, %v; want %q, %v", c.v, got, ok, c.want, c.ok)
		}
	}
}
