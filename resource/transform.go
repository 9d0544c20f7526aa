package resource

import (
	"context"
	"strings"
	"sync"

	"github.com/otelstep/otelstep/config"
	"github.com/otelstep/otelstep/pipeline"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
)

// renameCacheMax bounds the metric-name cache: a target's names are few and
// stable, so a cache makes the regexp run once per name, not once per scrape.
const renameCacheMax = 1 << 16

// Transform runs a transform processor's statements for one signal.
type Transform struct {
	stmts []config.Statement
	next  pipeline.Consumer

	mu      sync.Mutex
	renamed []map[string]string // per statement: old name -> new name
}

// NewTransform keeps the statements of t that apply to signal.
func NewTransform(t *config.Transform, signal pipeline.Signal, next pipeline.Consumer) *Transform {
	tr := &Transform{next: next}
	for _, st := range t.Statements {
		if st.Signal == signal.String() {
			tr.stmts = append(tr.stmts, st)
			tr.renamed = append(tr.renamed, map[string]string{})
		}
	}
	return tr
}

// Consume runs the statements, in order, and passes the batch on.
// Flush passes the hint on (pipeline.Flusher).
func (t *Transform) Flush(ctx context.Context) { pipeline.Flush(ctx, t.next) }

func (t *Transform) Consume(ctx context.Context, b *pipeline.Batch) error {
	for i := range t.stmts {
		st := &t.stmts[i]
		switch st.Context {
		case "metric":
			if b.Signal != pipeline.Metrics {
				continue
			}
			t.mu.Lock() // once per batch, not once per metric
			for _, rm := range b.Metrics {
				for _, sm := range rm.ScopeMetrics {
					for _, m := range sm.Metrics {
						m.Name = t.rename(i, m.Name)
					}
				}
			}
			t.mu.Unlock()
		case "resource":
			ForEachResource(b, func(r *resourcepb.Resource) *resourcepb.Resource {
				runResource(st, r)
				return r
			})
		}
	}
	return t.next.Consume(ctx, b)
}

// rename applies statement i to name, through a cache keyed by the name
// alone so a lookup does not allocate. Called with t.mu held.
func (t *Transform) rename(i int, name string) string {
	cache := t.renamed[i]
	if v, ok := cache[name]; ok {
		return v
	}
	st := &t.stmts[i]
	v := st.Pattern.ReplaceAllString(name, st.Replacement)
	if len(cache) >= renameCacheMax {
		clear(cache)
	}
	// The key is a copy: a received name is a view of the request's body,
	// which goes back to its pool once the batch is encoded
	// (pipeline.Lease). So is v when the pattern did not match (the
	// regexp then returns name itself); a replacement is a new string.
	key := strings.Clone(name)
	if v == name {
		v = key
	}
	cache[key] = v
	return v
}

func runResource(st *config.Statement, r *resourcepb.Resource) {
	for _, c := range st.Where {
		if !holds(c, r) {
			return
		}
	}
	if st.Func != "set" {
		return
	}
	v, ok := operand(st.Value, r)
	if !ok || v == nil {
		return // OTTL: setting from a missing attribute does nothing
	}
	kv := &commonpb.KeyValue{Key: st.Target.Key, Value: v}
	if i := find(r.Attributes, st.Target.Key); i >= 0 {
		r.Attributes[i] = kv
	} else {
		r.Attributes = append(r.Attributes, kv)
	}
}

// operand evaluates o; a missing attribute or nil gives (nil, true).
func operand(o config.Operand, r *resourcepb.Resource) (*commonpb.AnyValue, bool) {
	switch {
	case o.Nil:
		return nil, true
	case o.Str != nil:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: *o.Str}}, true
	case o.Path != nil && o.Path.Field == "resource.attributes":
		if i := find(r.Attributes, o.Path.Key); i >= 0 {
			return r.Attributes[i].Value, true
		}
		return nil, true
	}
	return nil, false
}

func holds(c config.Cond, r *resourcepb.Resource) bool {
	l, _ := operand(c.Left, r)
	rv, _ := operand(c.Right, r)
	eq := equal(l, rv)
	if c.Op == "==" {
		return eq
	}
	return !eq
}

func equal(a, b *commonpb.AnyValue) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	switch x := a.Value.(type) {
	case *commonpb.AnyValue_StringValue:
		y, ok := b.Value.(*commonpb.AnyValue_StringValue)
		return ok && x.StringValue == y.StringValue
	case *commonpb.AnyValue_IntValue:
		y, ok := b.Value.(*commonpb.AnyValue_IntValue)
		return ok && x.IntValue == y.IntValue
	case *commonpb.AnyValue_DoubleValue:
		y, ok := b.Value.(*commonpb.AnyValue_DoubleValue)
		return ok && x.DoubleValue == y.DoubleValue
	case *commonpb.AnyValue_BoolValue:
		y, ok := b.Value.(*commonpb.AnyValue_BoolValue)
		return ok && x.BoolValue == y.BoolValue
	}
	return false
}
