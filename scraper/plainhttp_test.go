package scraper

import (
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Scrapes of a plain-HTTP target reuse one connection whatever framing the
// pages come in (a length, chunked, gzip), send the headers net/http sent,
// and read every page whole.
func TestPlainKeepAlive(t *testing.T) {
	var conns atomic.Int64
	var mu sync.Mutex
	var hdr []http.Header
	var hosts []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		i := len(hdr)
		hdr, hosts = append(hdr, r.Header.Clone()), append(hosts, r.Host)
		mu.Unlock()
		page := "# TYPE g gauge\ng " + strconv.Itoa(i) + "\n"
		w.Header().Set("Content-Type", ctText)
		switch i % 3 {
		case 0: // a length
			w.Header().Set("Content-Length", strconv.Itoa(len(page)))
			_, _ = w.Write([]byte(page))
		case 1: // chunked: no length, flushed in pieces, more than net/http buffers
			f := w.(http.Flusher)
			_, _ = w.Write([]byte(page))
			for range 50 {
				_, _ = w.Write([]byte(strings.Repeat("# filler filler filler\n", 20)))
				f.Flush()
			}
		case 2:
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			_, _ = zw.Write([]byte(page))
			_ = zw.Close()
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	m, col := oneTarget(t, srv, func(tg *Target) { tg.Interval, tg.Timeout = 5*time.Second, 3*time.Second })
	for i := range 9 {
		col.b = nil
		m.ScrapeAll(context.Background())
		if len(col.b) != 1 {
			t.Fatalf("scrape %d: %d batches", i, len(col.b))
		}
		g := findPoints(col.b[0].Metrics[0], "g")
		if upOf(t, col.b[0]) != 1 || g == nil || g.GetGauge().DataPoints[0].GetAsDouble() != float64(i) {
			t.Fatalf("scrape %d: up %v, g %v", i, upOf(t, col.b[0]), g)
		}
	}
	m.Close()
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for 9 scrapes, want 1", n)
	}
	h := hdr[0]
	if h.Get("Accept") != acceptHeader || h.Get("Accept-Encoding") != "gzip" || h.Get("User-Agent") != "otelstep" ||
		h.Get("X-Prometheus-Scrape-Timeout-Seconds") != "3" || hosts[0] != strings.TrimPrefix(srv.URL, "http://") {
		t.Errorf("request headers %v, host %q", h, hosts[0])
	}
}

// rawServer answers every request it reads on 127.0.0.1 with respond(i)
// (i counts requests from 0), and closes the connection after it when
// respond says so. conns counts the connections accepted.
type rawServer struct {
	ln    net.Listener
	conns atomic.Int64
	reqs  atomic.Int64
}

func newRawServer(t *testing.T, respond func(i int) (resp string, close bool)) *rawServer {
	return newRawConnServer(t, func(i, _ int) (string, bool) { return respond(i) })
}

// newRawConnServer is newRawServer with respond told also the request's
// index on its connection.
func newRawConnServer(t *testing.T, respond func(i, onConn int) (resp string, close bool)) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for onConn := 0; ; onConn++ {
					// a request: lines up to the empty one
					for {
						line, err := br.ReadString('\n')
						if err != nil {
							return
						}
						if line == "\r\n" {
							break
						}
					}
					resp, closeIt := respond(int(s.reqs.Add(1)-1), onConn)
					if _, err := c.Write([]byte(resp)); err != nil || closeIt {
						return
					}
				}
			}()
		}
	}()
	return s
}

