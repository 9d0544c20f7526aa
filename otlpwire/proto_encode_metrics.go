package otlpwire

import (
	"math"
	"slices"

	"github.com/otelstep/otelstep/pipeline"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// ProtoEncoder writes ExportMetricsServiceRequest in protobuf wire format
// without reflection: the generic proto.Marshal was half of the scrape
// path's CPU (bench/, -cpuprofile). It runs in two passes: sizes are
// computed once, bottom-up, and kept in pre-order; the append pass reads
// them back in the same order, so no message is sized twice.
//
// Message kinds it does not know field by field (exponential histograms,
// array and kvlist values, entity refs) go through proto.Marshal, so the
// output is always complete. The output decodes to a message proto.Equal
// to the input (see proto_encode_metrics_test.go).
//
// Data-point attributes and metrics' metadata that are a shared set's
// (pipeline.AttrSet, whose pipeline.AttrEncodings Shared finds: the
// scraper sends every series again with its set's slice each scrape) are
// encoded once and the bytes stored with the set, shared by every encoder
// and freed with the series (~13% of the scrape path's CPU was sizing and
// appending them). The output is the same with and without Shared.
//
// The zero value is ready to use (and reuses nothing). A ProtoEncoder is
// not safe for concurrent use.
type ProtoEncoder struct {
	// Shared finds the sets whose stored encodings are used and filled;
	// nil: none.
	Shared *pipeline.SharedAttrs

	sizes []int
	pos   int

	// attrs holds, in pre-order like sizes, what the size pass found for
	// each non-empty data-point attribute slice and metadata slice while
	// Shared is set: the bytes stored with its set, or nil for "encoded
	// the usual way". The append pass reads it back, so both passes agree
	// even if the set is collected in between, and nothing is looked up
	// twice.
	attrs   [][]byte
	apos    int
	sub     *ProtoEncoder // encodes a set's KeyValues to be stored
	scratch []byte

	// flush, when set, is called between two data points (and two
	// metrics) once dst holds flushAt bytes or more. It takes what dst
	// holds, the request's bytes since the last flush, and returns the
	// slice to go on appending to. The lengths are known from the size
	// pass, so nothing already appended is ever looked at again: a request
	// can go out in pieces, and one resource of 20,000 series is not held
	// whole (2-3 MB, allocated afresh for every scrape).
	flush   func(dst []byte) []byte
	flushAt int
}

// SetFlush sets the flush function and its threshold (see the flush
// field); a nil flush appends a whole request to dst.
func (e *ProtoEncoder) SetFlush(flush func(dst []byte) []byte, at int) {
	e.flush, e.flushAt = flush, at
}

// maybeFlush hands dst to e.flush once it holds e.flushAt bytes.
func (e *ProtoEncoder) maybeFlush(dst []byte) []byte {
	if e.flush != nil && len(dst) >= e.flushAt {
		return e.flush(dst)
	}
	return dst
}

func (e *ProtoEncoder) mark() int { e.sizes = append(e.sizes, 0); return len(e.sizes) - 1 }

func (e *ProtoEncoder) next() int { n := e.sizes[e.pos]; e.pos++; return n }

// AppendMetricsRequest appends the encoding of an ExportMetricsServiceRequest
// holding rms to dst.
func (e *ProtoEncoder) AppendMetricsRequest(dst []byte, rms []*metricspb.ResourceMetrics) []byte {
	e.reset()
	total := 0
	for _, rm := range rms {
		total += lenField(1, e.sizeResourceMetrics(rm))
	}
	if e.flush != nil {
		total = min(total, e.flushAt+e.flushAt/4) // it goes out in pieces
	}
	dst = slices.Grow(dst, total) // one allocation at most: the size pass knows the length
	for _, rm := range rms {
		dst = e.msg(dst, 1)
		dst = e.appendResourceMetrics(dst, rm)
	}
	return dst
}

// reset readies the encoder for a request: both passes start afresh, and
// no reference to a series' stored encoding outlives the request.
func (e *ProtoEncoder) reset() {
	e.sizes, e.pos = e.sizes[:0], 0
	clear(e.attrs)
	e.attrs, e.apos = e.attrs[:0], 0
}

// sizeScope records and returns the size of an InstrumentationScope (one
// mark: its attributes' marks follow), shared by the three signals.
func (e *ProtoEncoder) sizeScope(s *commonpb.InstrumentationScope) int {
	idx := e.mark()
	m := strSize(1, s.Name) + strSize(2, s.Version) + e.sizeKeyValues(3, s.Attributes) + varintSize(4, uint64(s.DroppedAttributesCount))
	e.sizes[idx] = m
	return m
}

func (e *ProtoEncoder) appendScope(dst []byte, s *commonpb.InstrumentationScope) []byte {
	dst = appendStr(dst, 1, s.Name)
	dst = appendStr(dst, 2, s.Version)
	dst = e.appendKeyValues(dst, 3, s.Attributes)
	return appendVarint(dst, 4, uint64(s.DroppedAttributesCount))
}

// msg writes the tag and the length (the next recorded size) of a nested
// message field.
func (e *ProtoEncoder) msg(dst []byte, num protowire.Number) []byte {
	dst = appendTag(dst, num, protowire.BytesType)
	return appendUvarint(dst, uint64(e.next()))
}

// appendUvarint is protowire.AppendVarint with the one-byte case, most
// lengths, inlined: with the tags, the calls were 4% of the scrape path's
// instructions.
func appendUvarint(dst []byte, v uint64) []byte {
	if v < 0x80 {
		return append(dst, byte(v))
	}
	return protowire.AppendVarint(dst, v)
}

// appendTag is protowire.AppendTag with a short way for the one-byte tags
// (fields 1 to 15).
func appendTag(dst []byte, num protowire.Number, typ protowire.Type) []byte {
	if num < 16 {
		return append(dst, byte(num)<<3|byte(typ))
	}
	return protowire.AppendTag(dst, num, typ)
}

func lenField(num protowire.Number, n int) int {
	return protowire.SizeTag(num) + protowire.SizeBytes(n)
}

func strSize(num protowire.Number, s string) int {
	if s == "" {
		return 0
	}
	return lenField(num, len(s))
}

func appendStr(dst []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return dst
	}
	dst = appendTag(dst, num, protowire.BytesType)
	return append(appendUvarint(dst, uint64(len(s))), s...)
}

