package scraper

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
)

// Semantics tests: small inline pages, one rule of the collector's
// conversion each.

var t0 = time.Unix(1_800_000_000, 0)

// conv converts one page with a fresh Converter for the fixture target.
func conv(t *testing.T, page, ct string, mod ...func(*Target)) *metricspb.ResourceMetrics {
	t.Helper()
	tg := fixtureTarget("sem")
	for _, m := range mod {
		m(&tg)
	}
	rm, err := NewConverter(tg).Convert([]byte(page), ct, t0)
	if err != nil {
		t.Fatalf("convert: %v", err)
	}
	return rm
}

// metric returns the metric called name, failing the test if there is none.
func metric(t *testing.T, rm *metricspb.ResourceMetrics, name string) *metricspb.Metric {
	t.Helper()
	m := findPoints(rm, name)
	if m == nil {
		t.Fatalf("no metric %q; have %v", name, names(rm))
	}
	return m
}

func names(rm *metricspb.ResourceMetrics) []string {
	var n []string
	for _, m := range rm.ScopeMetrics[0].Metrics {
		n = append(n, m.Name)
	}
	return n
}

// pageNames are the metric names other than the synthetic series.
func pageNames(rm *metricspb.ResourceMetrics) []string {
	var n []string
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if !slices.ContainsFunc(synthDefs, func(d struct{ name, help, unit string }) bool { return d.name == m.Name }) {
			n = append(n, m.Name)
		}
	}
	slices.Sort(n)
	return n
}

func promType(m *metricspb.Metric) string {
	for _, kv := range m.Metadata {
		if kv.Key == "prometheus.type" {
			return kv.Value.GetStringValue()
		}
	}
	return ""
}

func attrs(l []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range l {
		m[kv.Key] = kv.Value.GetStringValue()
	}
	return m
}

func numPoints(m *metricspb.Metric) []*metricspb.NumberDataPoint {
	if g := m.GetGauge(); g != nil {
		return g.DataPoints
	}
	return m.GetSum().GetDataPoints()
}

func checkKind(t *testing.T, rm *metricspb.ResourceMetrics, name, kind, ptype string) *metricspb.Metric {
	t.Helper()
	m := metric(t, rm, name)
	if k := kindOf(m); k != kind {
		t.Errorf("%s: kind %s, want %s", name, k, kind)
	}
	if p := promType(m); p != ptype {
		t.Errorf("%s: prometheus.type %q, want %q", name, p, ptype)
	}
	return m
}

func TestSemanticsTypeDriven(t *testing.T) {
	rm := conv(t, `# TYPE g gauge
g 1
# TYPE c counter
c_total 2
# TYPE h histogram
h_bucket{le="1"} 1
h_bucket{le="+Inf"} 2
h_sum 3
h_count 2
# TYPE s summary
s{quantile="0.5"} 1
s_sum 2
s_count 3
`, ctText)
	checkKind(t, rm, "g", "gauge", "gauge")
	if c := checkKind(t, rm, "c_total", "sum", "counter"); !c.GetSum().IsMonotonic ||
		c.GetSum().AggregationTemporality != metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE {
		t.Errorf("counter sum: %v", c.GetSum())
	}
	checkKind(t, rm, "h", "histogram", "histogram")
	checkKind(t, rm, "s", "summary", "summary")
	if got, want := pageNames(rm), []string{"c_total", "g", "h", "s"}; !slices.Equal(got, want) {
		t.Errorf("names %v, want %v", got, want)
	}
}

