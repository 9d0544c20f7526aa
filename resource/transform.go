package resource

import (
	"context"
	"strings"
	"sync"

	"github.com/otelstep/otelstep/config"
	"github.com/otelstep/otelstep/pipeline"
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
				st.ApplyResource(r)
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
