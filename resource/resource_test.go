package resource

import (
	"context"
	"strings"
	"testing"

	"github.com/otelstep/otelstep/config"
	"github.com/otelstep/otelstep/pipeline"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

func str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

func attrs(r *resourcepb.Resource) map[string]any {
	m := map[string]any{}
	for _, kv := range r.Attributes {
		switch v := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.Key] = v.IntValue
		case *commonpb.AnyValue_DoubleValue:
			m[kv.Key] = v.DoubleValue
		case *commonpb.AnyValue_BoolValue:
			m[kv.Key] = v.BoolValue
		}
	}
	return m
}

func TestActions(t *testing.T) {
	acts, err := Compile([]config.ResourceAction{
		{Key: "service.name", Action: "upsert", Value: "svc"},
		{Key: "present", Action: "insert", Value: "new"},  // kept: exists
		{Key: "absent", Action: "insert", Value: "ins"},   // added
		{Key: "missing", Action: "update", Value: "x"},    // not added
		{Key: "present2", Action: "update", Value: "upd"}, // replaced
		{Key: "gone", Action: "delete"},
		{Key: "slurm_job_id", Action: "upsert", Value: int64(4242)},
		{Key: "slurm_job_id", Action: "convert", ConvertedType: "string"},
		{Key: "num", Action: "convert", ConvertedType: "int"},
		{Key: "bad", Action: "convert", ConvertedType: "double"},
		{Key: "copy", Action: "upsert", FromAttribute: "absent"},
		{Key: "nocopy", Action: "upsert", FromAttribute: "nothing"},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "orig"), str("present", "old"), str("present2", "old"), str("gone", "x"), str("num", "17"), str("bad", "abc")}}
	Apply(r, acts)
	got := attrs(r)
	want := map[string]any{"service.name": "svc", "present": "old", "absent": "ins", "present2": "upd", "slurm_job_id": "4242", "num": int64(17), "bad": "abc", "copy": "ins"}
	if len(got) != len(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %#v, want %#v", k, got[k], v)
		}
	}
}

// A processed batch must not change a KeyValue that another batch shares.
func TestApplyDoesNotMutateSharedKeyValues(t *testing.T) {
	shared := str("service.name", "orig")
	acts, _ := Compile([]config.ResourceAction{{Key: "service.name", Action: "upsert", Value: "svc"}})
	Apply(&resourcepb.Resource{Attributes: []*commonpb.KeyValue{shared}}, acts)
	if shared.Value.GetStringValue() != "orig" {
		t.Fatal("shared KeyValue was mutated")
	}
}

