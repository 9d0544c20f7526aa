package faults

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// payloadRequest is an OTLP/HTTP protobuf body of spans named names, each
// with an attribute of payload bytes of hex: about
// len(names)*(payload+100) bytes. The attributes are cut from noise at
// offsets that differ by more than gzip's window, so the body gzips to
// about half (the hex), as random data would, when noise is random; a
// noise of one repeated byte makes it compress to nothing.
func payloadRequest(names []string, payload int, noise string, at int) []byte {
	ss := &tracepb.ScopeSpans{}
	for i, n := range names {
		seq := spanSeq.Add(1)
		tid, sid := make([]byte, 16), make([]byte, 8)
		tid[0] = 1
		binary.BigEndian.PutUint64(tid[8:], seq)
		binary.BigEndian.PutUint64(sid, seq)
		off := ((at + i) * 40009) % (len(noise) - payload)
		ss.Spans = append(ss.Spans, &tracepb.Span{Name: n, TraceId: tid, SpanId: sid, StartTimeUnixNano: 1, EndTimeUnixNano: 2,
			Attributes: []*commonpb.KeyValue{{Key: "payload", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: noise[off : off+payload]}}}}})
	}
	body, err := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{ss}}}})
	if err != nil {
		panic(err)
	}
	return body
}

// hexNoise is n bytes of random hex.
func hexNoise(n int) string {
	raw := make([]byte, n/2)
	rng := rand.New(rand.NewPCG(7, 1))
	for i := 0; i+8 <= len(raw); i += 8 {
		binary.LittleEndian.PutUint64(raw[i:], rng.Uint64())
	}
	return hex.EncodeToString(raw)
}

// progress is when any sender of a case last had a request taken: a
// sender told to retry gives up only when no request at all was taken for
// proctest.Patience, so that twenty senders served one after another on a
// slow machine are not taken for a stuck receiver.
type progress struct {
	mu   sync.Mutex
	last time.Time
}

func newProgress() *progress { return &progress{last: time.Now()} }

func (p *progress) taken() {
	p.mu.Lock()
	p.last = time.Now()
	p.mu.Unlock()
}

func (p *progress) stalled() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return time.Since(p.last) > patience
}

// postUntilTaken posts body (the spans names) to OTLP/HTTP at addr until
// it is answered 200, waiting what each "retry later" (503 with
// Retry-After) asks, as a sender does; it records the answer in l and
// returns how many times it was told to retry. Any other answer fails
// the test.
func (l *Ledger) postUntilTaken(t testing.TB, pr *progress, addr string, names []string, body []byte) int {
	retries := 0
	for {
		resp, err := http.Post("http://"+addr+"/v1/traces", "application/x-protobuf", bytes.NewReader(body))
		if err != nil {
			l.record(names, false)
			t.Errorf("post of %d bytes: %v", len(body), err)
			return retries
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			l.record(names, true)
			pr.taken()
			return retries
		}
		after, aerr := strconv.Atoi(resp.Header.Get("Retry-After"))
		if resp.StatusCode != http.StatusServiceUnavailable || aerr != nil || after <= 0 {
			l.record(names, false)
			t.Errorf("post of %d bytes: %s with Retry-After %q, want 200 or 503 with a Retry-After", len(body), resp.Status, resp.Header.Get("Retry-After"))
			return retries
		}
		if pr.stalled() {
			l.record(names, false)
			t.Errorf("post of %d bytes: told to retry %d times, and no request was taken for %v", len(body), retries, patience)
			return retries
		}
		retries++
		time.Sleep(time.Duration(after) * time.Second) // what the answer asks
	}
}

// metricValue is the value of the series named name (with its labels, as
// the Prometheus text writes them) at otelstep's /metrics on health, 0
// when it is not there.
func metricValue(t testing.TB, health, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + health + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				t.Fatalf("%s: %v", sc.Text(), err)
			}
			return v
		}
	}
	return 0
}

