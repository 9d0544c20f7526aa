// Package resource holds the processors that change what a batch says
// between the receivers and the batch processor: Processor, the
// collector's resource processor (insert, update, upsert, delete, convert
// resource attributes), and Transform, the transform processor (the
// config's statements: metric renames and resource attribute copies, in
// the OTTL subset of package resource/ottl).
//
// Processors mutate batches in place and pass them on: a batch belongs to
// the pipeline it was handed to (see package pipeline). Point attributes
// are never touched, because the scraper shares them between scrapes.
package resource

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/otelstep/otelstep/config"
	"github.com/otelstep/otelstep/pipeline"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
)

// Action is one compiled resource action.
type Action struct {
	Key           string
	Op            string // insert, update, upsert, delete, convert
	Value         *commonpb.AnyValue
	FromAttribute string
	ConvertedType string
	// kv is Key: Value, made once by Compile for an action with a value:
	// stamped on every resource rather than a new one each (attributes are
	// replaced, never mutated, so resources may share it).
	kv *commonpb.KeyValue
}

// Compile turns config actions into Actions; values are built once and
// shared read-only by every resource they are stamped on.
func Compile(acts []config.ResourceAction) ([]Action, error) {
	out := make([]Action, 0, len(acts))
	for _, a := range acts {
		ca := Action{Key: a.Key, Op: a.Action, FromAttribute: a.FromAttribute, ConvertedType: a.ConvertedType}
		if a.Value != nil {
			switch v := a.Value.(type) {
			case string:
				ca.Value = &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}
			case int64:
				ca.Value = &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}
			case float64:
				ca.Value = &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v}}
			case bool:
				ca.Value = &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v}}
			default:
				return nil, fmt.Errorf("resource: action %s on %q: unsupported value type %T", a.Action, a.Key, a.Value)
			}
		}
		if ca.Value != nil && ca.FromAttribute == "" {
			ca.kv = &commonpb.KeyValue{Key: ca.Key, Value: ca.Value}
		}
		out = append(out, ca)
	}
	return out, nil
}

// Apply runs the actions, in order, on one resource's attributes.
func Apply(r *resourcepb.Resource, acts []Action) {
	for i := range acts {
		a := &acts[i]
		idx := find(r.Attributes, a.Key)
		switch a.Op {
		case "insert", "update", "upsert":
			present := idx >= 0
			if present && a.Op == "insert" || !present && a.Op == "update" {
				continue
			}
			kv := a.kv
			if kv == nil {
				v := a.Value
				if a.FromAttribute != "" {
					j := find(r.Attributes, a.FromAttribute)
					if j < 0 {
						continue
					}
					v = r.Attributes[j].Value
				}
				kv = &commonpb.KeyValue{Key: a.Key, Value: v}
			}
			// Replace the KeyValue rather than its Value field: the old one
			// may be shared with another batch.
			if present {
				r.Attributes[idx] = kv
			} else {
				r.Attributes = append(r.Attributes, kv)
			}
		case "delete":
			if idx >= 0 {
				r.Attributes = append(r.Attributes[:idx:idx], r.Attributes[idx+1:]...)
			}
		case "convert":
			if idx >= 0 {
				if nv, ok := convert(r.Attributes[idx].Value, a.ConvertedType); ok {
					r.Attributes[idx] = &commonpb.KeyValue{Key: a.Key, Value: nv}
				}
			}
		}
	}
}

func find(kvs []*commonpb.KeyValue, key string) int {
	for i, kv := range kvs {
		if kv.GetKey() == key {
			return i
		}
	}
	return -1
}

// convert follows the collector's attribute conversion: a value that cannot
// be converted is left as it is.
func convert(v *commonpb.AnyValue, typ string) (*commonpb.AnyValue, bool) {
	switch typ {
	case "string":
		var s string
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			return v, false
		case *commonpb.AnyValue_IntValue:
			s = strconv.FormatInt(x.IntValue, 10)
		case *commonpb.AnyValue_DoubleValue:
			s = strconv.FormatFloat(x.DoubleValue, 'f', -1, 64)
		case *commonpb.AnyValue_BoolValue:
			s = strconv.FormatBool(x.BoolValue)
		default:
			return v, false
		}
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}, true
	case "int":
		var n int64
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_IntValue:
			return v, false
		case *commonpb.AnyValue_StringValue:
			p, err := strconv.ParseInt(x.StringValue, 10, 64)
			if err != nil {
				return v, false
			}
			n = p
		case *commonpb.AnyValue_DoubleValue:
			if math.IsNaN(x.DoubleValue) || math.IsInf(x.DoubleValue, 0) {
				return v, false
			}
			n = int64(x.DoubleValue)
		case *commonpb.AnyValue_BoolValue:
			if x.BoolValue {
				n = 1
			}
		default:
			return v, false
		}
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: n}}, true
	case "double":
		var f float64
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_DoubleValue:
			return v, false
		case *commonpb.AnyValue_StringValue:
			p, err := strconv.ParseFloat(x.StringValue, 64)
			if err != nil {
				return v, false
			}
			f = p
		case *commonpb.AnyValue_IntValue:
			f = float64(x.IntValue)
		case *commonpb.AnyValue_BoolValue:
			if x.BoolValue {
				f = 1
			}
		default:
			return v, false
		}
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: f}}, true
	}
	return v, false
}

// Processor is the resource processor as a pipeline stage.
type Processor struct {
	acts []Action
	next pipeline.Consumer
}

// NewProcessor compiles acts and returns a stage that applies them to every
// resource of every batch before handing it to next.
func NewProcessor(acts []config.ResourceAction, next pipeline.Consumer) (*Processor, error) {
	c, err := Compile(acts)
	if err != nil {
		return nil, err
	}
	return &Processor{acts: c, next: next}, nil
}

// Consume stamps the batch and passes it on.
func (p *Processor) Consume(ctx context.Context, b *pipeline.Batch) error {
	ForEachResource(b, func(r *resourcepb.Resource) *resourcepb.Resource {
		Apply(r, p.acts)
		return r
	})
	return p.next.Consume(ctx, b)
}

// Flush passes the hint on (pipeline.Flusher).
func (p *Processor) Flush(ctx context.Context) { pipeline.Flush(ctx, p.next) }

// ForEachResource calls fn on every resource of the batch, creating an empty
// resource where a sender left it out (so it can still be stamped).
func ForEachResource(b *pipeline.Batch, fn func(*resourcepb.Resource) *resourcepb.Resource) {
	switch b.Signal {
	case pipeline.Metrics:
		for _, rm := range b.Metrics {
			if rm.Resource == nil {
				rm.Resource = &resourcepb.Resource{}
			}
			rm.Resource = fn(rm.Resource)
		}
	case pipeline.Traces:
		for _, rs := range b.Traces {
			if rs.Resource == nil {
				rs.Resource = &resourcepb.Resource{}
			}
			rs.Resource = fn(rs.Resource)
		}
	case pipeline.Logs:
		for _, rl := range b.Logs {
			if rl.Resource == nil {
				rl.Resource = &resourcepb.Resource{}
			}
			rl.Resource = fn(rl.Resource)
		}
	}
}