func TestSemanticsOpenMetricsSuffixes(t *testing.T) {
	rm := conv(t, `# TYPE c counter
# HELP c Things.
c_total 5
c_created 1700000000.25
# TYPE i info
i_info{v="1"} 1
# TYPE st stateset
st{st="a"} 1
st{st="b"} 0
# TYPE gh gaugehistogram
gh_bucket{le="1"} 2
gh_bucket{le="+Inf"} 3
gh_gcount 3
gh_gsum 4
# EOF
`, ctOM)
	c := checkKind(t, rm, "c_total", "sum", "counter")
	if c.Description != "Things." {
		t.Errorf("help %q", c.Description)
	}
	if st := c.GetSum().DataPoints[0].StartTimeUnixNano; st != 1700000000250000000 {
		t.Errorf("counter start from _created: %d", st)
	}
	if findPoints(rm, "c_created") != nil {
		t.Error("_created of a counter is a start time, not a metric")
	}
	i := checkKind(t, rm, "i", "sum", "info")
	if i.GetSum().IsMonotonic || attrs(i.GetSum().DataPoints[0].Attributes)["v"] != "1" {
		t.Errorf("info: %v", i)
	}
	if s := checkKind(t, rm, "st", "sum", "stateset"); s.GetSum().IsMonotonic || len(s.GetSum().DataPoints) != 2 {
		t.Errorf("stateset: %v", s)
	}
	gh := checkKind(t, rm, "gh", "gauge", "gaugehistogram")
	if len(gh.GetGauge().DataPoints) != 2 || attrs(gh.GetGauge().DataPoints[0].Attributes)["le"] != "1" {
		t.Errorf("gaugehistogram keeps le as a gauge attribute: %v", gh)
	}
	checkKind(t, rm, "gh_gcount", "gauge", "unknown")
	checkKind(t, rm, "gh_gsum", "gauge", "unknown")
	if n := findPoints(rm, "scrape_samples_scraped").GetGauge().DataPoints[0].GetAsDouble(); n != 9 {
		t.Errorf("samples scraped %v, want 9 (_created counts)", n)
	}
}

func TestSemanticsUnknownAndMissingType(t *testing.T) {
	rm := conv(t, "# TYPE u untyped\nu 1\nnotype 2\n# TYPE g gauge\ng_other 3\n", ctText)
	checkKind(t, rm, "u", "gauge", "unknown")
	checkKind(t, rm, "notype", "gauge", "unknown")
	// a series that does not belong to the TYPE in force is its own unknown family
	checkKind(t, rm, "g_other", "gauge", "unknown")
	om := conv(t, "# TYPE u unknown\nu 1\n# EOF\n", ctOM)
	checkKind(t, om, "u", "gauge", "unknown")
}

// Without a TYPE line the suffixes mean nothing: every name is its own
// unknown gauge, in both formats. With one, they fold into the family.
func TestSemanticsSuffixesWithoutType(t *testing.T) {
	page := "x_total 1\nx_created 2\nx_bucket{le=\"1\"} 3\nx_sum 4\nx_count 5\nx_gsum 6\nx_gcount 7\n"
	for _, ct := range []string{ctText, ctOM} {
		p := page
		if ct == ctOM {
			p += "# EOF\n"
		}
		rm := conv(t, p, ct)
		want := []string{"x_bucket", "x_count", "x_created", "x_gcount", "x_gsum", "x_sum", "x_total"}
		if got := pageNames(rm); !slices.Equal(got, want) {
			t.Errorf("%s: names %v, want %v", ct, got, want)
		}
		for _, n := range want {
			checkKind(t, rm, n, "gauge", "unknown")
		}
		if b := metric(t, rm, "x_bucket"); attrs(numPoints(b)[0].Attributes)["le"] != "1" {
			t.Errorf("%s: untyped _bucket keeps le", ct)
		}
	}
}

func TestSemanticsSuffixesWithType(t *testing.T) {
	text := `# TYPE c counter
c_total 1
c_created 1700000000
# TYPE h histogram
h_bucket{le="1"} 1
h_bucket{le="+Inf"} 2
h_sum 3
h_count 2
h_created 1700000001
# TYPE s summary
s_sum 1
s_count 2
s_created 1700000002
`
	for _, ct := range []string{ctText, ctOM} {
		p := text
		if ct == ctOM {
			p += "# EOF\n"
		}
		rm := conv(t, p, ct)
		if got, want := pageNames(rm), []string{"c_total", "h", "s"}; !slices.Equal(got, want) {
			t.Fatalf("%s: names %v, want %v", ct, got, want)
		}
		if st := metric(t, rm, "c_total").GetSum().DataPoints[0].StartTimeUnixNano; st != 1700000000e9 {
			t.Errorf("%s: counter start %d", ct, st)
		}
		h := metric(t, rm, "h").GetHistogram().DataPoints[0]
		if h.StartTimeUnixNano != 1700000001e9 || h.Count != 2 || h.GetSum() != 3 {
			t.Errorf("%s: histogram %v", ct, h)
		}
		s := metric(t, rm, "s").GetSummary().DataPoints[0]
		if s.StartTimeUnixNano != 1700000002e9 || s.Count != 2 || s.Sum != 1 {
			t.Errorf("%s: summary %v", ct, s)
		}
	}
}

