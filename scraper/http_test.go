package scraper

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/x509"
	"io"
	"log"
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

	"github.com/otelstep/otelstep/pipeline"
)

// scrapeTarget is a Manager of the one target tg (its Options changed by
// mod, if not nil), and a function that scrapes it once and returns the
// batch's up and g (-1 if none) and the scrape's log.
func scrapeTarget(t *testing.T, tg Target, mod func(*Options)) (*Manager, func() (up, g float64, log string)) {
	t.Helper()
	var lb logBuf
	col := &collect{ch: make(chan struct{}, 1)}
	o := Options{Targets: []Target{tg}, Next: col, Logger: slog.New(slog.NewTextHandler(&lb, nil))}
	if mod != nil {
		mod(&o)
	}
	m, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m, func() (float64, float64, string) {
		col.b = nil
		lb.Reset()
		m.ScrapeAll(testCtx(t))
		if len(col.b) != 1 {
			t.Fatalf("%d batches", len(col.b))
		}
		return upOf(t, col.b[0]), gOf(col.b[0]), lb.String()
	}
}

// testCtx is the context of a test's scrapes: it ends a minute on, so that
// a scrape its own timeout failed to cut ends too, with an error other
// than the scrape timeout's.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// gOf is the value of the gauge g in b, -1 if there is none.
func gOf(b *pipeline.Batch) float64 {
	if m := findPoints(b.Metrics[0], "g"); m != nil {
		return m.GetGauge().DataPoints[0].GetAsDouble()
	}
	return -1
}

// targetAt is the fixture target at srv's address.
func targetAt(srv *httptest.Server) Target {
	tg := loopbackTarget()
	tg.Address = srv.Listener.Addr().String()
	return tg
}

func gzipped(s string) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write([]byte(s))
	_ = zw.Close()
	return b.Bytes()
}

// Scrapes of a target reuse one connection whatever framing the pages come
// in (a length, chunked, gzip), send the headers Prometheus sends, and read
// every page whole.
func TestHTTPKeepAlive(t *testing.T) {
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
			_, _ = w.Write(gzipped(page))
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	tg := targetAt(srv)
	tg.Interval, tg.Timeout = 5*time.Second, 3*time.Second
	m, scrape := scrapeTarget(t, tg, nil)
	for i := range 9 {
		if up, g, log := scrape(); up != 1 || g != float64(i) {
			t.Fatalf("scrape %d: up %v, g %v, log %s", i, up, g, log)
		}
	}
	m.Close()
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for 9 scrapes, want 1", n)
	}
	h := hdr[0]
	if h.Get("Accept") != acceptHeader || h.Get("Accept-Encoding") != "gzip" || h.Get("User-Agent") != userAgent ||
		h.Get("X-Prometheus-Scrape-Timeout-Seconds") != "3" || hosts[0] != tg.Address {
		t.Errorf("request headers %v, host %q", h, hosts[0])
	}
}

// A redirect is followed on every scrape, with the scrape's headers, as
// Prometheus follows it; a redirect loop fails the scrape after 10
// redirects, saying so.
func TestHTTPRedirect(t *testing.T) {
	var asked, loops atomic.Int64
	var accept atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metrics":
			asked.Add(1)
			http.Redirect(w, r, "/real", http.StatusFound)
		case "/real":
			accept.Store(r.Header.Get("Accept"))
			w.Header().Set("Content-Type", ctText)
			_, _ = w.Write([]byte("# TYPE g gauge\ng 7\n"))
		case "/loop":
			n, _ := strconv.Atoi(r.URL.Query().Get("n"))
			loops.Add(1)
			http.Redirect(w, r, "/loop?n="+strconv.Itoa(n+1), http.StatusMovedPermanently)
		}
	}))
	defer srv.Close()
	_, scrape := scrapeTarget(t, targetAt(srv), nil)
	for i := range 3 {
		if up, g, log := scrape(); up != 1 || g != 7 {
			t.Errorf("scrape %d: redirect not followed: up %v, g %v, log %s", i, up, g, log)
		}
	}
	if n := asked.Load(); n != 3 {
		t.Errorf("/metrics asked for %d times in 3 scrapes, want 3", n)
	}
	if a, _ := accept.Load().(string); a != acceptHeader {
		t.Errorf("the redirected request's Accept is %q", a)
	}

	tg := targetAt(srv)
	tg.MetricsPath = "/loop"
	_, scrape = scrapeTarget(t, tg, nil)
	up, _, log := scrape()
	if up != 0 || !strings.Contains(log, "stopped after 10 redirects") {
		t.Errorf("redirect loop: up %v, log %s", up, log)
	}
	if n := loops.Load(); n != 10 {
		t.Errorf("redirect loop: %d requests, want 10", n)
	}
}

