package bench

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/otelstep/otelstep/pipeline"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// OTLPOptions is one `otelstep bench otlp` run: a load generator sending
// pre-built export requests to the collector under test.
type OTLPOptions struct {
	Signal   string // traces, logs or metrics
	Protocol string // grpc or http
	// Batch items (spans, log records, points) per request, each with Attrs
	// string attributes of AttrBytes bytes.
	Batch, Attrs, AttrBytes int
	Workers                 int // concurrent senders
	// Rate is requests per second in all, on a schedule that does not
	// wait for the answers (pacer): request k is due k/Rate seconds after
	// the load starts and is sent by the first worker free then, late if
	// none was free, never early; one more than a second late is skipped.
	// 0 sends as fast as accepted.
	Rate             float64
	Warmup, Duration time.Duration
	// Count, if above 0, ends the window once this many items were
	// accepted in it, however long that takes (in place of Duration).
	Count int64
	Impls []Impl
	// Rounds, if above 1, measures every Impl once a round, for this many
	// rounds, alternating the order (runOrder), and reports each figure's
	// median over the rounds with its range (OTLPReport).
	Rounds int
	Log    func(format string, a ...any)
}

// OTLPResult is one collector's row.
type OTLPResult struct {
	Name             string  `json:"name"`
	StartToHealthyMS float64 `json:"start_to_healthy_ms"`
	WindowSeconds    float64 `json:"window_seconds"`
	Items            int64   `json:"items"` // accepted in the window
	ItemsPerSecond   float64 `json:"items_per_second"`
	// OfferedPerSecond is the load --rate offered in the window: the items
	// of the requests its schedule made due in it, a second; none without
	// --rate. SentPerSecond is the items of the requests sent in the
	// window, a second, answered or not. Offered, sent and accepted
	// (ItemsPerSecond) agree when the collector kept up with the load.
	OfferedPerSecond  *float64 `json:"offered_items_per_second,omitempty"`
	SentPerSecond     float64  `json:"sent_items_per_second"`
	CPUSeconds        float64  `json:"cpu_seconds"`
	ItemsPerCPUSecond float64  `json:"items_per_cpu_second"`
	PeakRSSBytes      int64    `json:"peak_rss_bytes"`
	PeakAnonRSSBytes  int64    `json:"peak_anon_rss_bytes"` // RssAnon sampled every 20ms: without the binary's file pages
	// Refused counts "retry later" answers (HTTP 429/503, gRPC
	// UNAVAILABLE/RESOURCE_EXHAUSTED): backpressure, not loss. Errors are
	// any other failure. Over several rounds, these and the whole run's
	// counts below are the rounds' totals.
	Refused int64 `json:"refused" rounds:"total"`
	Errors  int64 `json:"errors" rounds:"total"`
	// Skipped counts the requests --rate's schedule skipped, as more than
	// a second late when a worker was free to send them: the collector
	// did not keep up with the load.
	Skipped int64 `json:"skipped_requests" rounds:"total"`
	// Accepted is the items the collector accepted over the whole run,
	// BackendItems what the discard backend decoded of them after the
	// collector stopped: the two are equal when nothing was lost.
	Accepted     int64 `json:"accepted_items" rounds:"total"`
	BackendItems int64 `json:"backend_items" rounds:"total"`
	JSONLBytes   int64 `json:"jsonl_bytes" rounds:"total"`
	// BackendBytes is the request bodies the backend received for the
	// signal over the whole run, as sent (compressed);
	// BackendBytesPerItem divides it by BackendItems.
	BackendBytes        int64   `json:"backend_bytes" rounds:"total"`
	BackendBytesPerItem float64 `json:"backend_bytes_per_item"`
	// BackendRequests and BackendRawBytes (the bodies decompressed) explain
	// BackendBytesPerItem: items per request is the batch size the
	// collector sends, raw bytes per item its protobuf encoding.
	BackendRequests        int64   `json:"backend_requests" rounds:"total"`
	BackendItemsPerRequest float64 `json:"backend_items_per_request"`
	BackendRawBytes        int64   `json:"backend_raw_bytes" rounds:"total"`
	BackendRawBytesPerItem float64 `json:"backend_raw_bytes_per_item"`
	// AnswerP50MS and AnswerP99MS are the percentiles of the time from a
	// request's sending to its OK answer, over the window: with otelstep,
	// until its items are in the JSONL.
	AnswerP50MS float64 `json:"answer_p50_ms"`
	AnswerP99MS float64 `json:"answer_p99_ms"`
}

