package scraper

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// The golden test replays each fixture page twice through one Converter and
// compares both results, field by field, with what the collector wrote for
// the same two scrapes (NAME.peer.jsonl). Only timestamps are normalised:
// a point time equal to its scrape's time becomes "T<scrape>", a start time
// equal to an earlier scrape's time becomes "T<that scrape>", and
// scrape_duration_seconds's value (a wall-clock measurement) is not compared.
// Every other difference must match one row of allowedDiffs, and every row
// there must be a row of the "Differences from the collector" table in doc.go.

// goldenDiff is one field that differs between the collector and us.
type goldenDiff struct {
	page   string
	scrape int    // 1-based
	metric string // "" for resource/scope level
	point  string // canonical attributes of the point, "" for metric level
	field  string
	peer   string // normalised value the collector wrote ("<none>" if absent)
	ours   string // normalised value we wrote ("<none>" if absent)
	// context for the matchers
	kind string // peer (or our) data kind: gauge, sum, histogram, summary
	om   bool   // page is OpenMetrics
	// created is, for a start time, the normalised value of the page's
	// B_created gauge with the same attributes (text format), as the
	// collector wrote it; "" if there is none.
	created string
	// time is, for a start time, our point's normalised time.
	time string
}

func (d goldenDiff) String() string {
	return fmt.Sprintf("%s scrape %d metric %q point {%s} field %s: collector %s, ours %s", d.page, d.scrape, d.metric, d.point, d.field, d.peer, d.ours)
}

// allowedDiffs are the differences from the collector we keep on purpose.
// Each ID must appear as a row of the table in doc.go.
var allowedDiffs = []struct {
	id    string
	match func(d goldenDiff) bool
}{
	{
		// Text-format cumulative points: the collector leaves no start time;
		// we start them at the series' first point: the first scrape that
		// saw it, or the page's own timestamp on it (the same page twice:
		// the point's time).
		id: "start-time-text",
		match: func(d goldenDiff) bool {
			stamped := !strings.HasPrefix(d.time, "T") // a time of the page's own
			first := d.ours == "T1" && !stamped || d.ours == d.time && stamped
			return !d.om && d.field == "start" && d.peer == "<none>" && first &&
				(d.kind == "sum" || d.kind == "histogram" || d.kind == "summary")
		},
	},
	{
		// Text-format cumulative points with a B_created gauge beside them
		// (prometheus_client's text exposition): the collector leaves no
		// start time; we take the gauge's value, the series' creation.
		id: "start-time-created-gauge",
		match: func(d goldenDiff) bool {
			return !d.om && d.field == "start" && d.peer == "<none>" && d.created != "" && d.ours == d.created &&
				(d.kind == "sum" || d.kind == "histogram" || d.kind == "summary")
		},
	},
}

// golden scrape times: the collector scraped every two seconds. The
// synthetic up is the point with the target's labels alone (a page may
// have up series of its own: a federation page).
func goldenTimes(t *testing.T, lines []*metricspb.MetricsData) []time.Time {
	var ts []time.Time
	for i, l := range lines {
		var synth []*metricspb.NumberDataPoint
		for _, p := range findMetric(l, "up").GetGauge().GetDataPoints() {
			if kvs(p.Attributes) == `gym_service={"stringValue":"fixture"}` {
				synth = append(synth, p)
			}
		}
		if len(synth) != 1 {
			t.Fatalf("peer line %d: %d synthetic up points, want 1", i+1, len(synth))
		}
		ts = append(ts, time.Unix(0, int64(synth[0].TimeUnixNano)))
	}
	return ts
}

func findMetric(md *metricspb.MetricsData, name string) *metricspb.Metric {
	for _, rm := range md.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if m.Name == name {
					return m
				}
			}
		}
	}
	return nil
}

// readPeer decodes NAME.peer.jsonl. OTLP/JSON spells trace and span ids in
// hex where protojson wants base64, so they are rewritten first.
func readPeer(t *testing.T, name string) []*metricspb.MetricsData {
	var out []*metricspb.MetricsData
	sc := bufio.NewScanner(bytes.NewReader(read(t, name+".peer.jsonl")))
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		var generic any
		if err := json.Unmarshal(sc.Bytes(), &generic); err != nil {
			t.Fatalf("%s.peer.jsonl:%d: %v", name, n, err)
		}
		hexToBase64(generic)
		b, _ := json.Marshal(generic)
		md := &metricspb.MetricsData{}
		if err := protojson.Unmarshal(b, md); err != nil {
			t.Fatalf("%s.peer.jsonl:%d: %v", name, n, err)
		}
		out = append(out, md)
	}
	return out
}