// A job with proxy_from_environment sends its scrapes to the proxy
// HTTP_PROXY names; a job without it ignores HTTP_PROXY, as Prometheus
// does.
func TestHTTPProxyFromEnvironment(t *testing.T) {
	var proxied atomic.Int64
	var asked atomic.Value
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		asked.Store(r.RequestURI)
		w.Header().Set("Content-Type", ctText)
		_, _ = w.Write([]byte("# TYPE g gauge\ng 3\n"))
	}))
	defer proxy.Close()
	for _, k := range []string{"HTTP_PROXY", "http_proxy"} {
		t.Setenv(k, proxy.URL)
	}
	for _, k := range []string{"NO_PROXY", "no_proxy", "REQUEST_METHOD"} {
		t.Setenv(k, "")
	}
	// A name that resolves nowhere: only the proxy can reach it.
	tg := fixtureTarget("j")
	tg.Address = "metrics.invalid:9400"
	tg.ProxyFromEnvironment = true
	_, scrape := scrapeTarget(t, tg, nil)
	if up, g, log := scrape(); up != 1 || g != 3 {
		t.Fatalf("through the proxy: up %v, g %v, log %s", up, g, log)
	}
	if a, _ := asked.Load().(string); a != "http://metrics.invalid:9400/metrics" {
		t.Errorf("the proxy was asked for %q", a)
	}

	tg.ProxyFromEnvironment = false
	_, scrape = scrapeTarget(t, tg, nil)
	if up, _, log := scrape(); up != 0 || !strings.Contains(log, "metrics.invalid") {
		t.Errorf("without proxy_from_environment: up %v, log %s", up, log)
	}
	if n := proxied.Load(); n != 1 {
		t.Errorf("the proxy got %d requests, want the 1 of the job that asks for it", n)
	}
}

// An https target is scraped over TLS, with HTTP/2 where the server offers
// it, when its certificate is signed by a root the client trusts; else the
// scrape fails and says why.
func TestHTTPS(t *testing.T) {
	var proto atomic.Value
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proto.Store(r.Proto)
		w.Header().Set("Content-Type", ctText)
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write(gzipped("# TYPE g gauge\ng 5\n"))
	}))
	srv.EnableHTTP2 = true
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake below
	srv.StartTLS()
	defer srv.Close()
	tg := targetAt(srv)
	tg.Scheme = "https"
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	_, scrape := scrapeTarget(t, tg, func(o *Options) { o.rootCAs = roots })
	for i := range 2 {
		if up, g, log := scrape(); up != 1 || g != 5 {
			t.Fatalf("scrape %d: up %v, g %v, log %s", i, up, g, log)
		}
	}
	if p, _ := proto.Load().(string); p != "HTTP/2.0" {
		t.Errorf("scraped over %s, want HTTP/2.0", p)
	}
	_, scrape = scrapeTarget(t, tg, nil) // the system's roots
	if up, _, log := scrape(); up != 0 || !strings.Contains(log, "certificate") {
		t.Errorf("an unknown CA: up %v, log %s", up, log)
	}
}