// OTLPReport is the whole run.
type OTLPReport struct {
	Signal   string `json:"signal"`
	Protocol string `json:"protocol"`
	Batch    int    `json:"batch"`
	Attrs    int    `json:"attrs"`
	Summary[OTLPResult, OTLPRatio]
}

// OTLPRatio is otelstep against one peer.
type OTLPRatio struct {
	Peer              string  `json:"peer"`
	ItemsPerCPUSecond float64 `json:"items_per_cpu_second"`
	PeakRSS           float64 `json:"peak_rss"`
	// BackendBytesPerItem is otelstep's compressed bytes per item at the
	// backend over the peer's: the bandwidth a backend pays for.
	BackendBytesPerItem float64 `json:"backend_bytes_per_item"`
	// OverRounds, with more than one round, is each ratio above (by its
	// JSON name) over the rounds: the figures above are the medians.
	OverRounds map[string]Spread `json:"over_rounds,omitempty"`
}

// RunOTLP measures each Impl in turn under the same load, in as many
// rounds as asked.
func RunOTLP(ctx context.Context, o OTLPOptions) (*OTLPReport, error) {
	if o.Batch < 1 {
		o.Batch = 1
	}
	if o.Workers < 1 {
		o.Workers = 1
	}
	switch o.Signal {
	case "traces", "logs", "metrics":
	default:
		return nil, fmt.Errorf("--signal %q: want traces, logs or metrics", o.Signal)
	}
	for _, im := range o.Impls {
		if im.Kind == KindVMAgent {
			return nil, fmt.Errorf("%s is a vmagent, which takes no OTLP here: it measures against bench scrape only", im.Name)
		}
	}
	if o.Protocol != "grpc" && o.Protocol != "http" {
		return nil, fmt.Errorf("--protocol %q: want grpc or http", o.Protocol)
	}
	logf := o.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	reqs := buildRequests(o, 16)
	rep := &OTLPReport{Signal: o.Signal, Protocol: o.Protocol, Batch: o.Batch, Attrs: o.Attrs}
	rounds, err := runRounds(ctx, o.Impls, o.Rounds, func(ctx context.Context, round int, im Impl) (OTLPResult, error) {
		logf("%s%s: %s over %s, %d items a request, %d workers; warm-up %s, then %s measured", roundOf(round, o.Rounds), im.Name, o.Signal, o.Protocol, o.Batch, o.Workers, o.Warmup, window(o.Duration, o.Count, "items"))
		r, err := otlpOne(ctx, o, im, reqs)
		if err != nil {
			return OTLPResult{}, err
		}
		return *r, nil
	}, otlpRatios)
	if err != nil {
		return nil, err
	}
	rep.Summary = summarize(rounds)
	return rep, nil
}

// otlpRatios compares otelstep (the first) with each of the others.
func otlpRatios(results []OTLPResult) []OTLPRatio {
	var out []OTLPRatio
	for _, r := range results[1:] {
		out = append(out, OTLPRatio{Peer: r.Name,
			ItemsPerCPUSecond:   safeDiv(results[0].ItemsPerCPUSecond, r.ItemsPerCPUSecond),
			PeakRSS:             safeDiv(float64(results[0].PeakRSSBytes), float64(r.PeakRSSBytes)),
			BackendBytesPerItem: safeDiv(results[0].BackendBytesPerItem, r.BackendBytesPerItem)})
	}
	return out
}

// request is one pre-built export request: the message (gRPC) and its
// protobuf encoding (HTTP).
type request struct {
	msg  proto.Message
	body []byte
}

