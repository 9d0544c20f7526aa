// A series new to the Converter: its labels merged with the target's
// and relabeled as Prometheus does, then its family, role and
// attribute set decided once for the scrapes to come.

package scraper

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/otelstep/otelstep/pipeline"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/relabel"
	"github.com/prometheus/prometheus/model/textparse"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
)

// famDecision is what famFor decides for a series name.
type famDecision struct {
	outName string // the output metric's name
	typ     model.MetricType
	role    uint8
	// argLabel is the label holding the role's argument (le of a bucket,
	// quantile of a quantile), which is no attribute; "" for none.
	argLabel string
	decl     metaDecl // what was declared for the family
}

// famFor resolves the family, role and le/quantile label of a series name
// from what the page declared for the name, else for the name without a
// suffix (metatable.go); the synthetic series' names have the collector's
// metadata for them, whatever the page declared.
func (c *Converter) famFor(name string) famDecision {
	if sd, ok := synthDecls[name]; ok {
		// a page's own up or scrape_*: the synthetic series' metric
		return famDecision{outName: name, typ: sd.typ, role: roleValue, decl: sd}
	}
	own := famDecision{outName: name, typ: model.MetricTypeUnknown, role: roleValue}
	famName := name // the name the declaration is for
	decl, found := c.meta.get(name)
	if !found {
		if famName = normalizeName(name); famName == name {
			return own
		}
		if decl, found = c.meta.get(famName); !found {
			return own
		}
	}
	fd := famDecision{outName: name, role: roleValue}
	suffix := name[len(famName):]
	var ok bool
	switch decl.typ {
	case model.MetricTypeCounter:
		switch suffix {
		case "", "_total":
			ok = true
		case "_created":
			ok, fd.role = true, roleCreated
			// the counter's output name: with _total unless the page's
			// counter samples go without it
			fd.outName = famName + "_total"
			if f := c.fams[famName]; f != nil && f.typ == model.MetricTypeCounter {
				fd.outName = famName
			}
		}
	case model.MetricTypeHistogram, model.MetricTypeSummary:
		switch {
		case suffix == "_sum":
			ok, fd.role = true, roleSum
		case suffix == "_count":
			ok, fd.role = true, roleCount
		case suffix == "_created":
			ok, fd.role = true, roleCreated
		case suffix == "_bucket" && decl.typ == model.MetricTypeHistogram:
			ok, fd.role, fd.argLabel = true, roleBucket, model.BucketLabel
		case suffix == "" && decl.typ == model.MetricTypeSummary:
			ok, fd.role, fd.argLabel = true, roleQuantile, model.QuantileLabel
		}
	case model.MetricTypeGaugeHistogram:
		ok = suffix == "_bucket"
	case model.MetricTypeInfo:
		ok = suffix == "_info"
	default:
		ok = suffix == ""
	}
	if !ok {
		// a family of its own name, with what was declared for that
		d, _ := c.meta.get(name)
		own.decl = metaDecl{help: d.help, unit: d.unit}
		return own
	}
	fd.typ, fd.decl = decl.typ, decl
	if fd.typ != model.MetricTypeCounter {
		fd.outName = famName
	}
	return fd
}

// newEntry resolves family, role and attributes of a series seen for the
// first time: the page's labels merged with the target's the way
// Prometheus does it (exported_ prefixes or honor_labels), then
// metric_relabel_configs, then the collector's label-to-attribute rules.
// It returns nil, with c.failed set, for a series that fails the scrape.
func (c *Converter) newEntry(p textparse.Parser, b []byte) *seriesEntry {
	if c.newN++; c.newN%deadlineEvery == 0 {
		if err := c.overdue(); err != nil {
			c.failed, c.cut = err, true
			return nil
		}
	}
	charge := seriesCharge(len(b))
	if !c.budget.take(charge, c.held+c.pageHeld) {
		c.failed = c.budget.exhausted("a new series", charge, c.held+c.pageHeld)
		return nil
	}
	rawKey := c.keys.str(b, &c.keyed)
	se := &seriesEntry{key: rawKey}
	if err := c.resolve(p, se); err != nil {
		c.budget.give(charge)
		c.failed = fmt.Errorf("series %s: %w", clip(b, 120), err)
		return nil // not kept: the next scrape fails on it again, as Prometheus's does
	}
	c.held += charge
	c.index.add(se)
	return se
}

// deadlineEvery is how many new series a conversion reads between two
// looks at its bound (overdue). It reads deadlineEvery-1 of them before
// the first: a page cut short at every look still gets that many further
// each scrape, since what a cut scrape resolved is kept.
const deadlineEvery = 256

// overdue is why the conversion in progress must end now, or nil: its
// context has ended (a stop), or its deadline has passed.
func (c *Converter) overdue() error {
	if c.ctx.Err() != nil {
		return fmt.Errorf("%w while converting the page", context.Cause(c.ctx))
	}
	if !c.deadline.IsZero() && time.Now().After(c.deadline) {
		return convertTimeout(c.timeout)
	}
	return nil
}

