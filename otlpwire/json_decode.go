package otlpwire

import (
	"fmt"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// The decoders are written out per message rather than driven by protobuf
// reflection: protojson spends most of its time in reflection and
// allocation. Each message has an index function mapping both JSON
// spellings of a field name to a small field number and the canonical name
// (for error paths), and a decode method that fills the generated struct.

// DecodeMetrics parses an OTLP/JSON ExportMetricsServiceRequest as the spec
// and the OpenTelemetry Collector write it: hex trace and span ids, camelCase
// or snake_case field names, 64-bit integers as strings or numbers, enums as
// integers or names (a name the enum does not have is an error, as in the
// collector). Unknown fields are ignored.
func DecodeMetrics(data []byte) (*colmetricspb.ExportMetricsServiceRequest, error) {
	req := &colmetricspb.ExportMetricsServiceRequest{}
	d := newDecoder(data)
	if err := jsonRequest(d, "resourceMetrics", "resource_metrics", &req.ResourceMetrics, &d.resourceMetrics, d.resourceMetricsMsg); err != nil {
		return nil, fmt.Errorf("otlpwire: decode OTLP/JSON metrics: %w", err)
	}
	return req, nil
}

// DecodeTraces parses an OTLP/JSON ExportTraceServiceRequest; see DecodeMetrics.
func DecodeTraces(data []byte) (*coltracepb.ExportTraceServiceRequest, error) {
	req := &coltracepb.ExportTraceServiceRequest{}
	d := newDecoder(data)
	if err := jsonRequest(d, "resourceSpans", "resource_spans", &req.ResourceSpans, &d.resourceSpans, d.resourceSpansMsg); err != nil {
		return nil, fmt.Errorf("otlpwire: decode OTLP/JSON traces: %w", err)
	}
	return req, nil
}

// DecodeLogs parses an OTLP/JSON ExportLogsServiceRequest; see DecodeMetrics.
func DecodeLogs(data []byte) (*collogspb.ExportLogsServiceRequest, error) {
	req := &collogspb.ExportLogsServiceRequest{}
	d := newDecoder(data)
	if err := jsonRequest(d, "resourceLogs", "resource_logs", &req.ResourceLogs, &d.resourceLogs, d.resourceLogsMsg); err != nil {
		return nil, fmt.Errorf("otlpwire: decode OTLP/JSON logs: %w", err)
	}
	return req, nil
}

func newDecoder(data []byte) *jsonDecoder {
	return &jsonDecoder{b: data}
}

// pools holds the storage for every message type that occurs in lists.
type pools struct {
	idBytes jsonSlab[byte]

	keyValues  pool[commonpb.KeyValue]
	anyValues  pool[commonpb.AnyValue]
	strValues  pool[commonpb.AnyValue_StringValue]
	anyPairs   pool[anyValueData]
	entityRefs pool[commonpb.EntityRef]

	resourceMetrics pool[metricspb.ResourceMetrics]
	scopeMetrics    pool[metricspb.ScopeMetrics]
	metrics         pool[metricspb.Metric]
	gauges          pool[jsonGaugeData]
	sums            pool[jsonSumData]
	histograms      pool[jsonHistogramData]
	numberPoints    pool[metricspb.NumberDataPoint]
	asDoubles       pool[metricspb.NumberDataPoint_AsDouble]
	histPoints      pool[metricspb.HistogramDataPoint]
	expHistPoints   pool[metricspb.ExponentialHistogramDataPoint]
	summaryPoints   pool[metricspb.SummaryDataPoint]
	quantiles       pool[metricspb.SummaryDataPoint_ValueAtQuantile]
	exemplars       pool[metricspb.Exemplar]

	resourceSpans pool[tracepb.ResourceSpans]
	scopeSpans    pool[tracepb.ScopeSpans]
	spans         pool[tracepb.Span]
	events        pool[tracepb.Span_Event]
	links         pool[tracepb.Span_Link]
	statuses      pool[tracepb.Status]

	resourceLogs pool[logspb.ResourceLogs]
	scopeLogs    pool[logspb.ScopeLogs]
	logRecords   pool[logspb.LogRecord]

	// Scratch and storage for scalar lists.
	u64s     []uint64
	u64Lists jsonSlab[uint64]
	f64s     []float64
	f64Lists jsonSlab[float64]
	strs     []string
	strLists jsonSlab[string]
}

// document decodes the whole input as one value with decode: whitespace
// around it is allowed, anything else after it is an error.
func (d *jsonDecoder) document(decode func() error) error {
	d.skipWS()
	if err := decode(); err != nil {
		return err
	}
	d.skipWS()
	if d.pos != len(d.b) {
		return d.fail(d.pos, "unexpected data after the top-level object")
	}
	return nil
}

// unknownField names the members skipped as unknown in error paths: their
// names come from the input and might be anything.
const unknownField = "(unknown field)"

// message decodes a JSON object as a protobuf message. index maps a member
// name to a field number below 32 and its canonical name, or -1 for
// unknown members, which are skipped. oneof has a bit set for each field in
// the message's oneof. field decodes the value of field f at d.pos.
//
// Like protojson it rejects a field given twice (under either name) and two
// members of a oneof, and treats null as an absent field: null does not
// count towards the oneof, but still counts as the field's one occurrence.
func (d *jsonDecoder) message(index func([]byte) (int, string), oneof uint32, field func(f int) error) error {
	start := d.pos
	if d.peek() != '{' {
		return d.typeError(start, "an object")
	}
	if d.depth++; d.depth > maxJSONDepth {
		return d.fail(start, "nesting too deep")
	}
	d.pos++
	d.skipWS()
	if d.peek() == '}' {
		d.pos++
		d.depth--
		return nil
	}
	return d.members(index, oneof, 0, field)
}

// members decodes the members of an object that message has opened, from
// d.pos at a member name to the closing '}'. seen holds the fields already
// decoded (the fast paths start here after decoding some themselves).
func (d *jsonDecoder) members(index func([]byte) (int, string), oneof, seen uint32, field func(f int) error) error {
	oneofSet := oneof&seen != 0
	for {
		keyOff := d.pos
		k, err := d.key()
		if err != nil {
			return err
		}
		f, name := index(k)
		switch {
		case f < 0:
			if err := d.skip(maxJSONDepth - d.depth); err != nil {
				return within(err, unknownField)
			}
		case seen&(1<<f) != 0:
			return within(d.fail(keyOff, "duplicate field"), name)
		default:
			seen |= 1 << f
			if d.null() {
				break
			}
			if oneof&(1<<f) != 0 {
				if oneofSet {
					return within(d.fail(keyOff, "a second field of a oneof"), name)
				}
				oneofSet = true
			}
			if err := field(f); err != nil {
				return within(err, name)
			}
		}
		more, err := d.separator('}')
		if err != nil {
			return err
		}
		if !more {
			d.depth--
			return nil
		}
	}
}

// ---- common ----

// Fields of KeyValue.
const (
	kvKey = iota
	kvValue
	kvKeyStrindex
)

func keyValueField(k []byte) (int, string) {
	switch string(k) {
	case "key":
		return kvKey, "key"
	case "value":
		return kvValue, "value"
	case "keyStrindex", "key_strindex":
		return kvKeyStrindex, "keyStrindex"
	}
	return -1, ""
}

func (d *jsonDecoder) keyValue(kv *commonpb.KeyValue) error {
	field := func(f int) (err error) {
		switch f {
		case kvKey:
			kv.Key, err = d.str()
		case kvValue:
			kv.Value, err = d.singleAnyValue()
		case kvKeyStrindex:
			kv.KeyStrindex, err = d.int32Value()
		}
		return err
	}
	if done, err := d.quickKeyValue(kv, field); done {
		return err
	}
	return d.message(keyValueField, 0, field)
}

// attributes decodes a list of KeyValue.
func (d *jsonDecoder) attributes() ([]*commonpb.KeyValue, error) {
	return jsonList(d, &d.keyValues, d.keyValue)
}

// Fields of AnyValue, all in its oneof.
const (
	avString = iota
	avBool
	avInt
	avDouble
	avArray
	avKvlist
	avBytes
	avStringStrindex
	avOneof = 1<<(avStringStrindex+1) - 1
)

func anyValueField(k []byte) (int, string) {
	switch string(k) {
	case "stringValue", "string_value":
		return avString, "stringValue"
	case "boolValue", "bool_value":
		return avBool, "boolValue"
	case "intValue", "int_value":
		return avInt, "intValue"
	case "doubleValue", "double_value":
		return avDouble, "doubleValue"
	case "arrayValue", "array_value":
		return avArray, "arrayValue"
	case "kvlistValue", "kvlist_value":
		return avKvlist, "kvlistValue"
	case "bytesValue", "bytes_value":
		return avBytes, "bytesValue"
	case "stringValueStrindex", "string_value_strindex":
		return avStringStrindex, "stringValueStrindex"
	}
	return -1, ""
}

// valuesField is the only field of ArrayValue and KeyValueList.
func valuesField(k []byte) (int, string) {
	if string(k) == "values" {
		return 0, "values"
	}
	return -1, ""
}

// anyValueData allocates an AnyValue together with the wrapper of its most
// common content, a string: one allocation instead of two.
type anyValueData struct {
	msg commonpb.AnyValue
	str commonpb.AnyValue_StringValue
}

// singleAnyValue decodes an AnyValue held by pointer (a KeyValue's value, a
// log body), as opposed to one in a list.
func (d *jsonDecoder) singleAnyValue() (*commonpb.AnyValue, error) {
	x := d.anyPairs.new(d)
	return &x.msg, d.anyValueWith(&x.msg, &x.str)
}

// anyValue decodes an AnyValue in a list.
func (d *jsonDecoder) anyValue(v *commonpb.AnyValue) error {
	return d.anyValueWith(v, nil)
}

// anyValueWith decodes an AnyValue into v, using str (if not nil) as the
// storage for a string value.
func (d *jsonDecoder) anyValueWith(v *commonpb.AnyValue, str *commonpb.AnyValue_StringValue) error {
	if d.quickStringValue(v, str) {
		return nil
	}
	return d.message(anyValueField, avOneof, func(f int) error {
		switch f {
		case avString:
			s, err := d.str()
			if err != nil {
				return err
			}
			v.Value = d.stringValue(s, str)
		case avBool:
			b, err := d.boolValue()
			if err != nil {
				return err
			}
			v.Value = &commonpb.AnyValue_BoolValue{BoolValue: b}
		case avInt:
			n, err := d.int64Value()
			if err != nil {
				return err
			}
			v.Value = &commonpb.AnyValue_IntValue{IntValue: n}
		case avDouble:
			x, err := d.doubleValue()
			if err != nil {
				return err
			}
			v.Value = &commonpb.AnyValue_DoubleValue{DoubleValue: x}
		case avArray:
			a := &commonpb.ArrayValue{}
			v.Value = &commonpb.AnyValue_ArrayValue{ArrayValue: a}
			return d.message(valuesField, 0, func(int) (err error) {
				a.Values, err = jsonList(d, &d.anyValues, d.anyValue)
				return err
			})
		case avKvlist:
			l := &commonpb.KeyValueList{}
			v.Value = &commonpb.AnyValue_KvlistValue{KvlistValue: l}
			return d.message(valuesField, 0, func(int) (err error) {
				l.Values, err = d.attributes()
				return err
			})
		case avBytes:
			b, err := d.bytesValue()
			if err != nil {
				return err
			}
			v.Value = &commonpb.AnyValue_BytesValue{BytesValue: b}
		case avStringStrindex:
			n, err := d.int32Value()
			if err != nil {
				return err
			}
			v.Value = &commonpb.AnyValue_StringValueStrindex{StringValueStrindex: n}
		}
		return nil
	})
}

// Fields of Resource.
const (
	resAttributes = iota
	resDroppedAttributesCount
	resEntityRefs
)

func resourceField(k []byte) (int, string) {
	switch string(k) {
	case "attributes":
		return resAttributes, "attributes"
	case "droppedAttributesCount", "dropped_attributes_count":
		return resDroppedAttributesCount, "droppedAttributesCount"
	case "entityRefs", "entity_refs":
		return resEntityRefs, "entityRefs"
	}
	return -1, ""
}

func (d *jsonDecoder) resource() (*resourcepb.Resource, error) {
	r := &resourcepb.Resource{}
	return r, d.message(resourceField, 0, func(f int) (err error) {
		switch f {
		case resAttributes:
			r.Attributes, err = d.attributes()
		case resDroppedAttributesCount:
			r.DroppedAttributesCount, err = d.uint32Value()
		case resEntityRefs:
			r.EntityRefs, err = jsonList(d, &d.entityRefs, d.entityRef)
		}
		return err
	})
}

// Fields of EntityRef.
const (
	erSchemaURL = iota
	erType
	erIDKeys
	erDescriptionKeys
)

func entityRefField(k []byte) (int, string) {
	switch string(k) {
	case "schemaUrl", "schema_url":
		return erSchemaURL, "schemaUrl"
	case "type":
		return erType, "type"
	case "idKeys", "id_keys":
		return erIDKeys, "idKeys"
	case "descriptionKeys", "description_keys":
		return erDescriptionKeys, "descriptionKeys"
	}
	return -1, ""
}

func (d *jsonDecoder) entityRef(e *commonpb.EntityRef) error {
	return d.message(entityRefField, 0, func(f int) (err error) {
		switch f {
		case erSchemaURL:
			e.SchemaUrl, err = d.str()
		case erType:
			e.Type, err = d.str()
		case erIDKeys:
			e.IdKeys, err = scalars(d, &d.strs, &d.strLists, d.str)
		case erDescriptionKeys:
			e.DescriptionKeys, err = scalars(d, &d.strs, &d.strLists, d.str)
		}
		return err
	})
}

// Fields of InstrumentationScope.
const (
	scName = iota
	scVersion
	scAttributes
	scDroppedAttributesCount
)

func scopeField(k []byte) (int, string) {
	switch string(k) {
	case "name":
		return scName, "name"
	case "version":
		return scVersion, "version"
	case "attributes":
		return scAttributes, "attributes"
	case "droppedAttributesCount", "dropped_attributes_count":
		return scDroppedAttributesCount, "droppedAttributesCount"
	}
	return -1, ""
}

func (d *jsonDecoder) scope() (*commonpb.InstrumentationScope, error) {
	s := &commonpb.InstrumentationScope{}
	return s, d.message(scopeField, 0, func(f int) (err error) {
		switch f {
		case scName:
			s.Name, err = d.str()
		case scVersion:
			s.Version, err = d.str()
		case scAttributes:
			s.Attributes, err = d.attributes()
		case scDroppedAttributesCount:
			s.DroppedAttributesCount, err = d.uint32Value()
		}
		return err
	})
}