func buildRequests(o OTLPOptions, n int) []request {
	rng := rand.New(rand.NewPCG(1, 2))
	val := func() *commonpb.AnyValue {
		b := make([]byte, o.AttrBytes)
		for i := range b {
			b[i] = 'a' + byte(rng.IntN(26))
		}
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: string(b)}}
	}
	attrs := func() []*commonpb.KeyValue {
		kvs := make([]*commonpb.KeyValue, o.Attrs)
		for i := range kvs {
			kvs[i] = &commonpb.KeyValue{Key: fmt.Sprintf("attr.%d", i), Value: val()}
		}
		return kvs
	}
	res := &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
		{Key: "service.name", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "bench-driver"}}},
		{Key: "host.name", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "node-001"}}},
	}}
	scope := &commonpb.InstrumentationScope{Name: "otelstep-bench", Version: "1"}
	now := uint64(time.Now().UnixNano())
	out := make([]request, n)
	for i := range out {
		var m proto.Message
		switch o.Signal {
		case "traces":
			spans := make([]*tracepb.Span, o.Batch)
			for j := range spans {
				tid, sid := make([]byte, 16), make([]byte, 8)
				for k := range tid {
					tid[k] = byte(rng.Uint32())
				}
				for k := range sid {
					sid[k] = byte(rng.Uint32())
				}
				spans[j] = &tracepb.Span{TraceId: tid, SpanId: sid, Name: fmt.Sprintf("op-%d", j%50), Kind: tracepb.Span_SPAN_KIND_SERVER,
					StartTimeUnixNano: now, EndTimeUnixNano: now + 1e6, Attributes: attrs(), Status: &tracepb.Status{}}
			}
			m = &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{Resource: res, ScopeSpans: []*tracepb.ScopeSpans{{Scope: scope, Spans: spans}}}}}
		case "logs":
			recs := make([]*logspb.LogRecord, o.Batch)
			for j := range recs {
				recs[j] = &logspb.LogRecord{TimeUnixNano: now, SeverityNumber: logspb.SeverityNumber_SEVERITY_NUMBER_INFO, SeverityText: "INFO",
					Body: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: fmt.Sprintf("request %d handled in %d ms", j, rng.IntN(900))}}, Attributes: attrs()}
			}
			m = &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{Resource: res, ScopeLogs: []*logspb.ScopeLogs{{Scope: scope, LogRecords: recs}}}}}
		case "metrics":
			pts := make([]*metricspb.NumberDataPoint, o.Batch)
			for j := range pts {
				pts[j] = &metricspb.NumberDataPoint{TimeUnixNano: now, StartTimeUnixNano: now - 1e9, Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: rng.Float64()}, Attributes: attrs()}
			}
			m = &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{{Resource: res, ScopeMetrics: []*metricspb.ScopeMetrics{{Scope: scope,
				Metrics: []*metricspb.Metric{{Name: "bench_requests", Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{IsMonotonic: true, AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE, DataPoints: pts}}}}}}}}}
		}
		body, err := proto.Marshal(m)
		if err != nil {
			panic(err) // built above: cannot fail
		}
		out[i] = request{msg: m, body: body}
	}
	return out
}

func otlpOne(ctx context.Context, o OTLPOptions, im Impl, reqs []request) (*OTLPResult, error) {
	u, err := startUnderTest(ctx, im, time.Second, nil)
	if err != nil {
		return nil, err
	}
	defer u.close()
	be, dir, sc, p := u.be, u.dir, u.sc, u.p

	send, closeSender, err := newSender(o, sc)
	if err != nil {
		return nil, err
	}
	var accepted, refused, failed atomic.Int64
	// Stopping the load lets requests in flight finish: cancelling them
	// would leave accepted items uncounted.
	var stopping atomic.Bool
	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	pace := newPacer(time.Now(), o.Rate)
	var sentReqs atomic.Int64 // requests sent, answered or not
	// Each worker's answer times in the window (measuring), read once the
	// workers are done.
	var measuring atomic.Bool
	took := make([][]time.Duration, o.Workers)
	for w := range o.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stopping.Load() {
				k, err := pace.wait(loadCtx)
				if err != nil {
					return
				}
				sentReqs.Add(1)
				sent := time.Now()
				switch send(ctx, reqs[k%int64(len(reqs))]) {
				case sendOK:
					if measuring.Load() {
						took[w] = append(took[w], time.Since(sent))
					}
					accepted.Add(int64(o.Batch))
				case sendRefused:
					refused.Add(1)
					time.Sleep(time.Millisecond) // backpressure: do not spin
				case sendFailed:
					failed.Add(1)
					time.Sleep(time.Millisecond)
				}
			}
		}()
	}
	stop := func() { stopping.Store(true); stopLoad(); wg.Wait(); closeSender() }
	defer stop()
	if err := sleep(ctx, o.Warmup); err != nil {
		return nil, err
	}
	measuring.Store(true)
	t0, cpu0, n0, s0 := time.Now(), mustCPU(p), accepted.Load(), sentReqs.Load()
	if o.Count > 0 {
		err = waitCount(ctx, p, func() int64 { return accepted.Load() - n0 }, o.Count)
	} else {
		err = sleep(ctx, o.Duration)
	}
	if err != nil {
		return nil, err
	}
	t1, cpu1, n1, s1 := time.Now(), mustCPU(p), accepted.Load(), sentReqs.Load()
	measuring.Store(false)
	rss, err := p.PeakRSS()
	if err != nil {
		return nil, err
	}
	stop()
	var all []time.Duration
	for _, d := range took {
		all = append(all, d...)
	}
	slices.Sort(all)
	if err := p.Stop(30 * time.Second); err != nil {
		return nil, err
	}
	r := &OTLPResult{Name: im.Name, StartToHealthyMS: float64(p.Healthy.Microseconds()) / 1000, PeakRSSBytes: rss, PeakAnonRSSBytes: p.PeakAnonRSS(),
		WindowSeconds: t1.Sub(t0).Seconds(), Items: n1 - n0, CPUSeconds: cpu1 - cpu0,
		Refused: refused.Load(), Errors: failed.Load(), Accepted: accepted.Load(), JSONLBytes: filesSize(dir), Skipped: pace.skippedCount()}
	r.AnswerP50MS, r.AnswerP99MS = percentileMS(all, 0.50), percentileMS(all, 0.99)
	r.ItemsPerSecond = float64(r.Items) / r.WindowSeconds
	r.SentPerSecond = float64((s1-s0)*int64(o.Batch)) / r.WindowSeconds
	if o.Rate > 0 {
		offered := float64((pace.dueBefore(t1)-pace.dueBefore(t0))*int64(o.Batch)) / r.WindowSeconds
		r.OfferedPerSecond = &offered
	}
	r.ItemsPerCPUSecond = safeDiv(float64(r.Items), r.CPUSeconds)
	sig, _ := pipeline.ParseSignal(o.Signal)
	t := be.Totals(sig)
	r.BackendItems, r.BackendBytes, r.BackendRequests, r.BackendRawBytes = t.Items, t.Wire, t.Requests, t.Raw
	r.BackendItemsPerRequest = safeDiv(float64(t.Items), float64(t.Requests))
	r.BackendRawBytesPerItem = safeDiv(float64(t.Raw), float64(t.Items))
	r.BackendBytesPerItem = safeDiv(float64(r.BackendBytes), float64(r.BackendItems))
	return r, nil
}

