package faults

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/otelstep/otelstep/internal/proctest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// targetSeries is the stop cases' target's page size.
const targetSeries = 100

// stopCase is a running otelstep for a stop case: a target scraped at
// start and at the stop only (its interval is an hour), and spans sent
// through the SDK's OTLP/HTTP exporter, answered 200.
type stopCase struct {
	n  *Node
	p  *proctest.Process
	tg *Target
	be *Backend
	l  *Ledger
}

func startStopCase(t *testing.T, be *Backend) *stopCase {
	t.Helper()
	return startStopCaseScraping(t, be, 10*time.Second)
}

// startStopCaseScraping is startStopCase with the target's scrape timeout.
func startStopCaseScraping(t *testing.T, be *Backend, scrapeTimeout time.Duration) *stopCase {
	t.Helper()
	c := &stopCase{tg: NewTarget(t, targetSeries), be: be, l: newLedger()}
	s := Setup{Targets: []string{c.tg.Addr()}, ScrapeInterval: time.Hour, ScrapeTimeout: scrapeTimeout}
	if be != nil {
		s.Backend, s.Exporter = be.URL(), fastRetry
	}
	c.n = configure(t, s)
	c.p = c.n.start(t)
	waitFor(t, "the first scrape", func() bool { s, _ := c.tg.Scrapes(); return s >= 1 })
	exp := httpExporter(t, c.n.HTTP)
	for i := range size(10, 200) {
		if err := c.l.export(exp, fmt.Sprintf("stop%d", i), 10); err != nil {
			t.Fatalf("export: %v", err)
		}
	}
	return c
}

var unsentRE = regexp.MustCompile(`msg="otelstep stopped".* backend_left_unsent_at_stop_items=(\d+)`)

// stop stops the process and checks what a stop promises: exit 0 well
// within the job script's 30 s, the final scrape taken and in the JSONL
// (every scrape the target answered is there, whole), every span answered
// 200 in the JSONL. It returns the figures, the items the backend did not
// get as the last log line counts them, and the spans lost.
func (c *stopCase) stop(t *testing.T) (figure string, unsent, lost int) {
	t.Helper()
	return c.stopChecking(t, true)
}

// stopChecking is stop; finalScrape says whether the target can answer
// the final scrape.
func (c *stopCase) stopChecking(t *testing.T, finalScrape bool) (figure string, unsent, lost int) {
	t.Helper()
	before, _ := c.tg.Scrapes()
	e := c.p.Terminate(t)
	figure = checkExit(t, c.p, e)
	after, _ := c.tg.Scrapes()
	if finalScrape && after <= before {
		t.Errorf("no final scrape: the target answered %d scrapes before SIGTERM and %d in all", before, after)
	}
	in := c.n.jsonl(t)
	if got, want := in.Points["fault_target_value"], targetSeries*after; got != want {
		t.Errorf("metrics.jsonl holds %d of the target's points, want %d (%d scrapes answered)", got, want, after)
	}
	// One up point per scrape answered: a scrape the stop cut short
	// records nothing, no up = 0.
	if got := in.Points["up"]; got != after {
		t.Errorf("metrics.jsonl holds %d up points, want %d (%d scrapes answered)", got, after, after)
	}
	lost = in.Missing(c.l.Answered())
	if m := unsentRE.FindStringSubmatch(c.p.Out.String()); m != nil {
		unsent, _ = strconv.Atoi(m[1])
	} else if c.be != nil {
		t.Errorf("the last log line does not count what the backend did not get:\n%s", c.p.Out.String())
	}
	c.n.checkNoToken(t, c.p)
	return figure, unsent, lost
}

// An idle gRPC stream (an Export call whose request never comes) at
// SIGTERM: the receivers' drain is bounded, the final scrape and the
// flushes happen, exit 0.
func TestStopIdleGRPCStream(t *testing.T) {
	c := startStopCase(t, nil)
	cc, err := grpc.NewClient(c.n.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	streams := size(1, 100)
	for range streams {
		if _, err := cc.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, "/opentelemetry.proto.collector.trace.v1.TraceService/Export"); err != nil {
			t.Fatal(err)
		}
	}
	// The streams are open at otelstep once a request after them on the
	// same connection is answered.
	if err := c.l.export(grpcExporterOn(t, cc), "after-streams", 1); err != nil {
		t.Fatal(err)
	}
	figure, _, lost := c.stop(t)
	report(t, fmt.Sprintf("%d idle gRPC streams at SIGTERM; final scrape in the JSONL; %s", streams, figure), lost)
}

// A request body trickling at a byte a second at SIGTERM: the receivers'
// drain is bounded, the final scrape and the flushes happen, exit 0.
func TestStopTricklingHTTPBody(t *testing.T) {
	c := startStopCase(t, nil)
	conns := size(1, 50)
	body := spansRequest(spanNames("trickled", 5))
	for range conns {
		conn, err := net.Dial("tcp", c.n.HTTP)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		// Expect: 100-continue: otelstep answers "100 Continue" when its
		// handler begins reading the body, so the request is in flight
		// before the stop.
		if _, err := fmt.Fprintf(conn, "POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", len(body)); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write(body[:1]); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(patience))
		line, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil || !strings.Contains(line, "100 Continue") {
			t.Fatalf("no 100 Continue: %q, %v", line, err)
		}
		body := body[1:]
		go func() {
			for _, b := range body {
				if _, err := conn.Write([]byte{b}); err != nil {
					return // closed by otelstep's stop
				}
				time.Sleep(time.Second) // the trickle itself, not a synchronisation
			}
		}()
	}
	figure, _, lost := c.stop(t)
	report(t, fmt.Sprintf("%d bodies trickling at 1 byte/s at SIGTERM; final scrape in the JSONL; %s", conns, figure), lost)
}