func appendFixed64(dst []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return dst
	}
	dst = appendTag(dst, num, protowire.Fixed64Type)
	return protowire.AppendFixed64(dst, v)
}

func fixed64Size(num protowire.Number, v uint64) int {
	if v == 0 {
		return 0
	}
	return protowire.SizeTag(num) + 8
}

func varintSize(num protowire.Number, v uint64) int {
	if v == 0 {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeVarint(v)
}

func appendVarint(dst []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return dst
	}
	dst = appendTag(dst, num, protowire.VarintType)
	return appendUvarint(dst, v)
}

func (e *ProtoEncoder) sizeResourceMetrics(rm *metricspb.ResourceMetrics) int {
	idx := e.mark()
	n := 0
	if rm.Resource != nil {
		n += lenField(1, e.sizeResource(rm.Resource))
	}
	for _, sm := range rm.ScopeMetrics {
		n += lenField(2, e.sizeScopeMetrics(sm))
	}
	n += strSize(3, rm.SchemaUrl)
	e.sizes[idx] = n
	return n
}

func (e *ProtoEncoder) appendResourceMetrics(dst []byte, rm *metricspb.ResourceMetrics) []byte {
	if rm.Resource != nil {
		dst = e.msg(dst, 1)
		dst = e.appendResource(dst, rm.Resource)
	}
	for _, sm := range rm.ScopeMetrics {
		dst = e.msg(dst, 2)
		dst = e.appendScopeMetrics(dst, sm)
	}
	return appendStr(dst, 3, rm.SchemaUrl)
}

