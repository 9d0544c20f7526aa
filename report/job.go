package report

import (
	"context"
	"encoding/hex"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/otelstep/otelstep/internal/anyvalue"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// Job is what one DIR's files hold, read once.
type Job struct {
	Dir   string      // as given
	Files []FileStats // one per file read
	// Resource is the job's identity: the resource attributes that have one
	// value wherever they are set (benchmark, model, run_id, ...), secrets
	// left out.
	Resource map[string]string
	// Start and End bound every point, span and log record, in Unix ms
	// (0 when the job holds none).
	Start, End int64

	store   *store
	spans   map[spanKey]*spanAcc
	traces  *slowTraces
	logs    logAcc
	secrets []string // values of secret attributes seen, redacted from every output
}

// Options tune reading.
type Options struct {
	MaxLineBytes int // 0: DefaultMaxLineBytes
	// SlowTraces is how many of the slowest traces are kept as waterfalls
	// (0: 5).
	SlowTraces int
}

type jobReader struct {
	*Job
	maxLine int
	resVals map[string]string // first value, or "\x00" once two differ
	minT    int64
	maxT    int64
	spanDec [16]byte
}

// Read reads a job's files. Damaged lines are counted in Files, never an
// error; an error is a folder without the files, one that cannot be read,
// or ctx ending.
func Read(ctx context.Context, dir string, opt Options) (*Job, error) {
	d, err := ResolveDir(dir)
	if err != nil {
		return nil, err
	}
	if opt.MaxLineBytes <= 0 {
		opt.MaxLineBytes = DefaultMaxLineBytes
	}
	if opt.SlowTraces <= 0 {
		opt.SlowTraces = 5
	}
	j := &jobReader{
		Job: &Job{
			Dir:    dir,
			store:  newStore(),
			spans:  map[spanKey]*spanAcc{},
			traces: newSlowTraces(opt.SlowTraces),
			logs:   newLogAcc(),
		},
		maxLine: opt.MaxLineBytes,
		resVals: map[string]string{},
		minT:    math.MaxInt64,
		maxT:    math.MinInt64,
	}
	for _, name := range signalFiles {
		p := filepath.Join(d, name)
		if !fileExists(p) {
			continue
		}
		st, err := j.readFile(ctx, p)
		if err != nil {
			return nil, err
		}
		j.Files = append(j.Files, st)
	}
	j.store.seal()
	j.Resource = map[string]string{}
	for k, v := range j.resVals {
		if v != "\x00" {
			j.Resource[k] = v
		}
	}
	if j.store.minT <= j.store.maxT {
		j.minT, j.maxT = min(j.minT, j.store.minT), max(j.maxT, j.store.maxT)
	}
	if j.minT <= j.maxT {
		j.Start, j.End = j.minT, j.maxT
	}
	slices.Sort(j.secrets)
	j.secrets = slices.Compact(j.secrets)
	return j.Job, nil
}

// secretKey tells an attribute whose value is a credential: the
// Authorization attribute every resource carries and anything named like a
// header or a secret (a word of its name is token, secret, password,
// cookie, credential(s) or bearer, or two are api/access/private key).
// Their values are never written out. "max_tokens" is no secret: words are
// matched whole.
func secretKey(k string) bool {
	words := strings.FieldsFunc(strings.ToLower(k), func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < '0' || r > '9')
	})
	for i, w := range words {
		switch w {
		case "authorization", "token", "secret", "password", "passwd", "cookie", "credential", "credentials", "bearer", "apikey":
			return true
		case "key":
			if i > 0 && (words[i-1] == "api" || words[i-1] == "access" || words[i-1] == "private") {
				return true
			}
		}
	}
	return false
}

// resource notes a resource's attributes for the job's identity and its
// secrets.
func (j *jobReader) resource(r *resourcepb.Resource) {
	for _, kv := range r.GetAttributes() {
		v := anyString(kv.Value)
		if secretKey(kv.Key) {
			if v != "" && len(j.secrets) < 64 {
				j.secrets = append(j.secrets, v, strings.TrimPrefix(v, "Bearer "))
			}
			continue
		}
		if old, ok := j.resVals[kv.Key]; !ok {
			if len(j.resVals) < 256 {
				j.resVals[kv.Key] = v
			}
		} else if old != v {
			j.resVals[kv.Key] = "\x00"
		}
	}
}

func (j *jobReader) onMetrics(rms []*metricspb.ResourceMetrics) {
	for _, rm := range rms {
		j.resource(rm.GetResource())
		j.store.addResourceMetrics(rm)
	}
}

func (j *jobReader) times(startNano, endNano uint64) {
	if startNano > 0 {
		j.minT = min(j.minT, int64(startNano/1e6))
	}
	if endNano > 0 {
		j.maxT = max(j.maxT, int64(endNano/1e6))
	}
}

// serviceOf is a producer's name: service.name.override where the job's
// identity rule kept it, else service.name.
func serviceOf(r *resourcepb.Resource) string {
	var name, override string
	for _, kv := range r.GetAttributes() {
		switch kv.Key {
		case "service.name":
			name = anyString(kv.Value)
		case "service.name.override":
			override = anyString(kv.Value)
		}
	}
	if override != "" {
		return override
	}
	return name
}

func (j *jobReader) onTraces(rss []*tracepb.ResourceSpans) {
	for _, rs := range rss {
		j.resource(rs.GetResource())
		svc := serviceOf(rs.GetResource())
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				j.times(sp.StartTimeUnixNano, sp.EndTimeUnixNano)
				dur := 0.0
				if sp.EndTimeUnixNano > sp.StartTimeUnixNano {
					dur = float64(sp.EndTimeUnixNano-sp.StartTimeUnixNano) / 1e9
				}
				k := spanKey{svc, sp.Name}
				a := j.spans[k]
				if a == nil {
					a = &spanAcc{}
					j.spans[k] = a
				}
				a.durs = append(a.durs, dur)
				isErr := sp.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR
				if isErr {
					a.errors++
				}
				j.traces.add(sp, svc, isErr)
			}
		}
	}
}

func (j *jobReader) onLogs(rls []*logspb.ResourceLogs) {
	for _, rl := range rls {
		j.resource(rl.GetResource())
		for _, sl := range rl.GetScopeLogs() {
			for _, lr := range sl.GetLogRecords() {
				t := lr.TimeUnixNano
				if t == 0 {
					t = lr.ObservedTimeUnixNano
				}
				j.times(t, t)
				j.logs.add(lr)
			}
		}
	}
}

// anyString is an attribute value as a label value: strings as they are,
// other scalars as Prometheus's OTLP ingestion writes them.
func anyString(v *commonpb.AnyValue) string {
	if s, ok := anyvalue.Scalar(v); ok {
		return s
	}
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_BytesValue:
		return hex.EncodeToString(x.BytesValue)
	case *commonpb.AnyValue_ArrayValue:
		parts := make([]string, 0, len(x.ArrayValue.GetValues()))
		for _, e := range x.ArrayValue.GetValues() {
			parts = append(parts, strconv.Quote(anyString(e)))
		}
		return "[" + strings.Join(parts, ",") + "]"
	case *commonpb.AnyValue_KvlistValue:
		parts := make([]string, 0, len(x.KvlistValue.GetValues()))
		for _, kv := range x.KvlistValue.GetValues() {
			if secretKey(kv.Key) {
				continue
			}
			parts = append(parts, fmt.Sprintf("%q:%q", kv.Key, anyString(kv.Value)))
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	return ""
}
