package resource

import (
	"strings"

	"github.com/otelstep/otelstep/pipeline"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
)

// Stamp sets the string attribute key = value on every resource of b,
// creating resources where a sender left them out. Every attribute whose key
// equals key ignoring case is removed first, so the resource ends with
// exactly one: replay uses it for Authorization, where a file written by the
// collector carries its own run's token (possibly under another spelling)
// and the routing proxy must see the new one.
//
// It edits the batch's resources in place: use it only on batches nothing
// else holds (replay's freshly decoded ones).
func Stamp(b *pipeline.Batch, key, value string) {
	kv := &commonpb.KeyValue{Key: key, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: value}}}
	ForEachResource(b, func(r *resourcepb.Resource) *resourcepb.Resource {
		attrs := r.Attributes[:0]
		for _, a := range r.Attributes {
			if !strings.EqualFold(a.GetKey(), key) {
				attrs = append(attrs, a)
			}
		}
		r.Attributes = append(attrs, kv)
		return r
	})
}