// scrapeRaw is a Manager of one target at s, and a scrape function that
// returns the batch's up and g and the scrape's log.
func scrapeRaw(t *testing.T, s *rawServer, timeout time.Duration) (*Manager, func() (up, g float64, log string)) {
	t.Helper()
	tg := fixtureTarget("j")
	tg.Address, tg.Timeout = s.ln.Addr().String(), timeout
	var lb logBuf
	col := &collect{ch: make(chan struct{}, 1)}
	m, err := New(Options{Targets: []Target{tg}, Next: col, Logger: slog.New(slog.NewTextHandler(&lb, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m, func() (float64, float64, string) {
		col.b = nil
		lb.mu.Lock()
		lb.b.Reset()
		lb.mu.Unlock()
		m.ScrapeAll(context.Background())
		if len(col.b) != 1 {
			t.Fatalf("%d batches", len(col.b))
		}
		g := -1.0
		if m := findPoints(col.b[0].Metrics[0], "g"); m != nil {
			g = m.GetGauge().DataPoints[0].GetAsDouble()
		}
		return upOf(t, col.b[0]), g, lb.String()
	}
}

func okResp(v int, extra string) string {
	page := "# TYPE g gauge\ng " + strconv.Itoa(v) + "\n"
	return "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n" + extra + "Content-Length: " + strconv.Itoa(len(page)) + "\r\n\r\n" + page
}

// A kept connection that the server closed while it was idle costs the
// next scrape nothing: it is retried once on a new connection. A server
// that says it closes, or speaks HTTP/1.0, gets a new connection each time.
func TestPlainReconnects(t *testing.T) {
	for _, tc := range []struct {
		name    string
		respond func(i int) (string, bool)
	}{
		{"closed while idle", func(i int) (string, bool) { return okResp(i, ""), true }},
		{"Connection: close", func(i int) (string, bool) { return okResp(i, "Connection: close\r\n"), true }},
		{"HTTP/1.0 until EOF", func(i int) (string, bool) {
			return "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n# TYPE g gauge\ng " + strconv.Itoa(i) + "\n", true
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newRawServer(t, tc.respond)
			_, scrape := scrapeRaw(t, s, 2*time.Second)
			for i := range 4 {
				if i > 0 {
					time.Sleep(20 * time.Millisecond) // the close reaches the client
				}
				up, g, log := scrape()
				if up != 1 || g != float64(i) {
					t.Fatalf("scrape %d: up %v g %v log %s", i, up, g, log)
				}
			}
			if n := s.conns.Load(); n != 4 {
				t.Errorf("%d connections for 4 scrapes, want 4", n)
			}
		})
	}
}

// A response that says the connection closes (or an HTTP/1.0 one that does
// not say keep-alive) is the connection's last, even when the server leaves
// it open: the next scrape does not send its request there.
func TestPlainConnectionClose(t *testing.T) {
	for _, extra := range []string{"Connection: close\r\n", "Connection: Keep-Alive, close\r\n", "Connection: close\r\nConnection: keep-alive\r\n"} {
		s := newRawConnServer(t, func(i, onConn int) (string, bool) {
			if onConn > 0 {
				return "HTTP/1.1 500 Reused After Close\r\nContent-Length: 0\r\n\r\n", false
			}
			return okResp(i, extra), false
		})
		_, scrape := scrapeRaw(t, s, time.Second)
		for i := range 3 {
			if up, g, log := scrape(); up != 1 || g != float64(i) {
				t.Fatalf("%q, scrape %d: up %v g %v log %s", extra, i, up, g, log)
			}
		}
	}
	s := newRawConnServer(t, func(i, onConn int) (string, bool) {
		if onConn > 0 {
			return "HTTP/1.1 500 Reused After Close\r\nContent-Length: 0\r\n\r\n", false
		}
		return strings.Replace(okResp(i, ""), "HTTP/1.1", "HTTP/1.0", 1), false
	})
	_, scrape := scrapeRaw(t, s, time.Second)
	for i := range 3 {
		if up, _, log := scrape(); up != 1 {
			t.Fatalf("HTTP/1.0, scrape %d: up %v log %s", i, up, log)
		}
	}
}

// Responses framed every way HTTP/1.1 allows read whole, those that break
// their framing fail their scrape with an error that says how, and the
// connection is kept only after a whole response.
func TestPlainFraming(t *testing.T) {
	chunked := func(i int) string {
		page := "# TYPE g gauge\ng " + strconv.Itoa(i) + "\n"
		return "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
			fmt.Sprintf("%x;ext=1\r\n%s\r\n", 5, page[:5]) + fmt.Sprintf("%x\r\n%s\r\n", len(page)-5, page[5:]) +
			"0\r\nX-Trailer: t\r\n\r\n"
	}
	for _, tc := range []struct {
		name      string
		resp      func(i int) string
		up        float64
		log       string // in the failed scrape's log
		keptConns int64  // connections for three scrapes
		closes    bool   // the server closes the connection after resp
	}{
		{"length", func(i int) string { return okResp(i, "") }, 1, "", 1, false},
		{"chunked with extensions and trailers", chunked, 1, "", 1, false},
		{"interim 100 and 103 first", func(i int) string {
			return "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n" + okResp(i, "")
		}, 1, "", 1, false},
		{"bare LF line ends", func(i int) string {
			return strings.ReplaceAll(okResp(i, "Connection: keep-alive\r\n"), "\r\n", "\n")
		}, 1, "", 1, false},
		{"body shorter than its length", func(i int) string {
			return "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n# TYPE g gauge\ng 1\n"
		}, 0, "unexpected EOF", 3, true},
		{"chunked cut short", func(i int) string {
			return "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n20\r\n# TYPE g"
		}, 0, "unexpected EOF", 3, true},
		{"body shorter than its length, connection kept", func(i int) string {
			return "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n# TYPE g gauge\ng 1\n"
		}, 0, "context deadline exceeded while reading the body", 3, false},
		{"404", func(i int) string {
			return "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found"
		}, 0, "server returned HTTP status 404 Not Found", 3, false},
		{"malformed status line", func(i int) string { return "HTTP/1.1 2x0 OK\r\n\r\n" }, 0, "malformed HTTP status code", 3, false},
		{"not HTTP", func(i int) string { return "SSH-2.0-OpenSSH\r\n\r\n" }, 0, "malformed HTTP", 3, false},
		{"bad Content-Length", func(i int) string {
			return "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\ng 1\n"
		}, 0, "bad Content-Length", 3, false},
		{"header over 1 MiB", func(i int) string {
			return "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("a", 1<<20) + "\r\nContent-Length: 0\r\n\r\n"
		}, 0, "response header longer than", 3, false},
		{"unknown transfer coding", func(i int) string {
			return "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
		}, 0, "unsupported Transfer-Encoding", 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newRawServer(t, func(i int) (string, bool) { return tc.resp(i), tc.closes })
			// Short, for the cases that wait for the deadline; the
			// 1 MiB header must arrive whole before it, which under
			// -race on a loaded machine took more than 300 ms.
			timeout := 300 * time.Millisecond
			if len(tc.resp(0)) > 1<<20 {
				timeout = 5 * time.Second
			}
			_, scrape := scrapeRaw(t, s, timeout)
			for i := range 3 {
				up, g, log := scrape()
				if up != tc.up {
					t.Fatalf("scrape %d: up %v, want %v; log %s", i, up, tc.up, log)
				}
				if tc.up == 1 && g != float64(i) {
					t.Errorf("scrape %d: g %v", i, g)
				}
				if tc.log != "" && !strings.Contains(log, tc.log) {
					t.Errorf("scrape %d: log does not say %q: %s", i, tc.log, log)
				}
			}
			if n := s.conns.Load(); n != tc.keptConns {
				t.Errorf("%d connections for 3 scrapes, want %d", n, tc.keptConns)
			}
		})
	}
}

// A redirect is followed, through net/http, as Prometheus follows it, and
// the target's next scrapes go there at once.
func TestPlainRedirect(t *testing.T) {
	var asked atomic.Int64 // requests for /metrics
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			asked.Add(1)
			http.Redirect(w, r, "/real", http.StatusFound)
			return
		}
		w.Header().Set("Content-Type", ctText)
		_, _ = w.Write([]byte("# TYPE g gauge\ng 7\n"))
	}))
	defer srv.Close()
	m, col := oneTarget(t, srv, nil)
	defer m.Close()
	for i := range 3 {
		col.b = nil
		m.ScrapeAll(context.Background())
		g := findPoints(col.b[0].Metrics[0], "g")
		if upOf(t, col.b[0]) != 1 || g == nil || g.GetGauge().DataPoints[0].GetAsDouble() != 7 {
			t.Errorf("scrape %d: redirect not followed: up %v g %v", i, upOf(t, col.b[0]), g)
		}
	}
	// the first scrape asks twice (its own connection, then net/http), the
	// later ones once
	if n := asked.Load(); n != 4 {
		t.Errorf("/metrics asked for %d times in 3 scrapes, want 4", n)
	}
}