func TestSemanticsHistogramUnsortedNoInf(t *testing.T) {
	rm := conv(t, `# TYPE h histogram
h_bucket{le="+Inf"} 10
h_bucket{le="5"} 7
h_bucket{le="0.5"} 2
h_bucket{le="1"} 4
h_count 10
h_sum 20
# TYPE n histogram
n_bucket{le="1"} 1
n_bucket{le="2"} 3
n_count 5
n_sum 4
`, ctText)
	h := metric(t, rm, "h").GetHistogram().DataPoints[0]
	if !slices.Equal(h.ExplicitBounds, []float64{0.5, 1, 5}) || !slices.Equal(h.BucketCounts, []uint64{2, 2, 3, 3}) {
		t.Errorf("unsorted: bounds %v counts %v", h.ExplicitBounds, h.BucketCounts)
	}
	n := metric(t, rm, "n").GetHistogram().DataPoints[0]
	// no +Inf bucket: every bucket is a bound, the last count is _count - last bucket
	if !slices.Equal(n.ExplicitBounds, []float64{1, 2}) || !slices.Equal(n.BucketCounts, []uint64{1, 2, 2}) || n.Count != 5 {
		t.Errorf("no +Inf: bounds %v counts %v count %d", n.ExplicitBounds, n.BucketCounts, n.Count)
	}
}

// The collector drops histogram points it cannot represent, and the metric
// with them when no point is left.
func TestSemanticsHistogramDropped(t *testing.T) {
	rm := conv(t, `# TYPE nocount histogram
nocount_bucket{le="+Inf"} 1
nocount_sum 1
# TYPE decreasing histogram
decreasing_bucket{le="1"} 5
decreasing_bucket{le="2"} 3
decreasing_count 5
# TYPE under histogram
under_bucket{le="1"} 5
under_count 4
# TYPE nosum histogram
nosum_bucket{le="1"} 1
nosum_count 1
`, ctText)
	if got := pageNames(rm); !slices.Equal(got, []string{"nosum"}) {
		t.Errorf("names %v, want only nosum", got)
	}
	if p := metric(t, rm, "nosum").GetHistogram().DataPoints[0]; p.Sum != nil || p.Count != 1 {
		t.Errorf("no _sum: sum must be absent: %v", p)
	}
}

func TestSemanticsSummary(t *testing.T) {
	rm := conv(t, `# TYPE s summary
s{quantile="0.99",k="a"} 9
s{quantile="0.5",k="a"} 5
s_sum{k="a"} 100
s_count{k="a"} 10
s{quantile="0.5",k="b"} 1
s_sum{k="b"} 1
`, ctText)
	pts := metric(t, rm, "s").GetSummary().DataPoints
	if len(pts) != 1 {
		t.Fatalf("%d points, want 1 (k=b has no _count)", len(pts))
	}
	p := pts[0]
	if attrs(p.Attributes)["k"] != "a" || p.Count != 10 || p.Sum != 100 || len(p.QuantileValues) != 2 ||
		p.QuantileValues[0].Quantile != 0.5 || p.QuantileValues[0].Value != 5 || p.QuantileValues[1].Quantile != 0.99 {
		t.Errorf("summary %v", p)
	}
	if _, ok := attrs(p.Attributes)["quantile"]; ok {
		t.Error("quantile must not be an attribute")
	}
}

func TestSemanticsInfoStateset(t *testing.T) {
	rm := conv(t, `# TYPE build info
# HELP build Build.
build_info{version="1.2",rev="x"} 1
# TYPE state stateset
state{state="up"} 1
state{state="down"} 0
# EOF
`, ctOM)
	b := checkKind(t, rm, "build", "sum", "info")
	p := b.GetSum().DataPoints[0]
	if b.Description != "Build." || p.GetAsDouble() != 1 || attrs(p.Attributes)["version"] != "1.2" || p.StartTimeUnixNano != 0 {
		t.Errorf("info %v", b)
	}
	s := checkKind(t, rm, "state", "sum", "stateset")
	for _, p := range s.GetSum().DataPoints {
		if want := map[string]float64{"up": 1, "down": 0}[attrs(p.Attributes)["state"]]; p.GetAsDouble() != want || p.StartTimeUnixNano != 0 {
			t.Errorf("stateset point %v", p)
		}
	}
}