// The backend is down, hung or slow at SIGTERM with spans queued for it:
// the JSONL is flushed, the backend gets its bounded time, what it did not
// get is counted in the last log line, exit 0 well within 30 s. Nothing is
// lost: what is neither at the backend nor in the count is an error.
func TestStopBackend(t *testing.T) {
	for _, mode := range []Mode{Down, Hung, Slow} {
		t.Run(mode.String(), func(t *testing.T) {
			be := NewBackend(t)
			c := startStopCase(t, be)
			switch mode {
			case Slow:
				// Each request takes 2 s: the queue outlasts the
				// backend's time.
				be.SetSlow(2 * time.Second)
			default:
				be.Set(mode)
			}
			// More spans, queued for the backend as it now is.
			exp := httpExporter(t, c.n.HTTP)
			for i := range size(20, 500) {
				if err := c.l.export(exp, fmt.Sprintf("%s%d", mode, i), 10); err != nil {
					t.Fatalf("export: %v", err)
				}
			}
			if mode == Hung {
				waitFor(t, "a request held by the hung backend", func() bool { return be.Requests(Hung) > 0 })
			}
			figure, unsent, lost := c.stop(t)
			answered := c.l.Answered()
			atBackend := answered.Total() - be.Got().Missing(answered)
			if atBackend+unsent < answered.Total() {
				t.Errorf("%d spans answered 200: %d at the backend, %d counted unsent: %d unaccounted for",
					answered.Total(), atBackend, unsent, answered.Total()-atBackend-unsent)
			}
			if mode != Slow && unsent == 0 {
				t.Errorf("backend %s: nothing counted unsent", mode)
			}
			report(t, fmt.Sprintf("backend %s at SIGTERM: %d spans answered 200, %d at the backend, %d counted unsent (in the JSONL); %s",
				mode, answered.Total(), atBackend, unsent, figure), lost)
		})
	}
}

// A target that holds the final scrape, with a scrape timeout (a minute)
// longer than the stop allows: the scrape is cut when the scrapes' share of
// the stop ends, records nothing (no up = 0: the stop is no failed scrape),
// and the flushes and the exit follow within 30 s, exit 0.
func TestStopHungTarget(t *testing.T) {
	c := startStopCaseScraping(t, nil, time.Minute)
	c.tg.SetHung(true)
	figure, _, lost := c.stopChecking(t, false)
	if _, begun := c.tg.Scrapes(); begun < 2 {
		t.Errorf("the final scrape was not begun (%d scrapes begun)", begun)
	}
	report(t, fmt.Sprintf("the target holds the final scrape, scrape_timeout 1m; %s", figure), lost)
}

// A target holding its scrape in flight (scrape_timeout 1m) beside a
// healthy one at SIGTERM: the healthy target's final scrape is taken and
// in the JSONL, side by side with the hung one's wait; the hung one is cut
// alone at the scrapes' share of the stop (finalScrapes), recording
// nothing (no up = 0); exit 0.
func TestStopHungTargetBesideHealthy(t *testing.T) {
	hung, healthy := NewTarget(t, targetSeries), NewTarget(t, targetSeries)
	hung.SetHung(true)
	n := configure(t, Setup{Targets: []string{hung.Addr(), healthy.Addr()}, ScrapeInterval: time.Hour, ScrapeTimeout: time.Minute})
	p := n.start(t)
	waitFor(t, "the healthy target's first scrape, the hung one's held", func() bool {
		a, _ := healthy.Scrapes()
		_, b := hung.Scrapes()
		return a >= 1 && b >= 1
	})
	l := newLedger()
	exp := httpExporter(t, n.HTTP)
	for i := range size(10, 200) {
		if err := l.export(exp, fmt.Sprintf("stop%d", i), 10); err != nil {
			t.Fatalf("export: %v", err)
		}
	}
	before, _ := healthy.Scrapes()
	e := p.Terminate(t)
	figure := checkExit(t, p, e)
	after, _ := healthy.Scrapes()
	if after <= before {
		t.Errorf("no final scrape of the healthy target: %d scrapes answered before SIGTERM, %d in all", before, after)
	}
	if a, _ := hung.Scrapes(); a != 0 {
		t.Errorf("the hung target answered %d scrapes", a)
	}
	in := n.jsonl(t)
	if got, want := in.Points["fault_target_value"], targetSeries*after; got != want {
		t.Errorf("metrics.jsonl holds %d of the targets' points, want %d (%d scrapes of the healthy target)", got, want, after)
	}
	up, err := upByInstance(n.Otel, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(up[hung.Addr()]) != 0 || !all(up[healthy.Addr()], 1, after) {
		t.Errorf("up in the JSONL: hung %v (want none: a stop is no failed scrape), healthy %v", up[hung.Addr()], up[healthy.Addr()])
	}
	if out := p.Out.String(); !strings.Contains(out, "cut short by the stop") || strings.Contains(out, "scrape failed") {
		t.Errorf("the log does not say the hung scrape was cut by the stop, or says a scrape failed:\n%s", out)
	}
	n.checkNoToken(t, p)
	report(t, fmt.Sprintf("one target holding its scrape (scrape_timeout 1m) beside a healthy one: the healthy one's final scrape kept (%d scrapes, all up = 1), the hung one cut alone, no up = 0; %s", after, figure), in.Missing(l.Answered()))
}