// Ten senders (long: twenty) post a ~19 MB request each at once (near the
// 20 MiB request limit; ten of them held at once, decoded, would pass the
// resident set's bound): the receiver takes what its byte budget holds
// and tells the rest to retry later; every one is taken in the end,
// everything answered 200 is in the JSONL, and the peak resident set stays
// under the bound.
func TestConcurrentLargeRequests(t *testing.T) {
	n := configure(t, Setup{})
	p := n.start(t)
	l := newLedger()
	pr := newProgress()
	const spans, payload = 1800, 10000   // 1800 spans of 10 KB: about 18 MB
	noise := strings.Repeat("ab", 1<<20) // what they hold does not matter here: no gzip
	senders := size(10, 20)
	rounds := size(1, 5)
	var wg sync.WaitGroup
	var mu sync.Mutex
	retried, size0 := 0, 0
	for s := range senders {
		wg.Go(func() {
			for r := range rounds {
				names := spanNames(fmt.Sprintf("big%d.%d", s, r), spans)
				body := payloadRequest(names, payload, noise, s)
				k := l.postUntilTaken(t, pr, n.HTTP, names, body)
				mu.Lock()
				retried += k
				size0 = len(body)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	answered := l.Answered()
	if answered.Total() != senders*rounds*spans {
		t.Errorf("%d spans answered 200, want all %d", answered.Total(), senders*rounds*spans)
	}
	if retried == 0 {
		t.Errorf("%d concurrent requests of %d bytes were all taken at once: nothing bounded them", senders, size0)
	}
	e := p.Stop(t)
	figure := checkExit(t, p, e)
	lost := n.jsonl(t).Missing(answered)
	n.checkNoToken(t, p)
	report(t, fmt.Sprintf("%d×%d concurrent requests of %.1f MB: %d told to retry later, all answered 200 in the end; %s",
		rounds, senders, float64(size0)/1e6, retried, figure), lost)
}

// The backend hangs (reads each request and never answers) while
// requests of a few MB keep coming: the exporter's queue holds at most its
// bytes (sending_queue, 16 MiB unless set), dropping the oldest and
// counting them, where 1000 requests of them were gigabytes; the JSONL
// has everything answered 200 and the peak resident set stays under the
// bound, and a stop with the backend still hung exits 0 in time.
func TestHungBackendQueueBounded(t *testing.T) {
	be := NewBackend(t)
	be.Set(Hung)
	n := configure(t, Setup{Backend: be.URL(), Exporter: fastRetry})
	p := n.start(t)
	l := newLedger()
	pr := newProgress()
	const spans, payload = 2000, 2000 // about 4 MB, 2 MB gzipped
	noise := hexNoise(8 << 20)
	// 20 requests are 40 MB gzipped, more than twice what the queue and
	// the two workers' requests in flight hold.
	requests := size(20, 600)
	retried, size0 := 0, 0
	for i := range requests {
		names := spanNames(fmt.Sprintf("hung%d", i), spans)
		body := payloadRequest(names, payload, noise, i*spans)
		size0 = len(body)
		retried += l.postUntilTaken(t, pr, n.HTTP, names, body)
	}
	answered := l.Answered()
	if answered.Total() != requests*spans {
		t.Errorf("%d spans answered 200, want all %d", answered.Total(), requests*spans)
	}
	if be.Requests(Hung) == 0 {
		t.Error("the hung backend saw no request")
	}
	// Below the queue's 1000 requests, only its bytes bound drops: what
	// was sent is several times its 16 MiB.
	waitFor(t, "the exporter counting batches dropped", func() bool {
		return metricValue(t, n.Health, `otelstep_exporter_dropped_batches_total{exporter="otlp_http"}`) > 0
	})
	dropped := metricValue(t, n.Health, `otelstep_exporter_dropped_batches_total{exporter="otlp_http"}`)
	hungPeak, err := p.PeakRSS()
	if err != nil {
		t.Fatal(err)
	}
	if hungPeak >= rssBound {
		t.Errorf("peak RSS %d MiB while the backend hung, bound %d MiB", hungPeak>>20, rssBound>>20)
	}
	e := p.Stop(t) // the backend still hung: the stop gives it a bounded time
	figure := checkExit(t, p, e)
	lost := n.jsonl(t).Missing(answered)
	n.checkNoToken(t, p)
	report(t, fmt.Sprintf("%d requests of %.1f MB to a hung backend: %d told to retry later, %.0f batches dropped by the exporter, peak RSS %d MiB while hung; %s",
		requests, float64(size0)/1e6, retried, dropped, hungPeak>>20, figure), lost)
}