func hexToBase64(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && (k == "traceId" || k == "spanId") {
				b, err := hex.DecodeString(s)
				if err == nil {
					x[k] = base64.StdEncoding.EncodeToString(b)
				}
				continue
			}
			hexToBase64(e)
		}
	case []any:
		for _, e := range x {
			hexToBase64(e)
		}
	}
}

// goldenCompare collects every difference between peer and ours for one scrape.
type goldenCompare struct {
	page   string
	scrape int
	om     bool
	times  []uint64 // scrape times, index 0 = scrape 1
	diffs  []goldenDiff
	checks int // fields compared
	// pointTime is our point's normalised time while its fields are compared.
	pointTime string
	// created maps metric base name + "\x00" + point key to the value of
	// the peer's B_created gauge point, normalised as a start time.
	created map[string]string
}

func (g *goldenCompare) add(metric, point, field, kind, peer, ours string) {
	g.checks++
	if peer == ours {
		return
	}
	d := goldenDiff{page: g.page, scrape: g.scrape, metric: metric, point: point, field: field,
		peer: peer, ours: ours, kind: kind, om: g.om, time: g.pointTime}
	if field == "start" {
		// B_created starts B_total (a counter) or B (a histogram or
		// summary, whose own name may end in _total)
		d.created = g.created[metric+"\x00"+point]
		if d.created == "" && kind == "sum" {
			d.created = g.created[strings.TrimSuffix(metric, "_total")+"\x00"+point]
		}
	}
	g.diffs = append(g.diffs, d)
}

// ts normalises a timestamp: scrape times become T<n>, absent becomes <none>.
func (g *goldenCompare) ts(v uint64) string {
	if v == 0 {
		return "<none>"
	}
	for i, s := range g.times {
		if v == s {
			return fmt.Sprintf("T%d", i+1)
		}
	}
	return fmt.Sprint(v)
}

func fnum(v float64) string {
	if math.IsNaN(v) {
		return "NaN" // any NaN payload: the collector keeps only the staleness NaN apart (via flags)
	}
	return fmt.Sprint(v)
}

func kvs(l []*commonpb.KeyValue) string {
	var s []string
	for _, kv := range l {
		s = append(s, kv.Key+"="+anyStr(kv.Value))
	}
	return strings.Join(s, ",")
}

func anyStr(v *commonpb.AnyValue) string {
	b, _ := protojson.Marshal(v)
	var c bytes.Buffer
	_ = json.Compact(&c, b)
	return c.String()
}

func sortedKVs(l []*commonpb.KeyValue) string {
	var s []string
	for _, kv := range l {
		s = append(s, kv.Key+"="+anyStr(kv.Value))
	}
	sort.Strings(s)
	return strings.Join(s, ",")
}

func kindOf(m *metricspb.Metric) string {
	switch m.Data.(type) {
	case *metricspb.Metric_Gauge:
		return "gauge"
	case *metricspb.Metric_Sum:
		return "sum"
	case *metricspb.Metric_Histogram:
		return "histogram"
	case *metricspb.Metric_Summary:
		return "summary"
	case *metricspb.Metric_ExponentialHistogram:
		return "exponentialHistogram"
	}
	return "<none>"
}

// metricsOf flattens one request's metrics by name.
func metricsOf(md *metricspb.MetricsData) map[string]*metricspb.Metric {
	out := map[string]*metricspb.Metric{}
	for _, rm := range md.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				out[m.Name] = m
			}
		}
	}
	return out
}

