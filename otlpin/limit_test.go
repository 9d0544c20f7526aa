package otlpin

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
)

// patience bounds waits for what takes milliseconds on an idle machine;
// they end as soon as their condition holds.
const patience = time.Minute

// waitUntil waits for cond, failing the test after patience.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// A flood of idle connections to the OTLP/HTTP listener: at most
// MaxConnections are accepted at once (the rest wait in the backlog), and
// each is closed after the header timeout, so every one of them ends.
func TestHTTPConnectionsBoundedAndIdleClosed(t *testing.T) {
	r := start(t, Options{Traces: &rec{}, MaxConnections: 20, HTTPReadHeaderTimeout: 50 * time.Millisecond, HTTPIdleTimeout: 50 * time.Millisecond})
	lim := r.httpLn.(*Limited)
	const flood = 200
	conns := make([]net.Conn, flood)
	for i := range conns {
		c, err := net.Dial("tcp", r.HTTPAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
	}
	maxSeen := 0
	var mu sync.Mutex
	stop := make(chan struct{})
	go func() { // what the listener holds open, while the flood drains
		for {
			select {
			case <-stop:
				return
			default:
			}
			mu.Lock()
			maxSeen = max(maxSeen, lim.Open())
			mu.Unlock()
			time.Sleep(time.Millisecond)
		}
	}()
	// Every connection is closed by the server: a read returns EOF (or a
	// reset), not a timeout.
	var wg sync.WaitGroup
	closed := make([]bool, flood)
	for i, c := range conns {
		wg.Go(func() {
			_ = c.SetReadDeadline(time.Now().Add(patience))
			_, err := io.ReadAll(c)
			var ne net.Error
			closed[i] = !(errors.As(err, &ne) && ne.Timeout())
		})
	}
	wg.Wait()
	close(stop)
	n := 0
	for _, ok := range closed {
		if ok {
			n++
		}
	}
	if n != flood {
		t.Errorf("%d of %d idle connections closed by the server", n, flood)
	}
	mu.Lock()
	defer mu.Unlock()
	if maxSeen > 20 || maxSeen == 0 {
		t.Errorf("at most %d connections open at once, want 1 to 20", maxSeen)
	}
	waitUntil(t, "no connection left open", func() bool { return lim.Open() == 0 })
}

// Idle gRPC connections are told to go away after MaxConnectionIdle, at
// most MaxConnections of them open at once; a client that calls again
// reconnects.
func TestGRPCIdleConnectionsClosed(t *testing.T) {
	c := &rec{}
	r := start(t, Options{Traces: c, MaxConnections: 10, GRPCKeepalive: keepalive.ServerParameters{MaxConnectionIdle: 50 * time.Millisecond}})
	lim := r.grpcLn.(*Limited)
	const clients = 40
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	var wg sync.WaitGroup
	wentIdle := make([]bool, clients)
	for i := range clients {
		cc, err := grpc.NewClient(r.GRPCAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		cc.Connect()
		wg.Go(func() {
			// READY once accepted, then IDLE once the server sent GOAWAY.
			for s := cc.GetState(); s != connectivity.Ready; s = cc.GetState() {
				if s == connectivity.Idle {
					cc.Connect()
				}
				if !cc.WaitForStateChange(ctx, s) {
					return
				}
			}
			if cc.WaitForStateChange(ctx, connectivity.Ready) {
				wentIdle[i] = cc.GetState() != connectivity.Ready
			}
		})
	}
	wg.Wait()
	n := 0
	for _, ok := range wentIdle {
		if ok {
			n++
		}
	}
	if n != clients {
		t.Errorf("%d of %d idle gRPC connections closed", n, clients)
	}
	if lim.Open() > 10 {
		t.Errorf("%d connections open, bound 10", lim.Open())
	}
	waitUntil(t, "no gRPC connection left open", func() bool { return lim.Open() == 0 })
}

// LimitListener: Accept waits for a slot, a closed connection frees one
// (once, however often it is closed), Close ends a waiting Accept.
func TestLimitListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := LimitListener(ln, 2)
	for range 3 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	a, _ := l.Accept()
	b, _ := l.Accept()
	if l.Open() != 2 {
		t.Fatalf("open %d", l.Open())
	}
	third := make(chan net.Conn)
	go func() { c, _ := l.Accept(); third <- c }()
	select {
	case <-third:
		t.Fatal("a third connection accepted past the bound")
	default:
	}
	a.Close()
	a.Close()
	c := <-third
	if l.Open() != 2 {
		t.Fatalf("open %d after one closed twice and one accepted", l.Open())
	}
	b.Close()
	c.Close()
	if l.Open() != 0 {
		t.Fatalf("open %d", l.Open())
	}
	ended := make(chan error)
	l2 := LimitListener(ln, 0)
	go func() { _, err := l2.Accept(); ended <- err }()
	l2.Close()
	if err := <-ended; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close: %v", err)
	}
}