// A target that accepts the connection and never answers is cut at the
// scrape timeout, and the error says so; the next scrape starts afresh.
func TestPlainTimeout(t *testing.T) {
	var answer atomic.Bool
	release := make(chan struct{})
	s := newRawServer(t, func(i int) (string, bool) {
		if !answer.Load() {
			<-release
			return "", true
		}
		return okResp(i, ""), false
	})
	defer close(release)
	_, scrape := scrapeRaw(t, s, 200*time.Millisecond)
	start := time.Now()
	up, _, log := scrape()
	if up != 0 || !strings.Contains(log, "context deadline exceeded while") {
		t.Errorf("up %v, log %s", up, log)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v", d)
	}
	answer.Store(true)
	if up, _, log := scrape(); up != 1 {
		t.Errorf("after the timeout: up %v, log %s", up, log)
	}
}

// BenchmarkFetch is one scrape's fetch of the vLLM fixture page from a
// loopback target, through the loop's own connection and through net/http.
func BenchmarkFetch(b *testing.B) {
	page := read(b, "vllm.txt")
	srv := httptest.NewServer(serve(page, ctText))
	defer srv.Close()
	for _, tc := range []struct {
		name   string
		client *http.Client
	}{{"plain", nil}, {"net-http", &http.Client{Transport: &http.Transport{DisableCompression: true}}}} {
		b.Run(tc.name, func(b *testing.B) {
			tg := fixtureTarget("j")
			tg.Address = strings.TrimPrefix(srv.URL, "http://")
			m, err := New(Options{Targets: []Target{tg}, Next: &collect{ch: make(chan struct{}, 1)}, Logger: quiet(), Client: tc.client})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			l := m.loops[0]
			b.SetBytes(int64(len(page)))
			b.ReportAllocs()
			for b.Loop() {
				pg := pageBuf{l: l}
				if _, err := l.fetch(context.Background(), &pg); err != nil || len(pg.bytes()) != len(page) {
					b.Fatal(err, len(pg.bytes()))
				}
				pg.done()
			}
		})
	}
}