func TestSemanticsExemplars(t *testing.T) {
	rm := conv(t, `# TYPE c counter
c_total{k="a"} 5 # {trace_id="4bf92f3577b34da6a3ce929d0e0e4736",span_id="00f067aa0ba902b7",user="u1"} 1 1700000000.5
c_total{k="b"} 6 # {TRACE_ID="0af7651916cd43dd8448eb211c80319c"} 2
c_total{k="c"} 7 # {trace_id="00000000000000000000000000000000",span_id="abc",other=""} 3 1700000001
# TYPE h histogram
h_bucket{le="1"} 1 # {span_id="00f067aa0ba902b7"} 0.5 1700000002
h_bucket{le="+Inf"} 2 # {trace_id="4bf92f3577b34da6a3ce929d0e0e4736"} 7 1700000003
h_count 2
h_sum 7.5
# EOF
`, ctOM)
	byK := map[string]*metricspb.NumberDataPoint{}
	for _, p := range metric(t, rm, "c_total").GetSum().DataPoints {
		byK[attrs(p.Attributes)["k"]] = p
	}
	ea := byK["a"].Exemplars
	if len(ea) != 1 || len(ea[0].TraceId) != 16 || len(ea[0].SpanId) != 8 || ea[0].GetAsDouble() != 1 ||
		ea[0].TimeUnixNano != 1700000000500000000 || kvs(ea[0].FilteredAttributes) != `user={"stringValue":"u1"}` {
		t.Errorf("a: %v", ea)
	}
	// trace_id matches in any case; without a timestamp the sample's time is used
	if eb := byK["b"].Exemplars; len(eb) != 1 || len(eb[0].TraceId) != 16 || eb[0].TimeUnixNano != uint64(t0.UnixNano()) {
		t.Errorf("b: %v", eb)
	}
	// all-zero or wrong-width ids stay attributes, as does an empty non-id label
	ec := byK["c"].Exemplars
	if len(ec) != 1 || ec[0].TraceId != nil || ec[0].SpanId != nil {
		t.Errorf("c: %v", ec)
	} else if got := kvs(ec[0].FilteredAttributes); got != `other={"stringValue":""},span_id={"stringValue":"abc"},trace_id={"stringValue":"00000000000000000000000000000000"}` {
		t.Errorf("c attributes: %s", got)
	}
	he := metric(t, rm, "h").GetHistogram().DataPoints[0].Exemplars
	if len(he) != 2 || len(he[0].SpanId) != 8 || he[0].GetAsDouble() != 0.5 || len(he[1].TraceId) != 16 {
		t.Errorf("histogram exemplars %v", he)
	}
}

func TestSemanticsUnits(t *testing.T) {
	for in, want := range map[string]string{
		"seconds": "s", "milliseconds": "ms", "microseconds": "us", "nanoseconds": "ns",
		"minutes": "min", "hours": "h", "days": "d",
		"bytes": "By", "kibibytes": "KiBy", "mebibytes": "MiBy", "gibibytes": "GiBy", "tibibytes": "TiBy",
		"kilobytes": "KBy", "megabytes": "MBy", "gigabytes": "GBy", "terabytes": "TBy",
		"meters": "m", "volts": "V", "amperes": "A", "joules": "J", "watts": "W", "grams": "g",
		"celsius": "Cel", "hertz": "Hz", "ratio": "1", "percent": "%",
		"meters_per_second": "m/s", "bytes_per_minute": "By/m", "requests_per_fortnight": "requests/fortnight",
		"rollouts": "rollouts", "": "", "bytes_per_": "By",
	} {
		if got := unitOf(in); got != want {
			t.Errorf("unitOf(%q) = %q, want %q", in, got, want)
		}
	}
	rm := conv(t, "# TYPE d_seconds gauge\n# UNIT d_seconds seconds\nd_seconds 1\n# TYPE v_meters_per_second gauge\n# UNIT v_meters_per_second meters_per_second\nv_meters_per_second 2\n# EOF\n", ctOM)
	if u := metric(t, rm, "d_seconds").Unit; u != "s" {
		t.Errorf("unit %q", u)
	}
	if u := metric(t, rm, "v_meters_per_second").Unit; u != "m/s" {
		t.Errorf("unit %q", u)
	}
	// the text format has no UNIT: a name suffix does not make a unit
	if u := metric(t, conv(t, "# TYPE d_seconds gauge\nd_seconds 1\n", ctText), "d_seconds").Unit; u != "" {
		t.Errorf("text unit %q", u)
	}
}

