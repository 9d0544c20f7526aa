package otlpin

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
)

// dialerFrom dials from loopback address ip (all of 127/8 is the loopback
// interface's on Linux), so one machine plays several peers.
func dialerFrom(t *testing.T, ip string) *net.Dialer {
	if runtime.GOOS != "linux" {
		t.Skip("dials from 127.0.0.x, which only Linux routes to the loopback interface as it is")
	}
	return &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
}

// export sends one span with the OTel SDK's exporter over transport tr,
// dialing with d, and returns its error.
func export(t *testing.T, r *Receiver, grpcTransport bool, d *net.Dialer) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	var exp sdktrace.SpanExporter
	var err error
	if grpcTransport {
		exp, err = otlptracegrpc.New(ctx, otlptracegrpc.WithInsecure(), otlptracegrpc.WithEndpoint(r.GRPCAddr().String()),
			otlptracegrpc.WithDialOption(grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
				return d.DialContext(ctx, "tcp", addr)
			})))
	} else {
		exp, err = otlptracehttp.New(ctx, otlptracehttp.WithInsecure(), otlptracehttp.WithEndpoint(r.HTTPAddr().String()),
			otlptracehttp.WithHTTPClient(&http.Client{Transport: &http.Transport{DialContext: d.DialContext}}))
	}
	if err != nil {
		t.Fatal(err)
	}
	defer exp.Shutdown(context.Background())
	spans := tracetest.SpanStubs{{Name: "through the flood"}}.Snapshots()
	return exp.ExportSpans(ctx, spans)
}

// An idle flood (connections that never send a request, or gRPC
// connections with no stream) from one peer, the sender's own address, or
// many peers, holds every slot it can; the idle deadlines are an hour, so
// only shedding makes room. Then a sender's export, with the real SDK
// exporter, succeeds over either transport, and the closing is logged
// once.
func TestIdleFloodLeavesRoomForSenders(t *testing.T) {
	const max, flood = 20, 200
	for _, tc := range []struct {
		name   string
		peers  []string // the flood's
		sender string
	}{
		{"one peer", []string{"127.0.0.2"}, "127.0.0.1"},
		{"the sender's peer", []string{"127.0.0.3"}, "127.0.0.3"},
		{"many peers", func() (ps []string) {
			for i := range 20 {
				ps = append(ps, fmt.Sprintf("127.0.0.%d", 10+i))
			}
			return ps
		}(), "127.0.0.1"},
	} {
		for _, grpcTransport := range []bool{false, true} {
			name := tc.name + "/http"
			if grpcTransport {
				name = tc.name + "/grpc"
			}
			t.Run(name, func(t *testing.T) {
				c, logs := &rec{}, &logRec{}
				r := start(t, Options{Traces: c, Logger: slog.New(logs), MaxConnections: max,
					HTTPReadHeaderTimeout: time.Hour, HTTPIdleTimeout: time.Hour, GRPCKeepalive: keepalive.ServerParameters{MaxConnectionIdle: time.Hour}})
				lim := r.httpLn.(*Limited)
				if grpcTransport {
					lim = r.grpcLn.(*Limited)
				}
				for i := range flood {
					d := dialerFrom(t, tc.peers[i%len(tc.peers)])
					if grpcTransport {
						cc, err := grpc.NewClient("passthrough:///"+r.GRPCAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
							grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }))
						if err != nil {
							t.Fatal(err)
						}
						defer cc.Close()
						cc.Connect()
						continue
					}
					conn, err := d.Dial("tcp", r.HTTPAddr().String())
					if err != nil {
						t.Fatal(err)
					}
					defer conn.Close()
				}
				// Every flood connection was taken in, and each past the
				// bounds made room for itself.
				waitUntil(t, "the flood accepted", func() bool { return lim.evictions.Load()+uint64(lim.Open()) >= flood })
				if lim.Open() > max {
					t.Fatalf("%d connections open, bound %d", lim.Open(), max)
				}
				if err := export(t, r, grpcTransport, dialerFrom(t, tc.sender)); err != nil {
					t.Fatalf("export through the flood: %v", err)
				}
				c.mu.Lock()
				got := len(c.bs)
				c.mu.Unlock()
				if got != 1 {
					t.Fatalf("%d batches received, want 1", got)
				}
				if n := len(logs.lines(slog.LevelWarn, msgFirstEviction)); n < 1 || n > 2 { // a line per reason at most
					t.Errorf("%d lines of the first closing, want 1 or 2", n)
				}
				st := r.Status()
				for _, l := range st.Connections {
					if l.Open > l.Max || l.PerPeer != max/2 {
						t.Errorf("listener status %+v", l)
					}
				}
			})
		}
	}
}

// A peer whose connections are all busy has its next connection closed at
// once (its share is held by requests in flight), counted as a refusal;
// another peer's still gets in.
func TestPeerShareAllBusy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := LimitListener(ln, 4)
	defer l.Close()
	var refused []string
	l.shed(2, func(a net.Addr, _ int) { refused = append(refused, peerOf(a)) }, func(net.Addr, Reason) {})
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.(*limitedConn).busy.Store(1) // a request in flight on each
			accepted <- c
		}
	}()
	dial := func(ip string) net.Conn {
		c, err := dialerFrom(t, ip).Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	dial("127.0.0.2")
	dial("127.0.0.2")
	<-accepted
	<-accepted
	third := dial("127.0.0.2")
	_ = third.SetReadDeadline(time.Now().Add(patience))
	if _, err := third.Read(make([]byte, 1)); err == nil {
		t.Fatal("the peer's third connection was kept")
	}
	dial("127.0.0.4")
	<-accepted
	if len(refused) != 1 || refused[0] != "127.0.0.2" || l.refusals.Load() != 1 || l.Open() != 3 {
		t.Fatalf("refused %v (%d), open %d", refused, l.refusals.Load(), l.Open())
	}
}