// percentileMS is the q-quantile of sorted durations, in milliseconds; 0
// for none.
func percentileMS(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := min(len(sorted)-1, int(q*float64(len(sorted))))
	return float64(sorted[i].Microseconds()) / 1000
}

func mustCPU(p *Proc) float64 {
	v, _ := p.CPU()
	return v
}

type sendResult int

const (
	sendOK sendResult = iota
	sendRefused
	sendFailed
)

// newSender returns a function that sends one request to the scenario's
// receiver over the protocol.
func newSender(o OTLPOptions, sc Scenario) (func(context.Context, request) sendResult, func(), error) {
	if o.Protocol == "http" {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = o.Workers
		c := &http.Client{Transport: tr, Timeout: 30 * time.Second}
		url := "http://" + sc.HTTP + "/v1/" + o.Signal
		return func(ctx context.Context, r request) sendResult {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(r.body))
			req.Header.Set("Content-Type", "application/x-protobuf")
			resp, err := c.Do(req)
			if err != nil {
				return sendFailed
			}
			resp.Body.Close()
			switch {
			case resp.StatusCode/100 == 2:
				return sendOK
			case resp.StatusCode == 429 || resp.StatusCode == 503:
				return sendRefused
			}
			return sendFailed
		}, tr.CloseIdleConnections, nil
	}
	conn, err := grpc.NewClient(sc.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, fmt.Errorf("grpc client: %w", err)
	}
	var call func(ctx context.Context, m proto.Message) error
	switch o.Signal {
	case "traces":
		c := coltracepb.NewTraceServiceClient(conn)
		call = func(ctx context.Context, m proto.Message) error {
			_, err := c.Export(ctx, m.(*coltracepb.ExportTraceServiceRequest))
			return err
		}
	case "logs":
		c := collogspb.NewLogsServiceClient(conn)
		call = func(ctx context.Context, m proto.Message) error {
			_, err := c.Export(ctx, m.(*collogspb.ExportLogsServiceRequest))
			return err
		}
	default:
		c := colmetricspb.NewMetricsServiceClient(conn)
		call = func(ctx context.Context, m proto.Message) error {
			_, err := c.Export(ctx, m.(*colmetricspb.ExportMetricsServiceRequest))
			return err
		}
	}
	return func(ctx context.Context, r request) sendResult {
		err := call(ctx, r.msg)
		switch status.Code(err) {
		case codes.OK:
			return sendOK
		case codes.Unavailable, codes.ResourceExhausted:
			if err != nil && strings.Contains(err.Error(), "connection refused") {
				return sendFailed
			}
			return sendRefused
		}
		return sendFailed
	}, func() { _ = conn.Close() }, nil
}