func (g *goldenCompare) request(peer, ours *metricspb.MetricsData) {
	g.add("", "", "resourceMetrics.count", "", fmt.Sprint(len(peer.ResourceMetrics)), fmt.Sprint(len(ours.ResourceMetrics)))
	if len(peer.ResourceMetrics) == 0 || len(ours.ResourceMetrics) == 0 {
		return
	}
	prm, orm := peer.ResourceMetrics[0], ours.ResourceMetrics[0]
	g.add("", "", "resource.attributes", "", kvs(prm.Resource.GetAttributes()), kvs(orm.Resource.GetAttributes()))
	g.add("", "", "scopeMetrics.count", "", fmt.Sprint(len(prm.ScopeMetrics)), fmt.Sprint(len(orm.ScopeMetrics)))
	if len(prm.ScopeMetrics) > 0 && len(orm.ScopeMetrics) > 0 {
		ps, os := prm.ScopeMetrics[0].Scope, orm.ScopeMetrics[0].Scope
		g.add("", "", "scope.name", "", ps.GetName(), os.GetName())
		g.add("", "", "scope.version", "", ps.GetVersion(), os.GetVersion())
		g.add("", "", "scope.attributes", "", kvs(ps.GetAttributes()), kvs(os.GetAttributes()))
	}
	// one metric of a name (a page's up and the synthetic one are one)
	g.add("", "", "metric.duplicates", "", duplicateNames(prm), duplicateNames(orm))
	pm, om := metricsOf(peer), metricsOf(ours)
	g.created = map[string]string{}
	for n, m := range pm {
		base, ok := strings.CutSuffix(n, "_created")
		if !ok || m.GetGauge() == nil {
			continue
		}
		for _, p := range m.GetGauge().DataPoints {
			g.created[base+"\x00"+sortedKVs(p.Attributes)] = g.ts(secondsToNs(p.GetAsDouble()))
		}
	}
	names := map[string]bool{}
	for n := range pm {
		names[n] = true
	}
	for n := range om {
		names[n] = true
	}
	for _, n := range slices.Sorted(mapsKeys(names)) {
		p, o := pm[n], om[n]
		switch {
		case p == nil:
			g.add(n, "", "metric", kindOf(o), "<none>", "present")
		case o == nil:
			g.add(n, "", "metric", kindOf(p), "present", "<none>")
		default:
			g.metric(p, o)
		}
	}
}

// duplicateNames lists the metric names rm has more than once.
func duplicateNames(rm *metricspb.ResourceMetrics) string {
	n := map[string]int{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			n[m.Name]++
		}
	}
	var dup []string
	for name, k := range n {
		if k > 1 {
			dup = append(dup, fmt.Sprintf("%s×%d", name, k))
		}
	}
	sort.Strings(dup)
	return strings.Join(dup, ",")
}

func mapsKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func (g *goldenCompare) metric(p, o *metricspb.Metric) {
	n, k := p.Name, kindOf(p)
	g.add(n, "", "type", k, k, kindOf(o))
	g.add(n, "", "description", k, p.Description, o.Description)
	g.add(n, "", "unit", k, p.Unit, o.Unit)
	g.add(n, "", "metadata", k, kvs(p.Metadata), kvs(o.Metadata))
	if k != kindOf(o) {
		return
	}
	switch pd := p.Data.(type) {
	case *metricspb.Metric_Gauge:
		g.numbers(n, k, pd.Gauge.DataPoints, o.GetGauge().DataPoints)
	case *metricspb.Metric_Sum:
		g.add(n, "", "aggregationTemporality", k, pd.Sum.AggregationTemporality.String(), o.GetSum().AggregationTemporality.String())
		g.add(n, "", "isMonotonic", k, fmt.Sprint(pd.Sum.IsMonotonic), fmt.Sprint(o.GetSum().IsMonotonic))
		g.numbers(n, k, pd.Sum.DataPoints, o.GetSum().DataPoints)
	case *metricspb.Metric_Histogram:
		g.add(n, "", "aggregationTemporality", k, pd.Histogram.AggregationTemporality.String(), o.GetHistogram().AggregationTemporality.String())
		g.histograms(n, pd.Histogram.DataPoints, o.GetHistogram().DataPoints)
	case *metricspb.Metric_Summary:
		g.summaries(n, pd.Summary.DataPoints, o.GetSummary().DataPoints)
	}
}

