package faults

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/otelstep/otelstep/redact/redacttest"
)

// readJSONLAfterKill is readJSONL for files a kill -9 may have cut: a
// line that does not decode (the line a killed process was writing, ended
// by the next start) is counted in bad, not an error.
func readJSONLAfterKill(dir string) (it Items, bad int, err error) {
	it = newItems()
	for _, name := range []string{"metrics.jsonl", "traces.jsonl", "logs.jsonl"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return it, bad, err
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			if it.addLine(name, line) != nil {
				bad++
			}
		}
	}
	return it, bad, nil
}

// load sends spans from senders goroutines (half raw OTLP/HTTP, half raw
// OTLP/gRPC, each request of 20 spans, one after another as fast as they
// are answered) into l until stop is closed or, after the process is
// gone, a request fails to connect.
func load(t testing.TB, n *Node, l *Ledger, senders int, round int, stop <-chan struct{}) (wait func()) {
	t.Helper()
	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() {
			var cc *grpc.ClientConn
			if s%2 == 1 {
				var err error
				if cc, err = grpc.NewClient(n.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
					t.Error(err)
					return
				}
				defer cc.Close()
			}
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				prefix := fmt.Sprintf("r%d-s%d-%d", round, s, i)
				if cc != nil {
					if l.invoke(cc, prefix, 20) != nil {
						return
					}
				} else if code, _ := l.post(n.HTTP, prefix, 20); code != 200 {
					return
				}
			}
		})
	}
	return wg.Wait
}

// Killed (SIGKILL) at random moments under load, five times, started again
// on the same folder each time: every span otelstep answered 200 is in the
// JSONL. Senders keep the ledger of what was answered; the spans written
// but not answered (the kill came between the write and the answer) are
// counted, as are spans twice (none: the senders do not retry) and the
// lines cut by a kill.
func TestKillUnderLoadLosesNothingAcknowledged(t *testing.T) {
	n := configure(t, Setup{})
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 41))
	l := newLedger()
	kills := 5
	senders := size(4, 16)
	var atMs []string
	for round := range kills {
		p := n.start(t)
		stop := make(chan struct{})
		wait := load(t, n, l, senders, round, stop)
		// A random moment once the load runs: after at least one answer,
		// then 0 to 400 ms (long: 0 to 4 s) more.
		before := l.Answered().Total()
		waitFor(t, "the load answered", func() bool { return l.Answered().Total() > before })
		d := time.Duration(rng.Int64N(int64(size(400, 4000)))) * time.Millisecond
		time.Sleep(d) // the moment of the kill, drawn: not a synchronisation
		if err := p.Cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-p.Done
		p.Done <- nil
		close(stop)
		wait()
		atMs = append(atMs, fmt.Sprint(d.Milliseconds()))
	}
	answered := l.Answered()
	in, bad, err := readJSONLAfterKill(n.Otel)
	if err != nil {
		t.Fatal(err)
	}
	lost := in.Missing(answered)
	twice, unanswered := 0, 0
	for name, c := range in.Spans {
		if c > 1 {
			twice += c - 1
		}
		if answered.Spans[name] == 0 {
			unanswered += c
		}
	}
	t.Logf("seed %d", seed)
	report(t, fmt.Sprintf("%d kill -9 under %d senders, at %s ms after the first answer: %d spans answered 200, %d of them not in the JSONL; %d twice; %d written but not answered (killed first); %d cut lines; %d requests not answered",
		kills, senders, strings.Join(atMs, ", "), answered.Total(), lost, twice, unanswered, bad, l.Refused()), lost)
}