func (e *ProtoEncoder) sizeResource(r *resourcepb.Resource) int {
	idx := e.mark()
	n := e.sizeKeyValues(1, r.Attributes)
	n += varintSize(2, uint64(r.DroppedAttributesCount))
	for _, er := range r.EntityRefs {
		n += lenField(3, proto.Size(er))
	}
	e.sizes[idx] = n
	return n
}

func (e *ProtoEncoder) appendResource(dst []byte, r *resourcepb.Resource) []byte {
	dst = e.appendKeyValues(dst, 1, r.Attributes)
	dst = appendVarint(dst, 2, uint64(r.DroppedAttributesCount))
	for _, er := range r.EntityRefs {
		dst = appendTag(dst, 3, protowire.BytesType)
		dst = appendUvarint(dst, uint64(proto.Size(er)))
		dst, _ = proto.MarshalOptions{}.MarshalAppend(dst, er)
	}
	return dst
}

func (e *ProtoEncoder) sizeKeyValues(num protowire.Number, kvs []*commonpb.KeyValue) int {
	n := 0
	for _, kv := range kvs {
		idx := e.mark()
		m := strSize(1, kv.Key)
		if kv.Value != nil {
			m += lenField(2, e.sizeAnyValue(kv.Value))
		}
		m += int32Size(3, kv.KeyStrindex)
		e.sizes[idx] = m
		n += lenField(num, m)
	}
	return n
}

func (e *ProtoEncoder) appendKeyValues(dst []byte, num protowire.Number, kvs []*commonpb.KeyValue) []byte {
	for _, kv := range kvs {
		dst = e.msg(dst, num)
		dst = appendStr(dst, 1, kv.Key)
		if kv.Value != nil {
			dst = e.msg(dst, 2)
			dst = e.appendAnyValue(dst, kv.Value)
		}
		dst = appendInt32(dst, 3, kv.KeyStrindex)
	}
	return dst
}

// sizePointAttrs is sizeKeyValues for a data point's attributes (or a
// metric's metadata): a set's slice is sized from its stored encoding.
// Without Shared it costs one check (and one call: this does not fit the
// inlining budget).
func (e *ProtoEncoder) sizePointAttrs(num protowire.Number, kvs []*commonpb.KeyValue) int {
	if e.Shared == nil || len(kvs) == 0 {
		return e.sizeKeyValues(num, kvs)
	}
	return e.sizeSharedAttrs(num, kvs)
}

// sizeSharedAttrs looks kvs's set up (storing its encoding if it has none
// yet) and records the outcome for appendSharedAttrs.
func (e *ProtoEncoder) sizeSharedAttrs(num protowire.Number, kvs []*commonpb.KeyValue) int {
	b := e.storedKeyValues(num, kvs)
	e.attrs = append(e.attrs, b)
	if b == nil {
		return e.sizeKeyValues(num, kvs)
	}
	return len(b)
}

// appendPointAttrs is appendKeyValues for a data point's attributes (or a
// metric's metadata), following what the size pass recorded.
func (e *ProtoEncoder) appendPointAttrs(dst []byte, num protowire.Number, kvs []*commonpb.KeyValue) []byte {
	if e.Shared == nil || len(kvs) == 0 {
		return e.appendKeyValues(dst, num, kvs)
	}
	return e.appendSharedAttrs(dst, num, kvs)
}

// appendSharedAttrs writes what sizeSharedAttrs recorded for kvs: the
// stored bytes, or the usual encoding when kvs is no set's.
func (e *ProtoEncoder) appendSharedAttrs(dst []byte, num protowire.Number, kvs []*commonpb.KeyValue) []byte {
	b := e.attrs[e.apos]
	e.apos++
	if b == nil {
		return e.appendKeyValues(dst, num, kvs)
	}
	return append(dst, b...)
}

// storedKeyValues returns the field-num-tagged KeyValue messages of kvs as
// stored with its set, encoding and storing them if the set has none under
// num; nil if kvs is no set's.
func (e *ProtoEncoder) storedKeyValues(num protowire.Number, kvs []*commonpb.KeyValue) []byte {
	set := e.Shared.Find(kvs)
	if set == nil {
		return nil
	}
	if b := set.Proto(int32(num)); b != nil {
		return b
	}
	// A separate encoder, because e is in the middle of its size pass.
	if e.sub == nil {
		e.sub = &ProtoEncoder{}
	}
	s := e.sub
	s.sizes, s.pos = s.sizes[:0], 0
	s.sizeKeyValues(num, kvs)
	e.scratch = s.appendKeyValues(e.scratch[:0], num, kvs)
	return set.StoreProto(int32(num), e.scratch)
}

