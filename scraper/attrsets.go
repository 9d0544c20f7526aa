package scraper

import (
	"runtime"
	"sync"
	"weak"

	"github.com/prometheus/common/model"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"

	"github.com/otelstep/otelstep/pipeline"
)

// Point attribute sets repeat. Within a page, the families of one
// component carry the same labels (every vLLM family has the same
// model_name and engine, a node page's cpu and device families the same
// cpu and device values); across a job's targets, the same exporter on
// every node exposes the same label sets, the node being the resource's
// (job and instance are resource attributes, never point attributes).
// Each series' attributes are a pipeline.AttrSet, kept for the series'
// life with the JSON and protobuf encodings the sinks store with it, which
// is about half of a series' memory, so equal sets are kept once: the
// Manager's converters share one attrSets, and the series with equal
// attributes and the same kind of point share one set.
//
// The sets are made in the Manager's pipeline.SharedAttrs
// (Options.SharedAttrs), through which the sinks' encoders find them from
// a point's slice; with none, the sinks encode every point afresh.
//
// Entries are held weakly here, and the SharedAttrs drops a set's entry
// once it is garbage: a set lives while a series uses it, and its entries
// go with it, so nothing needs releasing when series are evicted or
// targets go away.

// attrSets interns point attribute sets, and families' metadata (their
// name, help, unit and type repeat across a job's targets as the label sets
// do). Safe for concurrent use.
type attrSets struct {
	shared *pipeline.SharedAttrs // where the sets are made; nil: shared nowhere

	mu sync.Mutex
	m  map[string]weak.Pointer[pipeline.AttrSet]
	// meta is the metric metadata per Prometheus type, one set for every
	// family of the type: its encodings are stored with it like a point
	// set's (a node page has 283 families, each of which wrote
	// "prometheus.type" and its type afresh in both encodings). Read only.
	meta map[string]*pipeline.AttrSet
	// fams interns family metadata, held weakly as the sets are.
	fams map[famID]weak.Pointer[famMeta]
}

// newAttrSets returns an empty attrSets making its sets in shared (nil: in
// none).
func newAttrSets(shared *pipeline.SharedAttrs) *attrSets {
	s := &attrSets{shared: shared, m: map[string]weak.Pointer[pipeline.AttrSet]{}, meta: map[string]*pipeline.AttrSet{}, fams: map[famID]weak.Pointer[famMeta]{}}
	for _, t := range []model.MetricType{model.MetricTypeCounter, model.MetricTypeGauge, model.MetricTypeHistogram,
		model.MetricTypeGaugeHistogram, model.MetricTypeSummary, model.MetricTypeInfo, model.MetricTypeStateset, "unknown"} {
		s.meta[string(t)] = shared.Share([]*commonpb.KeyValue{strKV("prometheus.type", string(t))})
	}
	return s
}

// Point kinds for a set's key: the attributes are field 7 of number and
// summary points, 9 of histogram ones, so a set per kind stores one
// protobuf encoding.
const (
	kindNumber    = 'n'
	kindHistogram = 'h'
)

// get returns the set for key (a point kind, then the attributes as the
// Converter's point keys write them: 0xff name 0xfe value for each),
// calling build for its attributes if there is none. build's slice is
// copied into the set, so it may be scratch.
func (s *attrSets) get(key []byte, build func() []*commonpb.KeyValue) *pipeline.AttrSet {
	s.mu.Lock()
	defer s.mu.Unlock()
	if wp, ok := s.m[string(key)]; ok {
		if a := wp.Value(); a != nil {
			return a
		}
	}
	a := s.shared.Share(build())
	k := string(key)
	s.m[k] = weak.Make(a)
	runtime.AddCleanup(a, s.forget, k)
	return a
}

// find returns the set for key (as get's), or nil if there is none.
func (s *attrSets) find(key []byte) *pipeline.AttrSet {
	s.mu.Lock()
	defer s.mu.Unlock()
	if wp, ok := s.m[string(key)]; ok {
		return wp.Value()
	}
	return nil
}

// forget drops key's entry once its set is gone, unless a newer set took
// the key meanwhile.
func (s *attrSets) forget(key string) {
	s.mu.Lock()
	dropIfGone(s.m, key)
	s.mu.Unlock()
}

// dropIfGone deletes m[k] once its value is gone, unless a newer value
// took k meanwhile. The caller holds the lock of m.
func dropIfGone[K comparable, V any](m map[K]weak.Pointer[V], k K) {
	if wp, ok := m[k]; ok && wp.Value() == nil {
		delete(m, k)
	}
}

// fam returns the shared family metadata of id.
func (s *attrSets) fam(id famID) *famMeta {
	s.mu.Lock()
	defer s.mu.Unlock()
	if wp, ok := s.fams[id]; ok {
		if f := wp.Value(); f != nil {
			return f
		}
	}
	t := string(id.typ)
	if id.typ == "" || t == "untyped" {
		t = "unknown"
	}
	f := &famMeta{famID: id, metadata: s.meta[t]}
	if f.metadata == nil {
		f.metadata = s.shared.Share([]*commonpb.KeyValue{strKV("prometheus.type", t)})
	}
	s.fams[id] = weak.Make(f)
	runtime.AddCleanup(f, s.forgetFam, id)
	return f
}

// forgetFam drops id's entry once its metadata is gone, unless newer
// metadata took it meanwhile.
func (s *attrSets) forgetFam(id famID) {
	s.mu.Lock()
	dropIfGone(s.fams, id)
	s.mu.Unlock()
}

// famSize is the number of family metadata entries (tests).
func (s *attrSets) famSize() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.fams)
}

// famLive is the number of family metadata entries still in use (tests):
// those of a family made again (a declaration changed it) stay until
// their cleanup has run.
func (s *attrSets) famLive() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, wp := range s.fams {
		if wp.Value() != nil {
			n++
		}
	}
	return n
}

// size is the number of entries (tests).
func (s *attrSets) size() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}