// pair matches points by their attribute set; the collector's point order
// within a metric is not part of the contract.
func pair[P interface{ GetAttributes() []*commonpb.KeyValue }](g *goldenCompare, metric, kind string, peer, ours []P, each func(key string, p, o P)) {
	index := func(l []P, who string) (map[string]P, []string) {
		m := map[string]P{}
		var keys []string
		for _, x := range l {
			key := sortedKVs(x.GetAttributes())
			if _, dup := m[key]; dup {
				g.add(metric, key, "point.duplicate", kind, "1", who)
			}
			if _, ok := m[key]; !ok {
				keys = append(keys, key)
			}
			m[key] = x
		}
		return m, keys
	}
	pm, pk := index(peer, "collector")
	om, ok := index(ours, "ours")
	for _, key := range pk {
		o, found := om[key]
		if !found {
			g.add(metric, key, "point", kind, "present", "<none>")
			continue
		}
		each(key, pm[key], o)
	}
	for _, key := range ok {
		if _, found := pm[key]; !found {
			g.add(metric, key, "point", kind, "<none>", "present")
		}
	}
}

func (g *goldenCompare) common(metric, key, kind string, pst, ost, pt, ot uint64, pf, of uint32) {
	g.pointTime = g.ts(ot)
	g.add(metric, key, "start", kind, g.ts(pst), g.ts(ost))
	g.pointTime = ""
	g.add(metric, key, "time", kind, g.ts(pt), g.ts(ot))
	g.add(metric, key, "flags", kind, fmt.Sprint(pf), fmt.Sprint(of))
}

func (g *goldenCompare) numbers(metric, kind string, peer, ours []*metricspb.NumberDataPoint) {
	pair(g, metric, kind, peer, ours, func(key string, p, o *metricspb.NumberDataPoint) {
		g.common(metric, key, kind, p.StartTimeUnixNano, o.StartTimeUnixNano, p.TimeUnixNano, o.TimeUnixNano, p.Flags, o.Flags)
		if metric != "scrape_duration_seconds" {
			g.add(metric, key, "value", kind, numVal(p), numVal(o))
		}
		g.exemplars(metric, key, kind, p.Exemplars, o.Exemplars)
	})
}

func numVal(p *metricspb.NumberDataPoint) string {
	switch v := p.Value.(type) {
	case *metricspb.NumberDataPoint_AsDouble:
		return "double:" + fnum(v.AsDouble)
	case *metricspb.NumberDataPoint_AsInt:
		return fmt.Sprint("int:", v.AsInt)
	}
	return "<none>"
}

func (g *goldenCompare) histograms(metric string, peer, ours []*metricspb.HistogramDataPoint) {
	kind := "histogram"
	pair(g, metric, kind, peer, ours, func(key string, p, o *metricspb.HistogramDataPoint) {
		g.common(metric, key, kind, p.StartTimeUnixNano, o.StartTimeUnixNano, p.TimeUnixNano, o.TimeUnixNano, p.Flags, o.Flags)
		g.add(metric, key, "count", kind, fmt.Sprint(p.Count), fmt.Sprint(o.Count))
		g.add(metric, key, "sum", kind, optF(p.Sum), optF(o.Sum))
		g.add(metric, key, "min", kind, optF(p.Min), optF(o.Min))
		g.add(metric, key, "max", kind, optF(p.Max), optF(o.Max))
		g.add(metric, key, "explicitBounds", kind, fmt.Sprint(p.ExplicitBounds), fmt.Sprint(o.ExplicitBounds))
		g.add(metric, key, "bucketCounts", kind, fmt.Sprint(p.BucketCounts), fmt.Sprint(o.BucketCounts))
		g.exemplars(metric, key, kind, p.Exemplars, o.Exemplars)
	})
}

func optF(v *float64) string {
	if v == nil {
		return "<none>"
	}
	return fnum(*v)
}

func (g *goldenCompare) summaries(metric string, peer, ours []*metricspb.SummaryDataPoint) {
	kind := "summary"
	pair(g, metric, kind, peer, ours, func(key string, p, o *metricspb.SummaryDataPoint) {
		g.common(metric, key, kind, p.StartTimeUnixNano, o.StartTimeUnixNano, p.TimeUnixNano, o.TimeUnixNano, p.Flags, o.Flags)
		g.add(metric, key, "count", kind, fmt.Sprint(p.Count), fmt.Sprint(o.Count))
		g.add(metric, key, "sum", kind, fnum(p.Sum), fnum(o.Sum))
		q := func(l []*metricspb.SummaryDataPoint_ValueAtQuantile) string {
			var s []string
			for _, v := range l {
				s = append(s, fnum(v.Quantile)+":"+fnum(v.Value))
			}
			return strings.Join(s, " ")
		}
		g.add(metric, key, "quantileValues", kind, q(p.QuantileValues), q(o.QuantileValues))
	})
}

