package main

import (
	"fmt"
	"sort"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// otelstep's choices: where its wire code differs from a plain field-by-field
// codec of the generated types. This table is the one place they are made;
// the generators read them from Message.Choice and Field.Choice. Load fails
// when an entry names a message or field the descriptors do not have.

// MessageChoice is how otelstep's codec treats one message.
type MessageChoice struct {
	// Record: kept as the wire record it came in (pipeline.Records) by the
	// protobuf decoder, checked but not decoded into the batch; the
	// decoders of one record at a time (SpanDecoder, LogRecordDecoder) and
	// the record scanners read it.
	Record bool
	// Pipeline is the pipeline type the decoders fill instead of the
	// generated one ("pipeline.ResourceSpans"): the levels above the
	// records.
	Pipeline string
	// FieldsVar names the message's field table (field names by number, for
	// errors and the schema test); messages of one shape share one.
	FieldsVar string
	// Name is the stem of the Go names of the message's code (the decode
	// method, its lists and slabs) where the Go type's last part, lower-cased
	// first, does not serve: "scope" for InstrumentationScope; a request's
	// is its signal's.
	Name string
	// AllocWith names the type a repeated element of the message is
	// allocated as, together with its singular message field value and that
	// value's string member (KeyValue: the attribute, nearly always a
	// string, in one allocation instead of three).
	AllocWith string
	// ValidShape names a hand-written check of the message's common
	// shapes the validator tries first (func (d *decoder) NAME(p, end, lv
	// int) (ok, decided bool)).
	ValidShape string
	// New: a singular field of the message gets a message of its own (new)
	// rather than one from a slab; see FieldChoice.New.
	New bool
}

// FieldChoice is how otelstep's codec treats one field.
type FieldChoice struct {
	// Skip, when set, says why the codec does not handle the field: the
	// decoders skip it like an unknown field and the encoders never write
	// it. Every other field must be handled by every generator.
	Skip string
	// IDSize names the size constant of a trace or span id
	// ("TraceIDSize"): the field must be empty or that long (ValidID).
	IDSize string
	// SharedAttrs: the encoders write the field (attributes that are a
	// producer's pipeline.AttrSet) from the encodings stored with the set
	// when given a pipeline.SharedAttrs.
	SharedAttrs bool
	// PipelineName is the field's name in the message's Pipeline type
	// where it differs from the generated type's: "SchemaURL", and
	// "Records" for the items of a Record message.
	PipelineName string
	// Scan is what ScanSpan does with a field of a Span record (and of a
	// message it scans): the SpanSummary field it reads the value into,
	// "message" to scan the message's fields that have a Scan, or
	// "attributes" to look the attributes up by key.
	Scan string
	// ValueKind names an AnyValue member's ValueKind where "Value" and the
	// field's name without "_value" does not serve.
	ValueKind string
	// New: the protobuf decoder allocates the field's message or oneof
	// wrapper with new rather than from a slab. For what is rare, or few
	// per request and early in the body: a slab extrapolates its chunk's
	// size from how many it handed out so far over the rest of the body,
	// and one early occurrence would size a chunk for thousands.
	New bool
}

const (
	common   = "opentelemetry.proto.common.v1."
	resource = "opentelemetry.proto.resource.v1."
	trace    = "opentelemetry.proto.trace.v1."
	metrics  = "opentelemetry.proto.metrics.v1."
	logs     = "opentelemetry.proto.logs.v1."
	coltrace = "opentelemetry.proto.collector.trace.v1."
	colmet   = "opentelemetry.proto.collector.metrics.v1."
	collogs  = "opentelemetry.proto.collector.logs.v1."
)

var messageChoices = map[protoreflect.FullName]MessageChoice{
	coltrace + "ExportTraceServiceRequest":            {FieldsVar: "resourceSpansRequestFields", Name: "traces"},
	colmet + "ExportMetricsServiceRequest":            {FieldsVar: "resourceMetricsRequestFields", Name: "metrics"},
	collogs + "ExportLogsServiceRequest":              {FieldsVar: "resourceLogsRequestFields", Name: "logs"},
	resource + "Resource":                             {FieldsVar: "resourceFields", New: true},
	common + "InstrumentationScope":                   {FieldsVar: "scopeFields", Name: "scope", New: true},
	common + "KeyValue":                               {FieldsVar: "keyValueFields", AllocWith: "attrData", ValidShape: "keyValueShape"},
	common + "AnyValue":                               {FieldsVar: "anyValueFields"},
	common + "ArrayValue":                             {FieldsVar: "valuesFields"},
	common + "KeyValueList":                           {FieldsVar: "valuesFields"},
	common + "EntityRef":                              {FieldsVar: "entityRefFields"},
	trace + "ResourceSpans":                           {FieldsVar: "resourceSpansFields", Pipeline: "pipeline.ResourceSpans"},
	trace + "ScopeSpans":                              {FieldsVar: "scopeSpansFields", Pipeline: "pipeline.ScopeSpans"},
	trace + "Span":                                    {FieldsVar: "spanFields", Record: true},
	trace + "Span.Event":                              {FieldsVar: "eventFields"},
	trace + "Span.Link":                               {FieldsVar: "linkFields"},
	trace + "Status":                                  {FieldsVar: "statusFields"},
	logs + "ResourceLogs":                             {FieldsVar: "resourceLogsFields", Pipeline: "pipeline.ResourceLogs"},
	logs + "ScopeLogs":                                {FieldsVar: "scopeLogsFields", Pipeline: "pipeline.ScopeLogs"},
	logs + "LogRecord":                                {FieldsVar: "logRecordFields", Record: true},
	metrics + "ResourceMetrics":                       {FieldsVar: "resourceMetricsFields"},
	metrics + "ScopeMetrics":                          {FieldsVar: "scopeMetricsFields"},
	metrics + "Metric":                                {FieldsVar: "metricFields"},
	metrics + "Gauge":                                 {FieldsVar: "gaugeFields"},
	metrics + "Sum":                                   {FieldsVar: "sumFields"},
	metrics + "Histogram":                             {FieldsVar: "histogramFields"},
	metrics + "ExponentialHistogram":                  {FieldsVar: "histogramFields"},
	metrics + "Summary":                               {FieldsVar: "summaryFields"},
	metrics + "NumberDataPoint":                       {FieldsVar: "numberPointFields"},
	metrics + "HistogramDataPoint":                    {FieldsVar: "histogramPointFields"},
	metrics + "ExponentialHistogramDataPoint":         {FieldsVar: "expHistogramPointFields"},
	metrics + "ExponentialHistogramDataPoint.Buckets": {FieldsVar: "bucketsFields"},
	metrics + "SummaryDataPoint":                      {FieldsVar: "summaryPointFields"},
	metrics + "SummaryDataPoint.ValueAtQuantile":      {FieldsVar: "quantileFields"},
	metrics + "Exemplar":                              {FieldsVar: "exemplarFields"},
}

// fieldChoices is keyed by the field's full name (Field.FullName).
var fieldChoices = map[string]FieldChoice{
	trace + "Span.trace_id":                   {IDSize: "TraceIDSize"},
	trace + "Span.span_id":                    {IDSize: "SpanIDSize"},
	trace + "Span.parent_span_id":             {IDSize: "SpanIDSize"},
	trace + "Span.Link.trace_id":              {IDSize: "TraceIDSize"},
	trace + "Span.Link.span_id":               {IDSize: "SpanIDSize"},
	logs + "LogRecord.trace_id":               {IDSize: "TraceIDSize"},
	logs + "LogRecord.span_id":                {IDSize: "SpanIDSize"},
	metrics + "Exemplar.trace_id":             {IDSize: "TraceIDSize"},
	metrics + "Exemplar.span_id":              {IDSize: "SpanIDSize"},
	metrics + "Metric.metadata":               {SharedAttrs: true},
	metrics + "NumberDataPoint.attributes":    {SharedAttrs: true},
	metrics + "HistogramDataPoint.attributes": {SharedAttrs: true},
	metrics + "SummaryDataPoint.attributes":   {SharedAttrs: true},
	trace + "Span.name":                       {Scan: "Name"},
	trace + "Span.kind":                       {Scan: "Kind"},
	trace + "Span.start_time_unix_nano":       {Scan: "Start"},
	trace + "Span.end_time_unix_nano":         {Scan: "End"},
	trace + "Span.attributes":                 {Scan: "attributes"},
	trace + "Span.status":                     {Scan: "message"},
	trace + "Status.code":                     {Scan: "StatusCode"},
	common + "AnyValue.string_value_strindex": {New: true, ValueKind: "ValueStrindex"},
	common + "AnyValue.array_value":           {New: true},
	common + "AnyValue.kvlist_value":          {New: true},
	common + "AnyValue.bytes_value":           {New: true},
	metrics + "Metric.summary":                {New: true},
	metrics + "Exemplar.as_int":               {New: true},
	trace + "ResourceSpans.schema_url":        {PipelineName: "SchemaURL"},
	trace + "ScopeSpans.schema_url":           {PipelineName: "SchemaURL"},
	trace + "ScopeSpans.spans":                {PipelineName: "Records"},
	logs + "ResourceLogs.schema_url":          {PipelineName: "SchemaURL"},
	logs + "ScopeLogs.schema_url":             {PipelineName: "SchemaURL"},
	logs + "ScopeLogs.log_records":            {PipelineName: "Records"},
}

// applyChoices sets each message's and field's choice from the tables,
// failing on an entry that names nothing in s.
func (s *Schema) applyChoices(msgs map[protoreflect.FullName]MessageChoice, fields map[string]FieldChoice) error {
	var unknown []string
	for name, c := range msgs {
		m := s.byName[name]
		if m == nil {
			unknown = append(unknown, "message "+string(name))
			continue
		}
		m.Choice = c
	}
	byName := map[string]*Field{}
	for _, m := range s.Messages {
		for _, f := range m.Fields {
			byName[f.FullName()] = f
		}
	}
	for name, c := range fields {
		f := byName[name]
		if f == nil {
			unknown = append(unknown, "field "+name)
			continue
		}
		f.Choice = c
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("choices name what the OTLP descriptors do not have: %v", unknown)
	}
	return nil
}

// jsonDecodeChoice is how the OTLP/JSON decoder allocates or reads one
// message or field where the default does not serve. By default a message
// in a list comes from its type's pool (jsonList), and a message held by a
// field or a oneof wrapper is allocated on its own.
type jsonDecodeChoice struct {
	// Pool, on a message or a oneof member of scalar type: allocated from
	// its type's pool also where it is held by a field (a message) or each
	// time its member is set (a wrapper). For the values most requests have
	// many of.
	Pool bool
	// Pair, on a oneof member of message type: the message is allocated
	// together with its oneof wrapper, from a pool of pairs.
	Pair bool
	// Spare, on a message, names the oneof member (of scalar type) whose
	// wrapper is allocated together with the message where a field holds
	// it: its decode method, decodeTSpare, takes the wrapper to use if that
	// member is set (or nil), and decodeT passes nil. For the member most
	// values hold.
	Spare string
	// Quick, on a message, names the hand-written fast path its decode
	// tries first: func (d *jsonDecoder) NAME(m *T, field func(int) error)
	// (done bool, err error), which decodes the object and reports done, or
	// leaves d.pos where it was; field decodes field f of m. With Spare,
	// the spare wrapper (or nil) comes between m and field.
	Quick string
	// Base64, on a bytes field: base64 as protojson reads it. A bytes field
	// must be base64 or a trace or span id (FieldChoice.IDSize): OTLP/JSON
	// writes ids in hex.
	Base64 bool
}

// jsonDecodeChoices is keyed by the full name of a message or a field;
// genJSONDecode fails on an entry that names nothing or does not fit.
var jsonDecodeChoices = map[string]jsonDecodeChoice{
	common + "KeyValue":                   {Quick: "quickKeyValue"},
	common + "AnyValue":                   {Quick: "quickAnyValue", Spare: "string_value"},
	common + "AnyValue.string_value":      {Pool: true},
	common + "AnyValue.bytes_value":       {Base64: true},
	trace + "Status":                      {Pool: true},
	metrics + "Metric.gauge":              {Pair: true},
	metrics + "Metric.sum":                {Pair: true},
	metrics + "Metric.histogram":          {Pair: true},
	metrics + "NumberDataPoint.as_double": {Pool: true},
}