// AnyValue's oneof members are written even when zero: presence is the
// value's type.
func (e *ProtoEncoder) sizeAnyValue(v *commonpb.AnyValue) int {
	idx := e.mark()
	n := 0
	switch x := v.Value.(type) {
	case *commonpb.AnyValue_StringValue:
		n = lenField(1, len(x.StringValue))
	case *commonpb.AnyValue_BoolValue:
		n = protowire.SizeTag(2) + 1
	case *commonpb.AnyValue_IntValue:
		n = protowire.SizeTag(3) + protowire.SizeVarint(uint64(x.IntValue))
	case *commonpb.AnyValue_DoubleValue:
		n = protowire.SizeTag(4) + 8
	case *commonpb.AnyValue_BytesValue:
		n = lenField(7, len(x.BytesValue))
	case nil:
	default: // array and kvlist: rare in metrics, left to proto
		n = proto.Size(v)
	}
	e.sizes[idx] = n
	return n
}

func (e *ProtoEncoder) appendAnyValue(dst []byte, v *commonpb.AnyValue) []byte {
	switch x := v.Value.(type) {
	case *commonpb.AnyValue_StringValue:
		dst = appendTag(dst, 1, protowire.BytesType)
		return protowire.AppendString(dst, x.StringValue)
	case *commonpb.AnyValue_BoolValue:
		dst = appendTag(dst, 2, protowire.VarintType)
		return appendUvarint(dst, protowire.EncodeBool(x.BoolValue))
	case *commonpb.AnyValue_IntValue:
		dst = appendTag(dst, 3, protowire.VarintType)
		return appendUvarint(dst, uint64(x.IntValue))
	case *commonpb.AnyValue_DoubleValue:
		dst = appendTag(dst, 4, protowire.Fixed64Type)
		return protowire.AppendFixed64(dst, math.Float64bits(x.DoubleValue))
	case *commonpb.AnyValue_BytesValue:
		dst = appendTag(dst, 7, protowire.BytesType)
		return protowire.AppendBytes(dst, x.BytesValue)
	case nil:
		return dst
	}
	dst, _ = proto.MarshalOptions{}.MarshalAppend(dst, v)
	return dst
}

func (e *ProtoEncoder) sizeScopeMetrics(sm *metricspb.ScopeMetrics) int {
	idx := e.mark()
	n := 0
	if sm.Scope != nil {
		n += lenField(1, e.sizeScope(sm.Scope))
	}
	for _, m := range sm.Metrics {
		n += lenField(2, e.sizeMetric(m))
	}
	n += strSize(3, sm.SchemaUrl)
	e.sizes[idx] = n
	return n
}

func (e *ProtoEncoder) appendScopeMetrics(dst []byte, sm *metricspb.ScopeMetrics) []byte {
	if sm.Scope != nil {
		dst = e.msg(dst, 1)
		dst = e.appendScope(dst, sm.Scope)
	}
	for _, m := range sm.Metrics {
		dst = e.maybeFlush(dst)
		dst = e.msg(dst, 2)
		dst = e.appendMetric(dst, m)
	}
	return appendStr(dst, 3, sm.SchemaUrl)
}