// resolve decides se's family, role and attributes from the series p
// returned last (newEntry), or decides them again when its family's
// metadata changed (metatable.go).
func (c *Converter) resolve(p textparse.Parser, se *seriesEntry) error {
	if se.created {
		delete(c.starts, se)
	}
	if old := se.ps; old != nil {
		defer func() {
			if se.ps == nil || se.ps.fam != old.fam {
				c.index.dropPoint(pointKey{old.fam, old.set}) // of the family it had
			}
		}()
	}
	se.ps, se.role, se.arg, se.created = nil, roleValue, 0, false
	p.Labels(&c.lbls)
	lset := c.mutate(c.lbls)
	if lset.IsEmpty() {
		se.role = roleDrop
		return nil
	}
	name := lset.Get(model.MetricNameLabel)
	if name == "" {
		// Prometheus fails the scrape (errNameLabelMandatory)
		return fmt.Errorf("metric_relabel_configs left it no %s label", model.MetricNameLabel)
	}
	if err := c.t.Limits.verify(lset); err != nil {
		return err // Prometheus fails the scrape on it
	}
	fam := c.famFor(name)
	outName, typ := fam.outName, fam.typ
	se.role = fam.role
	switch fam.role {
	case roleBucket:
		se.arg = parseFloat(lset.Get(model.BucketLabel))
	case roleQuantile:
		se.arg = parseFloat(lset.Get(model.QuantileLabel))
	}
	pairs := c.pairs[:0]
	lset.Range(func(l labels.Label) {
		switch l.Name {
		case model.JobLabel, model.InstanceLabel:
			// The resource's: the target's, or (honor_labels) the page's.
			return
		case model.MetricNameLabel, model.SchemeLabel, model.MetricsPathLabel, fam.argLabel:
			return
		}
		if l.Value == "" {
			return
		}
		pairs = append(pairs, l)
	})
	c.pairs = pairs
	res := ""
	if j, i := lset.Get(model.JobLabel), lset.Get(model.InstanceLabel); j != c.t.JobName || i != c.t.instance() {
		res = j + "\xff" + i // only honor_labels lets a page's job/instance through
	}
	famKey := outName
	if res != "" {
		famKey = res + "\xfe" + outName
	}
	// The attrSets key: the kind of point, then the attributes (0xff
	// name 0xfe value each; neither byte occurs in UTF-8).
	kind := byte(kindNumber)
	if typ == model.MetricTypeHistogram {
		kind = kindHistogram
	}
	key := append(c.setKey[:0], kind)
	for _, l := range pairs {
		key = append(key, 0xff)
		key = append(key, l.Name...)
		key = append(key, 0xfe)
		key = append(key, l.Value...)
	}
	c.setKey = key
	if !c.om && typ == model.MetricTypeGauge && strings.HasSuffix(outName, "_created") {
		base := strings.TrimSuffix(outName, "_created")
		prefix := famKey[:len(famKey)-len(outName)]
		se.created = true
		if c.starts == nil {
			c.starts = map[*seriesEntry]createdFor{}
		}
		c.starts[se] = createdFor{fams: [2]string{prefix + base + "_total", prefix + base}, attrs: string(key[1:])}
	}
	f := c.fams[famKey]
	// (A stale family this scrape already emitted keeps its metadata
	// until the next scrape, as the collector's does.)
	if f == nil || f.typ != typ || f.stale && f.gen != c.gen {
		if m := c.famMetaFor(res, outName, typ, fam.decl); f != nil && f.famMeta == m {
			f.stale = false // declared again as it was: the same family
		} else {
			f = &famState{famMeta: m}
			c.fams[famKey] = f
			c.resFams = c.resFams || res != ""
		}
	}
	f.roles |= 1 << fam.role
	// Shared: the same slice serves every scrape of the series (and the
	// series with the same attributes, attrsets.go) and is never changed,
	// so the sinks may cache its encoding. Equal attributes are one set,
	// so the family and the set name the point.
	var set *pipeline.AttrSet
	if len(pairs) > 0 {
		set = c.sets.get(key, func() []*commonpb.KeyValue {
			attrs := c.attrBuf[:0]
			for _, l := range pairs {
				attrs = append(attrs, c.kv(l.Name, l.Value))
			}
			c.attrBuf = attrs
			return attrs
		})
	}
	pk := pointKey{f, set}
	ps := c.index.point(pk)
	if ps == nil {
		ps = &pointSeries{fam: f, set: set}
		c.index.addPoint(pk, ps)
	}
	se.ps = ps
	return nil
}

// mutate is Prometheus's mutateSampleLabels: target labels win over the
// page's (which are kept as exported_NAME) unless honor_labels, then
// metric_relabel_configs. An empty result means drop the series.
func (c *Converter) mutate(ls labels.Labels) labels.Labels {
	lb := &c.lb
	lb.Reset(ls)
	if c.t.HonorLabels {
		c.targetLabelSet.Range(func(l labels.Label) {
			if !ls.Has(l.Name) {
				lb.Set(l.Name, l.Value)
			}
		})
	} else {
		var conflicts []labels.Label
		c.targetLabelSet.Range(func(l labels.Label) {
			if v := ls.Get(l.Name); v != "" {
				conflicts = append(conflicts, labels.Label{Name: l.Name, Value: v})
			}
			lb.Set(l.Name, l.Value)
		})
		// shortest names first, as Prometheus resolves them
		slices.SortStableFunc(conflicts, func(a, b labels.Label) int { return len(a.Name) - len(b.Name) })
		for _, l := range conflicts {
			n := l.Name
			for {
				n = model.ExportedLabelPrefix + n
				if lb.Get(n) == "" {
					lb.Set(n, l.Value)
					break
				}
			}
		}
	}
	if len(c.t.MetricRelabelConfigs) > 0 && !relabel.ProcessBuilder(lb, c.t.MetricRelabelConfigs...) {
		return labels.EmptyLabels()
	}
	return lb.Labels()
}

// famMetaFor is the metadata of family outName of resource res, of type
// typ and with what was declared for it (interned: equal metadata is one
// famMeta).
func (c *Converter) famMetaFor(res, outName string, typ model.MetricType, d metaDecl) *famMeta {
	m := famID{res: res, name: outName, typ: typ, help: d.help}
	if d.unit != "" {
		m.unit = unitOf(d.unit)
	}
	return c.sets.fam(m)
}
