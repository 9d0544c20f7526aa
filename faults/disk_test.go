package faults

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/otelstep/otelstep/internal/proctest"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// limitFileSize sets the running process's file size limit (the soft one;
// RLIM_INFINITY for none): its writes past it fail with EFBIG, as they
// would with ENOSPC on a full file system.
func limitFileSize(t testing.TB, p *proctest.Process, limit uint64) {
	t.Helper()
	var old unix.Rlimit
	if err := unix.Prlimit(p.Cmd.Process.Pid, unix.RLIMIT_FSIZE, nil, &old); err != nil {
		t.Fatal(err)
	}
	if err := unix.Prlimit(p.Cmd.Process.Pid, unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: min(limit, old.Max), Max: old.Max}, nil); err != nil {
		t.Fatalf("prlimit --fsize: %v", err)
	}
}

// exportBefore exports five requests of 20 spans (before0 to before4) to
// n with the SDK's OTLP/HTTP exporter, kept in l, and returns the exporter.
func exportBefore(t testing.TB, n *Node, l *Ledger) SpanExporter {
	t.Helper()
	exp := httpExporter(t, n.HTTP)
	for i := range 5 {
		if err := l.export(exp, fmt.Sprintf("before%d", i), 20); err != nil {
			t.Fatal(err)
		}
	}
	return exp
}

// capJSONL limits p's file size to traces.jsonl's size now plus 4 KiB, so
// the JSONL files can grow little more, and returns the limit.
func capJSONL(t testing.TB, n *Node, p *proctest.Process) uint64 {
	t.Helper()
	fi, err := os.Stat(filepath.Join(n.Otel, "traces.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	limit := uint64(fi.Size() + 4096)
	limitFileSize(t, p, limit)
	return limit
}

// healthBody is the health endpoint's status and body.
func healthBody(addr string) (int, string) {
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The JSONL files cannot grow (the file size limit, so writes fail with
// EFBIG as with a full disk) while spans come over OTLP/HTTP and OTLP/gRPC
// and a target is scraped: health answers 503 with the reason, every
// request is answered "retry later" (503 with Retry-After, UNAVAILABLE),
// memory stays bounded; once the files can grow, writing resumes by itself
// and health answers 200. What was answered 200 is in the JSONL, whole
// lines only, and at the backend; exit 0.
func TestDiskFull(t *testing.T) {
	be := NewBackend(t)
	tg := NewTarget(t, 200)
	n := configure(t, Setup{Backend: be.URL(), Exporter: fastRetry, Targets: []string{tg.Addr()}})
	p := n.start(t)
	l := newLedger()
	exp := exportBefore(t, n, l)
	before := l.Answered()
	waitFor(t, "the first spans in the JSONL", func() bool { it, err := readJSONL(n.Otel); return err == nil && it.Missing(before) == 0 })

	// traces.jsonl may grow a little more, then no more (the limit is on
	// every file: metrics.jsonl, larger, cannot grow at all, so the
	// scrapes wait from now).
	limit := capJSONL(t, n, p)
	cc, err := grpc.NewClient(n.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	for i := 0; ; i++ {
		// Spans are taken until a write of traces.jsonl fails: then
		// they are refused at once.
		code, _ := l.post(n.HTTP, fmt.Sprintf("filling%d", i), 20)
		if code == 503 {
			break
		}
		if code != 200 {
			t.Fatalf("while the file fills: answered %d", code)
		}
		if i > 100_000 {
			t.Fatalf("spans still taken with traces.jsonl unable to grow past %d bytes:\n%s", limit, p.Out.String())
		}
	}
	code, reason := healthBody(n.Health)
	if code != 503 || !strings.Contains(reason, "file too large") || !strings.Contains(reason, filepath.Join(n.Otel, "traces.jsonl")) {
		t.Errorf("health: %d %s; want 503 saying which file and why", code, reason)
	}
	answeredBefore := l.Answered().Total()
	// While it cannot write: every request is answered retry-later, and
	// memory does not grow with them.
	refusedHTTP, refusedGRPC := 0, 0
	var rssMax int64
	for i := range size(200, 5000) {
		code, retryAfter := l.post(n.HTTP, fmt.Sprintf("full%d", i), 20)
		if code == 503 && retryAfter != "" {
			refusedHTTP++
		} else {
			t.Errorf("OTLP/HTTP while the file cannot be written: %d (Retry-After %q), want 503 with Retry-After", code, retryAfter)
		}
		err := l.invoke(cc, fmt.Sprintf("fullgrpc%d", i), 20)
		if status.Code(err) == codes.Unavailable {
			refusedGRPC++
		} else {
			t.Errorf("OTLP/gRPC while the file cannot be written: %v, want UNAVAILABLE", err)
		}
		if rss, err := p.RSS(); err == nil {
			rssMax = max(rssMax, rss)
		}
	}
	if rssMax >= rssBound {
		t.Errorf("RSS reached %d MiB while the file could not be written", rssMax>>20)
	}

	// Room again: writing resumes by itself.
	limitFileSize(t, p, unix.RLIM_INFINITY)
	waitFor(t, "health 200 once the files can grow", func() bool { return proctest.Health(n.Health) == 200 })
	for i := range 5 {
		if err := l.export(exp, fmt.Sprintf("after%d", i), 20); err != nil {
			t.Errorf("after the file can grow again: %v", err)
		}
	}
	scrapesAtRecovery, _ := tg.Scrapes()
	waitFor(t, "a scrape after the files can grow", func() bool { s, _ := tg.Scrapes(); return s > scrapesAtRecovery })
	answered := l.Answered()
	waitFor(t, "everything answered 200 at the backend", func() bool { return be.Got().Missing(answered) == 0 })
	e := p.Stop(t)
	figure := checkExit(t, p, e)
	in := n.jsonl(t) // every line whole and decoded
	if in.Points["fault_target_value"] == 0 {
		t.Error("no scraped point in metrics.jsonl")
	}
	lost := in.Missing(answered) + be.Got().Missing(answered)
	n.checkNoToken(t, p)
	report(t, fmt.Sprintf("files limited to %d KiB: %d spans answered 200 before the first 503; then %d HTTP 503 + %d gRPC UNAVAILABLE, RSS ≤ %d MiB; after: %d spans answered 200 in all, all in the JSONL and at the backend; %s",
		limit>>10, answeredBefore, refusedHTTP, refusedGRPC, rssMax>>20, answered.Total(), figure), lost)
}