func (e *ProtoEncoder) sizeMetric(m *metricspb.Metric) int {
	idx := e.mark()
	n := strSize(1, m.Name) + strSize(2, m.Description) + strSize(3, m.Unit)
	switch d := m.Data.(type) {
	case *metricspb.Metric_Gauge:
		g := e.mark()
		s := e.sizeNumberPoints(d.Gauge.DataPoints)
		e.sizes[g] = s
		n += lenField(5, s)
	case *metricspb.Metric_Sum:
		g := e.mark()
		s := e.sizeNumberPoints(d.Sum.DataPoints) + varintSize(2, uint64(d.Sum.AggregationTemporality))
		if d.Sum.IsMonotonic {
			s += protowire.SizeTag(3) + 1
		}
		e.sizes[g] = s
		n += lenField(7, s)
	case *metricspb.Metric_Histogram:
		g := e.mark()
		s := e.sizeHistogramPoints(d.Histogram.DataPoints) + varintSize(2, uint64(d.Histogram.AggregationTemporality))
		e.sizes[g] = s
		n += lenField(9, s)
	case *metricspb.Metric_ExponentialHistogram:
		g := e.mark()
		s := proto.Size(d.ExponentialHistogram)
		e.sizes[g] = s
		n += lenField(10, s)
	case *metricspb.Metric_Summary:
		g := e.mark()
		s := e.sizeSummaryPoints(d.Summary.DataPoints)
		e.sizes[g] = s
		n += lenField(11, s)
	}
	n += e.sizePointAttrs(12, m.Metadata) // a scrape's metadata is shared, like its point attributes
	e.sizes[idx] = n
	return n
}

func (e *ProtoEncoder) appendMetric(dst []byte, m *metricspb.Metric) []byte {
	dst = appendStr(dst, 1, m.Name)
	dst = appendStr(dst, 2, m.Description)
	dst = appendStr(dst, 3, m.Unit)
	switch d := m.Data.(type) {
	case *metricspb.Metric_Gauge:
		dst = e.msg(dst, 5)
		dst = e.appendNumberPoints(dst, d.Gauge.DataPoints)
	case *metricspb.Metric_Sum:
		dst = e.msg(dst, 7)
		dst = e.appendNumberPoints(dst, d.Sum.DataPoints)
		dst = appendVarint(dst, 2, uint64(d.Sum.AggregationTemporality))
		if d.Sum.IsMonotonic {
			dst = appendTag(dst, 3, protowire.VarintType)
			dst = append(dst, 1)
		}
	case *metricspb.Metric_Histogram:
		dst = e.msg(dst, 9)
		dst = e.appendHistogramPoints(dst, d.Histogram.DataPoints)
		dst = appendVarint(dst, 2, uint64(d.Histogram.AggregationTemporality))
	case *metricspb.Metric_ExponentialHistogram:
		dst = e.msg(dst, 10)
		dst, _ = proto.MarshalOptions{}.MarshalAppend(dst, d.ExponentialHistogram)
	case *metricspb.Metric_Summary:
		dst = e.msg(dst, 11)
		dst = e.appendSummaryPoints(dst, d.Summary.DataPoints)
	}
	return e.appendPointAttrs(dst, 12, m.Metadata)
}

func (e *ProtoEncoder) sizeNumberPoints(pts []*metricspb.NumberDataPoint) int {
	n := 0
	for _, p := range pts {
		idx := e.mark()
		s := fixed64Size(2, p.StartTimeUnixNano) + fixed64Size(3, p.TimeUnixNano)
		switch p.Value.(type) {
		case *metricspb.NumberDataPoint_AsDouble:
			s += protowire.SizeTag(4) + 8
		case *metricspb.NumberDataPoint_AsInt:
			s += protowire.SizeTag(6) + 8
		}
		s += e.sizeExemplars(5, p.Exemplars)
		s += e.sizePointAttrs(7, p.Attributes)
		s += varintSize(8, uint64(p.Flags))
		e.sizes[idx] = s
		n += lenField(1, s)
	}
	return n
}