func TestSemanticsEscapesUTF8(t *testing.T) {
	rm := conv(t, `# HELP e Help \\ and \n.
# TYPE e gauge
e{path="C:\\DIR",msg="say \"hi\"\nbye",u="ÜñïçøðÆ 日本"} 1
`, ctText)
	m := metric(t, rm, "e")
	a := attrs(m.GetGauge().DataPoints[0].Attributes)
	if a["path"] != `C:\DIR` || a["msg"] != "say \"hi\"\nbye" || a["u"] != "ÜñïçøðÆ 日本" {
		t.Errorf("attributes %q", a)
	}
	if m.Description != "Help \\ and \n." {
		t.Errorf("help %q", m.Description)
	}
	om := conv(t, "# TYPE e gauge\ne{msg=\"a\\\"b\\\\c\\nd\"} 1\n# EOF\n", ctOM)
	if v := attrs(metric(t, om, "e").GetGauge().DataPoints[0].Attributes)["msg"]; v != "a\"b\\c\nd" {
		t.Errorf("om escapes %q", v)
	}
}

func TestSemanticsSpecialValues(t *testing.T) {
	rm := conv(t, "# TYPE v gauge\nv{k=\"nan\"} NaN\nv{k=\"pinf\"} +Inf\nv{k=\"ninf\"} -Inf\nv{k=\"neg\"} -3.5e-7\n", ctText)
	for _, p := range metric(t, rm, "v").GetGauge().DataPoints {
		v := p.GetAsDouble()
		ok := map[string]bool{"nan": math.IsNaN(v), "pinf": math.IsInf(v, 1), "ninf": math.IsInf(v, -1), "neg": v == -3.5e-7}[attrs(p.Attributes)["k"]]
		if !ok || p.Flags != 0 {
			t.Errorf("point %v", p)
		}
	}
}

func TestSemanticsHonorTimestamps(t *testing.T) {
	page := "# TYPE c counter\nc_total 5 1700000000123\n"
	on := metric(t, conv(t, page, ctText), "c_total").GetSum().DataPoints[0]
	if on.TimeUnixNano != 1700000000123000000 {
		t.Errorf("honor_timestamps true: time %d", on.TimeUnixNano)
	}
	off := metric(t, conv(t, page, ctText, func(tg *Target) { tg.HonorTimestamps = false }), "c_total").GetSum().DataPoints[0]
	if off.TimeUnixNano != uint64(t0.UnixNano()) {
		t.Errorf("honor_timestamps false: time %d", off.TimeUnixNano)
	}
	om := metric(t, conv(t, "# TYPE g gauge\ng 1 1700000000.5\n# EOF\n", ctOM), "g").GetGauge().DataPoints[0]
	if om.TimeUnixNano != 1700000000500000000 {
		t.Errorf("openmetrics timestamp %d", om.TimeUnixNano)
	}
}