func (g *goldenCompare) exemplars(metric, key, kind string, peer, ours []*metricspb.Exemplar) {
	e := func(l []*metricspb.Exemplar) string {
		var s []string
		for _, x := range l {
			v := "<none>"
			switch xv := x.Value.(type) {
			case *metricspb.Exemplar_AsDouble:
				v = "double:" + fnum(xv.AsDouble)
			case *metricspb.Exemplar_AsInt:
				v = fmt.Sprint("int:", xv.AsInt)
			}
			s = append(s, fmt.Sprintf("{time=%s value=%s trace=%x span=%x attrs=%s}", g.ts(x.TimeUnixNano), v, x.TraceId, x.SpanId, kvs(x.FilteredAttributes)))
		}
		return strings.Join(s, " ")
	}
	g.add(metric, key, "exemplars", kind, e(peer), e(ours))
}

// docDiffIDs reads the IDs in the first column of doc.go's differences table.
func docDiffIDs(t *testing.T) []string {
	b, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "Differences from the collector\n")
	if !ok {
		t.Fatal("doc.go: no \"Differences from the collector\" section")
	}
	var ids []string
	for _, m := range regexp.MustCompile(`(?m)^//\s*\|\s*`+"`"+`([a-z0-9-]+)`+"`"+`\s*\|`).FindAllStringSubmatch(section, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

// The doc table and allowedDiffs must list the same differences.
func TestGoldenDocTable(t *testing.T) {
	doc := docDiffIDs(t)
	var ours []string
	for _, a := range allowedDiffs {
		ours = append(ours, a.id)
		if !slices.Contains(doc, a.id) {
			t.Errorf("allowed difference %q is not in doc.go's table", a.id)
		}
	}
	for _, id := range doc {
		if !slices.Contains(ours, id) {
			t.Errorf("doc.go's table lists %q, which golden_test.go does not allow", id)
		}
	}
}

func TestGolden(t *testing.T) {
	usedAll := map[string]int{}
	defer func() {
		for _, a := range allowedDiffs {
			if usedAll[a.id] == 0 && !t.Failed() {
				t.Errorf("allowed difference %q never occurs: drop it from allowedDiffs and doc.go", a.id)
			}
		}
	}()
	for _, fx := range fixtures {
		t.Run(fx.name, func(t *testing.T) {
			peerLines := readPeer(t, fx.name)
			if len(peerLines) != 2 {
				t.Fatalf("%s.peer.jsonl: %d lines, want 2", fx.name, len(peerLines))
			}
			times := goldenTimes(t, peerLines)
			page := read(t, fx.file)
			c := NewConverter(fixtureTarget(fx.name))
			g := &goldenCompare{page: fx.name, om: strings.HasPrefix(fx.ct, "application/openmetrics-text")}
			for _, ts := range times {
				g.times = append(g.times, uint64(ts.UnixNano()))
			}
			used := map[string]int{}
			differ, allowed := 0, 0
			for i, ts := range times {
				rm, err := c.Convert(page, fx.ct, ts)
				if err != nil {
					t.Fatalf("%s scrape %d: %v", fx.name, i+1, err)
				}
				g.scrape = i + 1
				g.diffs = g.diffs[:0]
				g.request(peerLines[i], &metricspb.MetricsData{ResourceMetrics: []*metricspb.ResourceMetrics{rm}})
				differ += len(g.diffs)
			next:
				for _, d := range g.diffs {
					for _, a := range allowedDiffs {
						if a.match(d) {
							used[a.id]++
							usedAll[a.id]++
							allowed++
							continue next
						}
					}
					t.Errorf("%s", d)
				}
			}
			// The match share: fields equal to the collector's, of all
			// compared, over both scrapes.
			t.Logf("match share %d/%d = %.2f%% (%d differences, %d of them allowed: %v)",
				g.checks-differ, g.checks, 100*float64(g.checks-differ)/float64(g.checks), differ, allowed, used)
		})
	}
}