// A target that never answers, or sends its header and then part of its
// body, is cut at the scrape timeout, and the error says so and where; the
// next scrape starts afresh. The handlers block until the client gives up
// or the test ends: only the scrape timeout ends the scrape in time to say
// so (testCtx).
func TestHTTPTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	var answer atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctText)
		switch {
		case answer.Load():
			_, _ = w.Write([]byte("# TYPE g gauge\ng 1\n"))
			return
		case r.URL.Path == "/body":
			_, _ = w.Write([]byte("# TYPE g gauge\n"))
			w.(http.Flusher).Flush()
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	for _, tc := range []struct{ path, where string }{
		{"/metrics", "scrape timeout of 200ms reached while waiting for the response"},
		{"/body", "scrape timeout of 200ms reached while reading the body"},
	} {
		answer.Store(false)
		tg := targetAt(srv)
		tg.MetricsPath, tg.Timeout = tc.path, 200*time.Millisecond
		_, scrape := scrapeTarget(t, tg, nil)
		if up, _, log := scrape(); up != 0 || !strings.Contains(log, tc.where) {
			t.Errorf("%s: up %v, log %s", tc.path, up, log)
		}
		answer.Store(true)
		if up, g, log := scrape(); up != 1 || g != 1 {
			t.Errorf("%s, after the timeout: up %v, g %v, log %s", tc.path, up, g, log)
		}
	}
}

// A gzip bomb, a body under the body size limit that decompresses to far
// more than it, fails its scrape at the limit on the decompressed page.
func TestHTTPGzipBomb(t *testing.T) {
	// A gzip body may be many members, read as one: 256 members of a MiB
	// of spaces each, a few hundred KiB in all.
	bomb := gzipped("# TYPE g gauge\ng 1\n")
	mib := gzipped(strings.Repeat(" ", 1<<20))
	for range 256 {
		bomb = append(bomb, mib...)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctText)
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Length", strconv.Itoa(len(bomb)))
		_, _ = w.Write(bomb)
	}))
	defer srv.Close()
	tg := targetAt(srv)
	tg.BodySizeLimit = 4 << 20
	_, scrape := scrapeTarget(t, tg, nil)
	if up, _, log := scrape(); up != 0 || !strings.Contains(log, "body exceeds the body size limit of 4194304 bytes (decompressed)") {
		t.Errorf("up %v, log %s", up, log)
	}
}

// What is not a page fails its scrape with an error that says what it got:
// a status other than 200, a response that is not HTTP, a target that
// refuses the connection, HTML where a page should be.
func TestHTTPNotAPage(t *testing.T) {
	notHTTP, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer notHTTP.Close()
	go func() {
		for {
			c, err := notHTTP.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = bufio.NewReader(c).ReadString('\n')
				_, _ = c.Write([]byte("SSH-2.0-OpenSSH_9.6\r\n\r\n"))
			}()
		}
	}()
	refused, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusedAddr := refused.Addr().String()
	refused.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/html":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte("<!doctype html>\n<html><body>login</body></html>\n"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	for _, tc := range []struct{ addr, path, log string }{
		{srv.Listener.Addr().String(), "/metrics", "server returned HTTP status 404 Not Found"},
		{notHTTP.Addr().String(), "/metrics", "malformed HTTP"},
		{refusedAddr, "/metrics", "connection refused"},
		{srv.Listener.Addr().String(), "/html", "line 1"},
	} {
		tg := fixtureTarget("j")
		tg.Address, tg.MetricsPath = tc.addr, tc.path
		_, scrape := scrapeTarget(t, tg, nil)
		if up, _, log := scrape(); up != 0 || !strings.Contains(log, tc.log) || !strings.Contains(log, "target=http://"+tc.addr+tc.path) {
			t.Errorf("%s%s: up %v, log %s", tc.addr, tc.path, up, log)
		}
	}
}

// BenchmarkFetch is one scrape's fetch of the vLLM fixture page from a
// loopback target.
func BenchmarkFetch(b *testing.B) {
	page := read(b, "vllm.txt")
	srv := httptest.NewServer(serve(page, ctText))
	defer srv.Close()
	m, err := New(Options{Targets: []Target{targetAt(srv)}, Next: &collect{ch: make(chan struct{}, 1)}, Logger: quiet()})
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
}