func TestSemanticsJobInstanceLabels(t *testing.T) {
	page := "# TYPE g gauge\ng{job=\"inner\",instance=\"in:1\",gym_service=\"page\",a=\"1\"} 1\n"
	p := metric(t, conv(t, page, ctText), "g").GetGauge().DataPoints[0]
	want := map[string]string{"exported_job": "inner", "exported_instance": "in:1", "exported_gym_service": "page", "gym_service": "fixture", "a": "1"}
	if got := attrs(p.Attributes); !mapsEqual(got, want) {
		t.Errorf("exported_: %v, want %v", got, want)
	}
	// honor_labels: the page's job and instance win and, as in the
	// collector, make a resource of their own; the target's resource keeps
	// the synthetic series (and any series without its own job/instance).
	tg := fixtureTarget("sem")
	tg.HonorLabels = true
	rms, err := NewConverter(tg).ConvertAll([]byte(page+"h 2\n"), ctText, t0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rms) != 2 {
		t.Fatalf("honor_labels: %d resources, want 2", len(rms))
	}
	if got := kvs(rms[1].Resource.Attributes); got != `service.name={"stringValue":"inner"},server.address={"stringValue":"in"},service.instance.id={"stringValue":"in:1"},server.port={"stringValue":"1"},url.scheme={"stringValue":"http"}` {
		t.Errorf("honor_labels resource: %s", got)
	}
	p = metric(t, rms[1], "g").GetGauge().DataPoints[0]
	want = map[string]string{"gym_service": "page", "a": "1"}
	if got := attrs(p.Attributes); !mapsEqual(got, want) {
		t.Errorf("honor_labels: %v, want %v", got, want)
	}
	if findPoints(rms[0], "g") != nil || findPoints(rms[0], "h") == nil || findPoints(rms[0], "up") == nil || findPoints(rms[1], "up") != nil {
		t.Errorf("honor_labels: the target's resource has %v, the page's %v", names(rms[0]), names(rms[1]))
	}
	// exported_job already on the page: the conflict moves one prefix further
	p = metric(t, conv(t, "g{job=\"x\",exported_job=\"y\"} 1\n", ctText), "g").GetGauge().DataPoints[0]
	if got := attrs(p.Attributes); got["exported_job"] != "y" || got["exported_exported_job"] != "x" {
		t.Errorf("double conflict: %v", got)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

func TestSemanticsEmptyLabelValue(t *testing.T) {
	rm := conv(t, "# TYPE g gauge\ng{a=\"\",b=\"1\"} 1\n", ctText)
	if got := attrs(metric(t, rm, "g").GetGauge().DataPoints[0].Attributes); !mapsEqual(got, map[string]string{"b": "1", "gym_service": "fixture"}) {
		t.Errorf("attributes %v", got)
	}
}

func TestSemanticsSameSeriesTwice(t *testing.T) {
	// same raw series: Prometheus rejects the repeat, the first value stays
	rm := conv(t, "# TYPE g gauge\ng{a=\"1\"} 1\ng{a=\"1\"} 2\n", ctText)
	if pts := metric(t, rm, "g").GetGauge().DataPoints; len(pts) != 1 || pts[0].GetAsDouble() != 1 {
		t.Errorf("same raw series: %v", pts)
	}
	if n := findPoints(rm, "scrape_samples_scraped").GetGauge().DataPoints[0].GetAsDouble(); n != 2 {
		t.Errorf("samples %v", n)
	}
	// same labels spelled twice (empty label = no label): the last value wins
	rm = conv(t, "# TYPE g gauge\ng 1\ng{b=\"\"} 2\n", ctText)
	if pts := metric(t, rm, "g").GetGauge().DataPoints; len(pts) != 1 || pts[0].GetAsDouble() != 2 {
		t.Errorf("same labels: %v", pts)
	}
}

func TestSemanticsSyntheticSeries(t *testing.T) {
	c := NewConverter(fixtureTarget("sem"))
	page := []byte("# TYPE g gauge\ng{a=\"1\"} 1\ng{a=\"2\"} 1\n")
	val := func(rm *metricspb.ResourceMetrics, n string) float64 {
		return metric(t, rm, n).GetGauge().DataPoints[0].GetAsDouble()
	}
	r1, _ := c.ConvertScrape(page, ctText, t0, 250*time.Millisecond)
	r2, _ := c.ConvertScrape(page, ctText, t0.Add(time.Second), 0)
	for _, d := range synthDefs {
		m := metric(t, r1, d.name)
		if m.Description != d.help || m.Unit != d.unit || promType(m) != "gauge" || attrs(m.GetGauge().DataPoints[0].Attributes)["gym_service"] != "fixture" {
			t.Errorf("%s: %v", d.name, m)
		}
	}
	if val(r1, "up") != 1 || val(r1, "scrape_duration_seconds") != 0.25 || val(r1, "scrape_samples_scraped") != 2 ||
		val(r1, "scrape_samples_post_metric_relabeling") != 2 || val(r1, "scrape_series_added") != 2 || val(r2, "scrape_series_added") != 0 {
		t.Errorf("synthetic values")
	}
	if !strings.Contains(kvs(r1.Resource.Attributes), `service.name={"stringValue":"sem"}`) {
		t.Errorf("resource %s", kvs(r1.Resource.Attributes))
	}
}

// prometheus_client's text exposition puts a counter's or histogram's
// creation time in a separate B_created gauge family: it stays a gauge (as
// in the collector) and becomes the start time of B_total / B with the same
// labels; other series keep the first-scrape start.
func TestSemanticsCreatedGaugeFamily(t *testing.T) {
	page := `# TYPE req_total counter
req_total{code="200"} 10
req_total{code="500"} 1
# TYPE req_created gauge
req_created{code="200"} 1700000000
# TYPE lat histogram
lat_bucket{le="1"} 1
lat_bucket{le="+Inf"} 2
lat_sum 3
lat_count 2
# TYPE lat_created gauge
lat_created 1700000001
# TYPE other_created gauge
other_created 1700000002
`
	tg := fixtureTarget("sem")
	c := NewConverter(tg)
	rm, err := c.Convert([]byte(page), ctText, t0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := pageNames(rm), []string{"lat", "lat_created", "other_created", "req_created", "req_total"}; !slices.Equal(got, want) {
		t.Fatalf("names %v, want %v", got, want)
	}
	checkKind(t, rm, "req_created", "gauge", "gauge")
	for _, p := range metric(t, rm, "req_total").GetSum().DataPoints {
		want := uint64(1700000000e9)
		if attrs(p.Attributes)["code"] == "500" {
			want = uint64(t0.UnixNano()) // no gauge for these labels: first scrape
		}
		if p.StartTimeUnixNano != want {
			t.Errorf("req_total%v: start %d, want %d", attrs(p.Attributes), p.StartTimeUnixNano, want)
		}
	}
	if st := metric(t, rm, "lat").GetHistogram().DataPoints[0].StartTimeUnixNano; st != 1700000001e9 {
		t.Errorf("histogram start %d, want the lat_created gauge's", st)
	}
	// The process restarted: the counter went down, the gauge moved.
	restarted := strings.NewReplacer(`req_total{code="200"} 10`, `req_total{code="200"} 2`,
		`req_created{code="200"} 1700000000`, `req_created{code="200"} 1700000500`).Replace(page)
	rm, err = c.Convert([]byte(restarted), ctText, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range metric(t, rm, "req_total").GetSum().DataPoints {
		if attrs(p.Attributes)["code"] == "200" && p.StartTimeUnixNano != 1700000500e9 {
			t.Errorf("after a restart: start %d, want the new gauge value", p.StartTimeUnixNano)
		}
	}
	// The gauges' point keys go with their series when those leave the page.
	if len(c.starts) != 3 {
		t.Errorf("%d _created gauges' keys kept, want 3", len(c.starts))
	}
	if _, err := c.Convert([]byte("# TYPE req_total counter\nreq_total{code=\"200\"} 3\n"), ctText, t0.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if len(c.starts) != 0 {
		t.Errorf("%d _created gauges' keys kept after their series left the page", len(c.starts))
	}
}

// The resource names the target's host in server.address when it is worth
// naming (not loopback, unspecified or localhost), as the collector does.
func TestSemanticsServerAddress(t *testing.T) {
	for _, c := range []struct{ addr, want string }{
		{"node01:9100", "node01"},
		{"10.1.2.3:9400", "10.1.2.3"},
		{"[2001:db8::1]:8000", "2001:db8::1"},
		{"127.0.0.1:8000", ""},
		{"localhost:8000", ""},
		{"[::1]:8000", ""},
	} {
		tg := fixtureTarget("sem")
		tg.Address = c.addr
		rm, err := NewConverter(tg).Convert([]byte("g 1\n"), ctText, t0)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, kv := range rm.Resource.Attributes {
			if kv.Key == "server.address" {
				got = kv.Value.GetStringValue()
			}
		}
		if got != c.want {
			t.Errorf("%s: server.address %q, want %q", c.addr, got, c.want)
		}
	}
}
