package faults

import (
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// listenerStatus is a listener's connections in the status document.
type listenerStatus struct {
	Transport  string
	Open, Max  int
	PerPeer    int    `json:"max_per_peer"`
	IdleClosed uint64 `json:"idle_closed"`
	Refused    uint64
}

// listeners reads the OTLP receiver's listeners from the status document.
func listeners(t testing.TB, health string) map[string]listenerStatus {
	t.Helper()
	var doc struct {
		Components map[string]struct {
			Components map[string]struct {
				Details struct{ Connections []listenerStatus }
			}
		}
	}
	statusDoc(t, health, &doc)
	out := map[string]listenerStatus{}
	for _, l := range doc.Components["pipeline:traces"].Components["receiver:otlp"].Details.Connections {
		out[l.Transport] = l
	}
	return out
}

// An idle flood (issue 41: 12,600 idle connections kept senders out):
// connections that never send a byte, to both OTLP listeners, half from
// the senders' own address, half from another; the idle timeouts are the
// defaults (minutes). While every one of them is still open on the
// flooder's side, the SDK's exporters over OTLP/HTTP and OTLP/gRPC get
// every request through, and health answers; the stop does not wait for
// the flood's connections.
func TestIdleConnectionFlood(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("dials from 127.0.0.2, which only Linux routes to the loopback interface as it is")
	}
	perListener := size(2000, 6300)
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < uint64(2*perListener+512) {
		t.Skipf("needs %d file descriptors for the flood's connections (ulimit -n is %d)", 2*perListener+512, lim.Cur)
	}
	n := configure(t, Setup{})
	p := n.start(t)
	peers := []string{"127.0.0.1", "127.0.0.2"}
	for _, addr := range []string{n.HTTP, n.GRPC} {
		for i := range perListener {
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(peers[i%2])}}
			c, err := d.Dial("tcp", addr)
			if err != nil {
				t.Fatalf("flood connection %d to %s: %v", i, addr, err)
			}
			defer c.Close()
		}
	}
	// Every flood connection taken in: open, or closed to make room.
	var ls map[string]listenerStatus
	waitFor(t, "the flood accepted", func() bool {
		ls = listeners(t, n.Health)
		for _, tr := range []string{"http", "grpc"} {
			if l := ls[tr]; uint64(l.Open)+l.IdleClosed < uint64(perListener) {
				return false
			}
		}
		return true
	})
	l := newLedger()
	httpExp, grpcExp := httpExporter(t, n.HTTP), grpcExporter(t, n.GRPC)
	requests := size(10, 100)
	for i := range requests {
		if err := l.export(httpExp, fmt.Sprintf("flood-http%d", i), 10); err != nil {
			t.Errorf("OTLP/HTTP export during the flood: %v", err)
		}
		if err := l.export(grpcExp, fmt.Sprintf("flood-grpc%d", i), 10); err != nil {
			t.Errorf("OTLP/gRPC export during the flood: %v", err)
		}
	}
	if code, body := healthBody(n.Health); code != http.StatusOK {
		t.Errorf("health during the flood: %d %s", code, body)
	}
	ls = listeners(t, n.Health)
	for tr, ln := range ls {
		if ln.Open > ln.Max || ln.PerPeer == 0 {
			t.Errorf("%s listener: %+v", tr, ln)
		}
	}
	e := p.Stop(t)
	figure := checkExit(t, p, e)
	answered := l.Answered()
	lost := n.jsonl(t).Missing(answered)
	log := p.Out.String()
	firsts := strings.Count(log, "OTLP listener: idle connections closed to make room for new ones")
	if firsts < 1 || firsts > 2 { // one per reason: the listener full, a peer's share
		t.Errorf("%d first lines of the closings, want 1 or 2:\n%s", firsts, log)
	}
	// The flood's connections, which never sent a byte, were closed when
	// the stop began: the drain did not wait for them to time out.
	if strings.Contains(log, "cut short") {
		t.Errorf("the stop waited out the receivers' drain for the flood's connections:\n%s", log)
	}
	n.checkNoToken(t, p)
	report(t, fmt.Sprintf("%d idle connections (%d a listener, from the senders' address and another), bound %d a listener, %d a peer; %d + %d closed to make room; %d HTTP and %d gRPC SDK requests answered 200 during it (%d spans); health 200; %d log lines of it; %s",
		2*perListener, perListener, ls["http"].Max, ls["http"].PerPeer, ls["http"].IdleClosed, ls["grpc"].IdleClosed, requests, requests, answered.Total(),
		firsts+strings.Count(log, "OTLP listener: idle connections still closed"), figure), lost)
}
