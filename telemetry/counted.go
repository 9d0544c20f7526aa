package telemetry

import (
	"context"

	"github.com/otelstep/otelstep/pipeline"
)

// CountedConsumer is a pipeline.Consumer that can be told how many items
// (points, spans, log records) a batch holds when its sender has counted
// them already: a receiver for its own counts, the batch processor for its
// sizes. Counting walks every span or log record of a batch, so each
// stage that counts for otelstep's telemetry takes the count it is given
// rather than walking the batch again.
type CountedConsumer interface {
	pipeline.Consumer
	// ConsumeCounted is Consume of b, which holds items items.
	ConsumeCounted(ctx context.Context, b *pipeline.Batch, items int) error
}

// Consume hands b to c: with its count of items when c takes one and the
// count is known (items >= 0), else as c.Consume.
func Consume(ctx context.Context, c pipeline.Consumer, b *pipeline.Batch, items int) error {
	if cc, ok := c.(CountedConsumer); ok && items >= 0 {
		return cc.ConsumeCounted(ctx, b, items)
	}
	return c.Consume(ctx, b)
}
