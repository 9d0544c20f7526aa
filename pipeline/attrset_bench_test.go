package pipeline

import (
	"fmt"
	"runtime"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
)

// BenchmarkSharedAttrsFind is the encoders' lookup of a point's set, over
// a table of a scrape's size.
func BenchmarkSharedAttrsFind(b *testing.B) {
	r := NewSharedAttrs()
	sets := make([]*AttrSet, 20000)
	for i := range sets {
		sets[i] = r.Share([]*commonpb.KeyValue{kv("id", fmt.Sprint(i)), kv("job", "j")})
	}
	b.ResetTimer()
	i := 0
	for b.Loop() {
		if r.Find(sets[i].KeyValues()) == nil {
			b.Fatal("not found")
		}
		i++
		if i == len(sets) {
			i = 0
		}
	}
	runtime.KeepAlive(sets)
}
