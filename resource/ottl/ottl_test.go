package ottl

import (
	"strconv"
	"strings"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
)

func str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

func intKV(k string, v int64) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}}
}

func dblKV(k string, v float64) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v}}}
}

// render lists a resource's attributes as k=v in order.
func render(r *resourcepb.Resource) string {
	var parts []string
	for _, kv := range r.Attributes {
		var v string
		switch x := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			v = x.StringValue
		case *commonpb.AnyValue_IntValue:
			v = "int:" + strconv.FormatInt(x.IntValue, 10)
		case *commonpb.AnyValue_DoubleValue:
			v = "double"
		case *commonpb.AnyValue_BoolValue:
			v = "bool"
		}
		parts = append(parts, kv.Key+"="+v)
	}
	return strings.Join(parts, ",")
}

// The identity statement of the orchestrator's v2 config.
const identity = `set(resource.attributes["service.name.override"], resource.attributes["service.name"])
        where resource.attributes["service.name.override"] == nil and resource.attributes["service.name"]
        != nil`

func TestApplyResource(t *testing.T) {
	cases := []struct {
		name, stmt string
		in         []*commonpb.KeyValue
		want       string
	}{
		{"identity copies the name", identity, []*commonpb.KeyValue{str("service.name", "agent")}, "service.name=agent,service.name.override=agent"},
		{"identity keeps an override", identity, []*commonpb.KeyValue{str("service.name", "agent"), str("service.name.override", "mine")}, "service.name=agent,service.name.override=mine"},
		{"identity without a name", identity, []*commonpb.KeyValue{str("host", "h")}, "host=h"},
		{"replace in place", `set(attributes["a"], "new")`, []*commonpb.KeyValue{str("a", "old"), str("b", "x")}, "a=new,b=x"},
		{"set an int", `set(attributes["n"], 42)`, nil, "n=int:42"},
		{"set from a missing attribute does nothing", `set(attributes["a"], attributes["missing"])`, []*commonpb.KeyValue{str("a", "old")}, "a=old"},
		{"or", `set(attributes["x"], "y") where attributes["a"] == "1" or attributes["b"] == "2"`, []*commonpb.KeyValue{str("b", "2")}, "b=2,x=y"},
		{"or, neither", `set(attributes["x"], "y") where attributes["a"] == "1" or attributes["b"] == "2"`, []*commonpb.KeyValue{str("b", "3")}, "b=3"},
		{"and binds tighter than or", `set(attributes["x"], "y") where attributes["a"] == "1" or attributes["b"] == "2" and attributes["c"] == "3"`, []*commonpb.KeyValue{str("a", "1")}, "a=1,x=y"},
		{"parentheses", `set(attributes["x"], "y") where (attributes["a"] == "1" or attributes["b"] == "2") and attributes["c"] == "3"`, []*commonpb.KeyValue{str("a", "1")}, "a=1"},
		{"not", `set(attributes["x"], "y") where not attributes["a"] == "1"`, []*commonpb.KeyValue{str("a", "2")}, "a=2,x=y"},
		{"not binds tighter than and", `set(attributes["x"], "y") where not attributes["a"] == "1" and attributes["b"] == "2"`, []*commonpb.KeyValue{str("a", "1"), str("b", "2")}, "a=1,b=2"},
		{"not over parentheses", `set(attributes["x"], "y") where not (attributes["a"] == "1" and attributes["b"] == "2")`, []*commonpb.KeyValue{str("a", "1"), str("b", "3")}, "a=1,b=3,x=y"},
		{"int equals int", `set(attributes["x"], "y") where attributes["n"] == 3`, []*commonpb.KeyValue{intKV("n", 3)}, "n=int:3,x=y"},
		{"int equals float", `set(attributes["x"], "y") where attributes["n"] == 3.0`, []*commonpb.KeyValue{intKV("n", 3)}, "n=int:3,x=y"},
		{"double and negative", `set(attributes["x"], "y") where attributes["d"] == -2.5e0`, []*commonpb.KeyValue{dblKV("d", -2.5)}, "d=double,x=y"},
		{"a string is not a number", `set(attributes["x"], "y") where attributes["n"] == 3`, []*commonpb.KeyValue{str("n", "3")}, "n=3"},
		{"!= between types", `set(attributes["x"], "y") where attributes["n"] != "3"`, []*commonpb.KeyValue{intKV("n", 3)}, "n=int:3,x=y"},
		{"nil on the left", `set(attributes["x"], "y") where nil == resource.attributes["a"]`, nil, "x=y"},
		{"true", `set(attributes["x"], "y") where true`, nil, "x=y"},
		{"false", `set(attributes["x"], "y") where false or false`, nil, ""},
		{"escaped quotes in a key", `set(attributes["a\"b"], "v")`, nil, `a"b=v`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, err := Parse(c.stmt, ContextResource)
			if err != nil {
				t.Fatal(err)
			}
			r := &resourcepb.Resource{Attributes: c.in}
			st.ApplyResource(r)
			if got := render(r); got != c.want {
				t.Errorf("%s\n got %s\nwant %s", c.stmt, got, c.want)
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	cases := []struct {
		stmt string
		ctx  Context
		want string
	}{
		{`delete_key(attributes, "a")`, ContextResource, `function "delete_key" is not implemented`},
		{`set(attributes["a"], "b") where attributes["n"] > 3`, ContextResource, "comparison > at offset"},
		{`set(attributes["a"], "b") where attributes["n"] =~ "x"`, ContextResource, "expected == or !="},
		{`set(attributes["a"], nil)`, ContextResource, "set to nil"},
		{`set(attributes["a"]["b"], "c")`, ContextResource, "nested keys"},
		{`set(span.name, "c")`, ContextResource, `path "span.name"`},
		{`set(attributes["a"], Concat(["x"], ""))`, ContextResource, `function "Concat"`},
		{`set(attributes["a"], "b") where (attributes["x"] == "y"`, ContextResource, `expected ")"`},
		{`set(attributes["a"], "b") where attributes["x"] == "y" xor true`, ContextResource, "unexpected"},
		{`set(attributes["a"], "b") trailing`, ContextResource, "unexpected"},
		{`set(attributes["a"], "b`, ContextResource, "unterminated string"},
		{`replace_pattern(metric.name, "(", "x")`, ContextMetric, "bad pattern"},
		{`replace_pattern(metric.name, "a", "b") where metric.name == "a"`, ContextMetric, "where in context metric"},
		{`set(attributes["a"], "b")`, ContextMetric, "not implemented in context metric"},
		{`replace_pattern(resource.attributes["a"], "a", "b")`, ContextResource, "not implemented in context resource"},
		{`set(attributes["a"], "b")`, Context("span"), `context "span"`},
		{``, ContextResource, "expected a function call"},
	}
	for _, c := range cases {
		_, err := Parse(c.stmt, c.ctx)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q, %s) = %v, want an error containing %q", c.stmt, c.ctx, err, c.want)
		}
	}
}

func TestReplacePattern(t *testing.T) {
	st, err := Parse(`replace_pattern(metric.name, "^([^:]+):(.+)$", "${1}_${2}")`, ContextMetric)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Pattern.ReplaceAllString("vllm:num_requests", st.Replacement); got != "vllm_num_requests" {
		t.Errorf("got %q", got)
	}
}