func (e *ProtoEncoder) appendNumberPoints(dst []byte, pts []*metricspb.NumberDataPoint) []byte {
	for _, p := range pts {
		dst = e.maybeFlush(dst)
		dst = e.msg(dst, 1)
		dst = appendFixed64(dst, 2, p.StartTimeUnixNano)
		dst = appendFixed64(dst, 3, p.TimeUnixNano)
		switch v := p.Value.(type) {
		case *metricspb.NumberDataPoint_AsDouble:
			dst = appendTag(dst, 4, protowire.Fixed64Type)
			dst = protowire.AppendFixed64(dst, math.Float64bits(v.AsDouble))
		case *metricspb.NumberDataPoint_AsInt:
			dst = appendTag(dst, 6, protowire.Fixed64Type)
			dst = protowire.AppendFixed64(dst, uint64(v.AsInt))
		}
		dst = e.appendExemplars(dst, 5, p.Exemplars)
		dst = e.appendPointAttrs(dst, 7, p.Attributes)
		dst = appendVarint(dst, 8, uint64(p.Flags))
	}
	return dst
}

func (e *ProtoEncoder) sizeExemplars(num protowire.Number, exs []*metricspb.Exemplar) int {
	n := 0
	for _, x := range exs {
		idx := e.mark()
		s := fixed64Size(2, x.TimeUnixNano)
		switch x.Value.(type) {
		case *metricspb.Exemplar_AsDouble:
			s += protowire.SizeTag(3) + 8
		case *metricspb.Exemplar_AsInt:
			s += protowire.SizeTag(6) + 8
		}
		if len(x.SpanId) > 0 {
			s += lenField(4, len(x.SpanId))
		}
		if len(x.TraceId) > 0 {
			s += lenField(5, len(x.TraceId))
		}
		s += e.sizeKeyValues(7, x.FilteredAttributes)
		e.sizes[idx] = s
		n += lenField(num, s)
	}
	return n
}

func (e *ProtoEncoder) appendExemplars(dst []byte, num protowire.Number, exs []*metricspb.Exemplar) []byte {
	for _, x := range exs {
		dst = e.msg(dst, num)
		dst = appendFixed64(dst, 2, x.TimeUnixNano)
		switch v := x.Value.(type) {
		case *metricspb.Exemplar_AsDouble:
			dst = appendTag(dst, 3, protowire.Fixed64Type)
			dst = protowire.AppendFixed64(dst, math.Float64bits(v.AsDouble))
		case *metricspb.Exemplar_AsInt:
			dst = appendTag(dst, 6, protowire.Fixed64Type)
			dst = protowire.AppendFixed64(dst, uint64(v.AsInt))
		}
		if len(x.SpanId) > 0 {
			dst = appendTag(dst, 4, protowire.BytesType)
			dst = protowire.AppendBytes(dst, x.SpanId)
		}
		if len(x.TraceId) > 0 {
			dst = appendTag(dst, 5, protowire.BytesType)
			dst = protowire.AppendBytes(dst, x.TraceId)
		}
		dst = e.appendKeyValues(dst, 7, x.FilteredAttributes)
	}
	return dst
}

func optDoubleSize(num protowire.Number, v *float64) int {
	if v == nil {
		return 0
	}
	return protowire.SizeTag(num) + 8
}

func appendOptDouble(dst []byte, num protowire.Number, v *float64) []byte {
	if v == nil {
		return dst
	}
	dst = appendTag(dst, num, protowire.Fixed64Type)
	return protowire.AppendFixed64(dst, math.Float64bits(*v))
}

func (e *ProtoEncoder) sizeHistogramPoints(pts []*metricspb.HistogramDataPoint) int {
	n := 0
	for _, p := range pts {
		idx := e.mark()
		s := fixed64Size(2, p.StartTimeUnixNano) + fixed64Size(3, p.TimeUnixNano) + fixed64Size(4, p.Count)
		s += optDoubleSize(5, p.Sum)
		if len(p.BucketCounts) > 0 {
			s += lenField(6, 8*len(p.BucketCounts))
		}
		if len(p.ExplicitBounds) > 0 {
			s += lenField(7, 8*len(p.ExplicitBounds))
		}
		s += e.sizeExemplars(8, p.Exemplars)
		s += e.sizePointAttrs(9, p.Attributes)
		s += varintSize(10, uint64(p.Flags))
		s += optDoubleSize(11, p.Min) + optDoubleSize(12, p.Max)
		e.sizes[idx] = s
		n += lenField(1, s)
	}
	return n
}