// An application puts the ingest token in its own span attributes (as it
// is, inside a longer string and as a bytes value, at each base64
// alignment) and in a log body: it is in no JSONL file, and the spans and
// the log record are there.
func TestTokenInSpanAttributes(t *testing.T) {
	n := configure(t, Setup{})
	p := n.start(t)
	str := func(s string) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
	}
	var spans []*tracepb.Span
	for i, pre := range []string{"", "x", "xy"} {
		tid, sid := bytes.Repeat([]byte{byte(i + 1)}, 16), bytes.Repeat([]byte{byte(i + 1)}, 8)
		spans = append(spans, &tracepb.Span{Name: fmt.Sprintf("token-span-%d", i), TraceId: tid, SpanId: sid, StartTimeUnixNano: 1, EndTimeUnixNano: 2,
			Attributes: []*commonpb.KeyValue{
				{Key: "app.token", Value: str(token)},
				{Key: "http.request.header.authorization", Value: str("Bearer " + token)},
				{Key: "app.blob", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte(pre + token + "!")}}},
			}})
	}
	body, err := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}}}}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post("http://"+n.HTTP+"/v1/traces", "application/x-protobuf", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("answered %d", resp.StatusCode)
	}
	logBody := fmt.Sprintf(`{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":{"stringValue":"login with token %s failed"}}]}]}]}`, token)
	resp, err = http.Post("http://"+n.HTTP+"/v1/logs", "application/json", strings.NewReader(logBody))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("logs answered %d", resp.StatusCode)
	}
	e := p.Stop(t)
	figure := checkExit(t, p, e)
	in := n.jsonl(t)
	lost := 0
	for i := range spans {
		if in.Spans[fmt.Sprintf("token-span-%d", i)] != 1 {
			lost++
		}
	}
	if len(in.Logs) != 1 {
		lost++
	}
	n.checkNoToken(t, p)
	for _, name := range []string{"traces.jsonl", "logs.jsonl"} {
		data, err := os.ReadFile(filepath.Join(n.Otel, name))
		if err != nil {
			t.Fatal(err)
		}
		if leak := redacttest.Leak(string(data), token); leak != "" {
			t.Errorf("%s: the token, %s", name, leak)
		}
	}
	report(t, fmt.Sprintf("the token in 3 spans' attributes (string, in a header value, bytes at 3 alignments) and a log body: none in the JSONL; %s", figure), lost)
}

// The JSONL files cannot grow (the file size limit, as TestDiskFull) when
// SIGTERM comes: the stop drains the pipelines into the file sinks and the
// backend, cuts off nothing but whole lines stay, and exits 0, since what
// the files could not write is at the backend (the log says how much).
// Every span answered 200 is in the JSONL.
func TestDiskFullAtStop(t *testing.T) {
	be := NewBackend(t)
	n := configure(t, Setup{Backend: be.URL(), Exporter: fastRetry})
	p := n.start(t)
	l := newLedger()
	exportBefore(t, n, l)
	capJSONL(t, n, p)
	refused := 0
	for i := 0; refused < size(20, 500); i++ {
		if code, _ := l.post(n.HTTP, fmt.Sprintf("full%d", i), 20); code != 200 {
			refused++
		}
		if i > 100_000 {
			t.Fatal("spans still taken with traces.jsonl unable to grow")
		}
	}
	e := p.Terminate(t) // still full
	figure := checkExit(t, p, e)
	answered := l.Answered()
	in := n.jsonl(t) // every line whole and decoded: no cut line
	lost := in.Missing(answered)
	out := p.Out.String()
	unwritten := 0
	if i := strings.Index(out, "unwritten_items="); i >= 0 {
		fmt.Sscanf(out[i+len("unwritten_items="):], "%d", &unwritten)
	}
	if unwritten == 0 {
		t.Errorf("the stop did not say what the JSONL lacks:\n%s", out)
	}
	// What the JSONL lacks is at the backend: the spans there and not in
	// the JSONL are at least as many as the stop counted.
	got := be.Got()
	atBackendOnly := 0
	for name, c := range got.Spans {
		if in.Spans[name] == 0 {
			atBackendOnly += c
		}
	}
	if atBackendOnly < unwritten {
		t.Errorf("%d spans not written to the JSONL at the stop, %d of them at the backend", unwritten, atBackendOnly)
	}
	n.checkNoToken(t, p)
	report(t, fmt.Sprintf("files full at SIGTERM: %d spans answered 200, all in the JSONL (whole lines); %d requests told to retry later; %d spans the JSONL could not take at the stop, at the backend; %s",
		answered.Total(), refused, unwritten, figure), lost)
}