// Stamping a constant allocates nothing: the KeyValue is made once, at
// Compile, and shared by every resource it is stamped on (a scrape's
// resource has room for the job's stamps).
func TestApplyConstantsAllocateNothing(t *testing.T) {
	acts, err := Compile([]config.ResourceAction{
		{Key: "service.name", Action: "upsert", Value: "svc"},
		{Key: "hpc.job", Action: "insert", Value: int64(4242)},
		{Key: "service.name", Action: "insert", Value: "not stamped"},
	})
	if err != nil {
		t.Fatal(err)
	}
	base := []*commonpb.KeyValue{str("service.name", "orig")}
	attrs := make([]*commonpb.KeyValue, 0, 8)
	var first *commonpb.KeyValue
	r := &resourcepb.Resource{}
	allocs := testing.AllocsPerRun(100, func() {
		r.Attributes = append(attrs[:0], base...)
		Apply(r, acts)
		if len(r.Attributes) != 2 || r.Attributes[0].Value.GetStringValue() != "svc" || r.Attributes[1].Value.GetIntValue() != 4242 {
			t.Fatalf("stamped %v", r.Attributes)
		}
		if first == nil {
			first = r.Attributes[0]
		} else if r.Attributes[0] != first {
			t.Fatal("each resource got a KeyValue of its own")
		}
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations a resource, want 0", allocs)
	}
}

func TestProcessorStampsEverySignal(t *testing.T) {
	var got []*pipeline.Batch
	sinkC := pipeline.ConsumerFunc(func(_ context.Context, b *pipeline.Batch) error { got = append(got, b); return nil })
	p, err := NewProcessor([]config.ResourceAction{{Key: "Authorization", Action: "upsert", Value: "tok"}}, sinkC)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_ = p.Consume(ctx, &pipeline.Batch{Signal: pipeline.Traces, Traces: pipeline.TracesFromProto([]*tracepb.ResourceSpans{{}, {Resource: &resourcepb.Resource{}}})})
	_ = p.Consume(ctx, &pipeline.Batch{Signal: pipeline.Metrics, Metrics: []*metricspb.ResourceMetrics{{}}})
	for _, b := range got {
		resources := 0
		ForEachResource(b, func(r *resourcepb.Resource) *resourcepb.Resource {
			resources++
			if attrs(r)["Authorization"] != "tok" {
				t.Errorf("%v resource without Authorization", b.Signal)
			}
			return r
		})
		if resources == 0 {
			t.Error("no resources")
		}
	}
}

func TestTransform(t *testing.T) {
	c, err := config.Parse("t.yaml", []byte(`
receivers:
  prometheus:
    config:
      scrape_configs:
      - job_name: x
        static_configs: [{targets: ["localhost:1"]}]
processors:
  transform/metric_names:
    metric_statements:
    - context: metric
      statements:
      - replace_pattern(metric.name, "^([^:]+):(.+)$", "$${1}_$${2}")
    - context: resource
      statements:
      - set(resource.attributes["service.name.override"], resource.attributes["service.name"]) where resource.attributes["service.name.override"] == nil and resource.attributes["service.name"] != nil
exporters:
  file: {path: /tmp/x.jsonl}
service:
  pipelines:
    metrics: {receivers: [prometheus], processors: [transform/metric_names], exporters: [file]}
`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	var out *pipeline.Batch
	tr := NewTransform(c.Transform["transform/metric_names"], pipeline.Metrics, pipeline.ConsumerFunc(func(_ context.Context, b *pipeline.Batch) error { out = b; return nil }))
	mk := func() *pipeline.Batch {
		return &pipeline.Batch{Signal: pipeline.Metrics, Metrics: []*metricspb.ResourceMetrics{
			{Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "vllm")}},
				ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{{Name: "vllm:num_requests_running"}, {Name: "plain_name"}, {Name: "a:b:c"}}}}},
			{Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "x"), str("service.name.override", "keep")}}},
		}}
	}
	for range 2 { // second pass exercises the cache
		if err := tr.Consume(context.Background(), mk()); err != nil {
			t.Fatal(err)
		}
	}
	names := []string{}
	for _, m := range out.Metrics[0].ScopeMetrics[0].Metrics {
		names = append(names, m.Name)
	}
	if names[0] != "vllm_num_requests_running" || names[1] != "plain_name" || names[2] != "a_b:c" {
		t.Errorf("renamed: %v", names)
	}
	if got := attrs(out.Metrics[0].Resource)["service.name.override"]; got != "vllm" {
		t.Errorf("override = %v", got)
	}
	if got := attrs(out.Metrics[1].Resource)["service.name.override"]; got != "keep" {
		t.Errorf("override replaced: %v", got)
	}
}

func BenchmarkStamp(b *testing.B) {
	acts, _ := Compile([]config.ResourceAction{
		{Key: "service.name", Action: "upsert", Value: "svc"}, {Key: "Authorization", Action: "upsert", Value: "tok"},
		{Key: "user", Action: "upsert", Value: "u"}, {Key: "run_id", Action: "upsert", Value: "r"},
		{Key: "slurm_job_id", Action: "upsert", Value: int64(1)}, {Key: "slurm_job_id", Action: "convert", ConvertedType: "string"},
	})
	b.ReportAllocs()
	for b.Loop() {
		r := &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "vllm"), str("service.instance.id", "h:1")}}
		Apply(r, acts)
	}
}

func TestStampReplacesEverySpelling(t *testing.T) {
	kv := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	b := &pipeline.Batch{Signal: pipeline.Logs, Logs: pipeline.LogsFromProto([]*logspb.ResourceLogs{
		{Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{kv("Authorization", "old"), kv("a", "1"), kv("authorization", "old2")}}},
		{}, // no resource at all
	})}
	Stamp(b, "Authorization", "new")
	for i, rl := range b.Logs {
		var got []string
		for _, a := range rl.Resource.GetAttributes() {
			got = append(got, a.Key+"="+a.GetValue().GetStringValue())
		}
		want := []string{"a=1", "Authorization=new"}
		if i == 1 {
			want = want[1:]
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("resource %d: got %v, want %v", i, got, want)
		}
	}
}