func (e *ProtoEncoder) appendHistogramPoints(dst []byte, pts []*metricspb.HistogramDataPoint) []byte {
	for _, p := range pts {
		dst = e.maybeFlush(dst)
		dst = e.msg(dst, 1)
		dst = appendFixed64(dst, 2, p.StartTimeUnixNano)
		dst = appendFixed64(dst, 3, p.TimeUnixNano)
		dst = appendFixed64(dst, 4, p.Count)
		dst = appendOptDouble(dst, 5, p.Sum)
		if len(p.BucketCounts) > 0 {
			dst = appendTag(dst, 6, protowire.BytesType)
			dst = appendUvarint(dst, uint64(8*len(p.BucketCounts)))
			for _, c := range p.BucketCounts {
				dst = protowire.AppendFixed64(dst, c)
			}
		}
		if len(p.ExplicitBounds) > 0 {
			dst = appendTag(dst, 7, protowire.BytesType)
			dst = appendUvarint(dst, uint64(8*len(p.ExplicitBounds)))
			for _, b := range p.ExplicitBounds {
				dst = protowire.AppendFixed64(dst, math.Float64bits(b))
			}
		}
		dst = e.appendExemplars(dst, 8, p.Exemplars)
		dst = e.appendPointAttrs(dst, 9, p.Attributes)
		dst = appendVarint(dst, 10, uint64(p.Flags))
		dst = appendOptDouble(dst, 11, p.Min)
		dst = appendOptDouble(dst, 12, p.Max)
	}
	return dst
}

func doubleSize(num protowire.Number, v float64) int {
	if math.Float64bits(v) == 0 {
		return 0
	}
	return protowire.SizeTag(num) + 8
}

func appendDouble(dst []byte, num protowire.Number, v float64) []byte {
	if math.Float64bits(v) == 0 {
		return dst
	}
	dst = appendTag(dst, num, protowire.Fixed64Type)
	return protowire.AppendFixed64(dst, math.Float64bits(v))
}

func (e *ProtoEncoder) sizeSummaryPoints(pts []*metricspb.SummaryDataPoint) int {
	n := 0
	for _, p := range pts {
		idx := e.mark()
		s := fixed64Size(2, p.StartTimeUnixNano) + fixed64Size(3, p.TimeUnixNano) + fixed64Size(4, p.Count) + doubleSize(5, p.Sum)
		for _, q := range p.QuantileValues {
			qs := doubleSize(1, q.Quantile) + doubleSize(2, q.Value)
			s += lenField(6, qs)
		}
		s += e.sizePointAttrs(7, p.Attributes)
		s += varintSize(8, uint64(p.Flags))
		e.sizes[idx] = s
		n += lenField(1, s)
	}
	return n
}

func (e *ProtoEncoder) appendSummaryPoints(dst []byte, pts []*metricspb.SummaryDataPoint) []byte {
	for _, p := range pts {
		dst = e.maybeFlush(dst)
		dst = e.msg(dst, 1)
		dst = appendFixed64(dst, 2, p.StartTimeUnixNano)
		dst = appendFixed64(dst, 3, p.TimeUnixNano)
		dst = appendFixed64(dst, 4, p.Count)
		dst = appendDouble(dst, 5, p.Sum)
		for _, q := range p.QuantileValues {
			dst = appendTag(dst, 6, protowire.BytesType)
			dst = appendUvarint(dst, uint64(doubleSize(1, q.Quantile)+doubleSize(2, q.Value)))
			dst = appendDouble(dst, 1, q.Quantile)
			dst = appendDouble(dst, 2, q.Value)
		}
		dst = e.appendPointAttrs(dst, 7, p.Attributes)
		dst = appendVarint(dst, 8, uint64(p.Flags))
	}
	return dst
}

// int32Size and appendInt32 are for an int32 field: a varint of the value
// sign-extended to 64 bits, as protobuf encodes it; zero is not written.
func int32Size(num protowire.Number, v int32) int { return varintSize(num, uint64(int64(v))) }

func appendInt32(dst []byte, num protowire.Number, v int32) []byte {
	return appendVarint(dst, num, uint64(int64(v)))
}
