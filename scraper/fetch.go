package scraper

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"golang.org/x/net/http/httpproxy"
)

// Scrapes go through net/http, configured as Prometheus configures the
// client of a scrape config that sets no more than otelstep reads
// (prometheus/common's config.NewClientFromConfig with its defaults):
//   - one client and connection pool per job, its connections kept alive
//     between scrapes (a target is scraped one scrape at a time, so a
//     connection or two per target is all a pool holds);
//   - no timeout but the scrape's: the request's context ends at
//     scrape_timeout, whether dialling, in the TLS handshake, waiting for
//     the response or reading the body;
//   - redirects followed, at most 10 (follow_redirects' default);
//   - no proxy, unless the job sets proxy_from_environment: then the one
//     HTTP_PROXY, HTTPS_PROXY and NO_PROXY name, read when the Manager is
//     made;
//   - https checked against the system's roots (there is no tls_config),
//     HTTP/2 where the server offers it;
//   - gzip asked for and decoded here, not by the transport, so that the
//     body size limit applies to the decompressed page (readBody).

// acceptHeader is the Accept header of every scrape, Prometheus 3's and
// the collector's: OpenMetrics 1.0.0 and text 1.0.0 with
// escaping=allow-utf-8, so that a target keeps the dots and other UTF-8 of
// its names (app.dotted.requests_total, label http.route) where it would
// otherwise escape them to underscores, then the older formats. The
// Content-Type of the answer picks the parser (Converter.ConvertLeased).
const acceptHeader = "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6," +
	"application/openmetrics-text;version=0.0.1;q=0.5," +
	"text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4," +
	"text/plain;version=0.0.4;q=0.3,*/*;q=0.2"

// userAgent is the User-Agent of every scrape.
const userAgent = "otelstep"

// idleConnTimeout is how long a connection is kept between scrapes (at
// least two intervals, see newClient), as Prometheus keeps it.
const idleConnTimeout = 5 * time.Minute

// clientKey is what a scrape client is made for: a job's targets share one.
type clientKey struct {
	job          string
	interval     time.Duration
	proxyFromEnv bool
}

// newClient returns the HTTP client of one job's scrapes. rootCAs replaces
// the system's roots when not nil (tests).
func newClient(k clientKey, rootCAs *x509.CertPool) *http.Client {
	var proxy func(*http.Request) (*url.URL, error)
	if k.proxyFromEnv {
		// Read now, not cached for the process as http.ProxyFromEnvironment
		// is; loopback targets are never proxied.
		fromEnv := httpproxy.FromEnvironment().ProxyFunc()
		proxy = func(r *http.Request) (*url.URL, error) { return fromEnv(r.URL) }
	}
	var tlsConf *tls.Config
	if rootCAs != nil {
		tlsConf = &tls.Config{RootCAs: rootCAs}
	}
	return &http.Client{Transport: &http.Transport{
		Proxy:               proxy,
		DialContext:         (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     tlsConf,
		ForceAttemptHTTP2:   true, // a custom dialler or TLS config turns it off otherwise
		TLSHandshakeTimeout: 10 * time.Second,
		MaxIdleConnsPerHost: 2,
		IdleConnTimeout:     max(idleConnTimeout, 2*k.interval),
		DisableCompression:  true, // gzip is asked for and decoded here (readBody)
	}}
}

// newRequest is the request every scrape of the target sends, made once:
// each scrape sends it with its own context.
func newRequest(u string, timeout time.Duration) (*http.Request, error) {
	req, err := http.NewRequest(http.MethodGet, u, http.NoBody)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", acceptHeader)
	req.Header.Set("Accept-Encoding", "gzip")
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", strconv.FormatFloat(timeout.Seconds(), 'f', -1, 64))
	return req, nil
}

// scrapeTimeout is the cause of a scrape's context ending at its timeout.
type scrapeTimeout time.Duration

func (d scrapeTimeout) Error() string {
	return fmt.Sprintf("scrape timeout of %v reached", time.Duration(d))
}

// Is makes a scrape timeout a context.DeadlineExceeded.
func (d scrapeTimeout) Is(target error) bool { return target == context.DeadlineExceeded }

// fetch reads the target's page into pg and returns its Content-Type.
func (l *loop) fetch(ctx context.Context, pg *pageBuf) (string, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, l.t.Timeout, scrapeTimeout(l.t.Timeout))
	defer cancel()
	resp, err := l.client.Do(l.req.WithContext(ctx))
	if err != nil {
		return "", ended(ctx, "waiting for the response", err)
	}
	defer func() {
		// What is left of a short body is read, so that the connection
		// carries the next scrape; more than that, and it is closed.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
	}()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("server returned HTTP status %s", resp.Status)
	}
	if err := l.readBody(ctx, pg, resp.Body, resp.Header.Get("Content-Encoding") == "gzip", resp.ContentLength); err != nil {
		return "", ended(ctx, "reading the body", err)
	}
	return resp.Header.Get("Content-Type"), nil
}

// ended is err, or when ctx has ended, why it did (the scrape timeout, or
// the scrapes stopping) and in which stage of the scrape.
func ended(ctx context.Context, stage string, err error) error {
	if ctx.Err() == nil {
		return err
	}
	return fmt.Errorf("%w while %s", context.Cause(ctx), stage)
}

// readBody reads a page's body into pg: at most the target's body size
// limit of it, decompressed if gzipped; length is its Content-Length, or -1.
// Without an error, body was read to its end (a gzip reader reads on to its
// source's end, for the next member).
func (l *loop) readBody(ctx context.Context, pg *pageBuf, body io.Reader, gzipped bool, length int64) error {
	if !gzipped && length > l.t.BodySizeLimit {
		// refused before reading a byte of it
		return fmt.Errorf("body of %d bytes exceeds the body size limit of %d bytes", length, l.t.BodySizeLimit)
	}
	size := -1
	if !gzipped && length > 0 {
		// room for the page and the read that sees EOF: a page of known
		// length never makes the buffer regrow (and copy)
		size = int(length) + bytes.MinRead
	}
	buf, err := pg.buffer(ctx, size)
	if err != nil {
		return err
	}
	if gzipped {
		gz := l.m.gzipReaders.Get()
		if err := gz.Reset(body); err != nil {
			l.m.gzipReaders.Put(gz)
			return fmt.Errorf("gzip: %w", err)
		}
		defer l.m.gzipReaders.Put(gz)
		body = gz
	}
	// At most limit+1 (decompressed) bytes are read: one more than allowed
	// tells an over-limit body from one exactly at the limit.
	n, err := pg.readFrom(buf, body, l.t.BodySizeLimit)
	if err != nil {
		return err
	}
	if n > l.t.BodySizeLimit {
		return fmt.Errorf("body exceeds the body size limit of %d bytes (decompressed)", l.t.BodySizeLimit)
	}
	return nil
}

// readFrom reads r to its end into buf, as bytes.Buffer.ReadFrom does but
// growing the buffer to limit at most, each growth charged to the
// Manager's budget before it is made: a page that does not fit stops
// being read there. Past limit bytes it reads one byte more, outside the
// buffer, to tell a page at the limit from one over it (then it returns
// limit+1): a page at the limit never needs a buffer bigger than itself.
func (pg *pageBuf) readFrom(buf *bytes.Buffer, r io.Reader, limit int64) (int64, error) {
	b := buf.AvailableBuffer()                    // buf is empty: all of its room
	defer func() { *buf = *bytes.NewBuffer(b) }() // what was read, without a copy
	for {
		if len(b) == cap(b) {
			if int64(len(b)) >= limit {
				return pg.probe(r, int64(len(b)))
			}
			want := min(max(2*int64(cap(b)), 64<<10), limit)
			// the old buffer and the new one are both held while the
			// page is copied; then only the new one
			if err := pg.charge(int64(cap(b)) + want); err != nil {
				return int64(len(b)), err
			}
			nb := make([]byte, len(b), want)
			copy(nb, b)
			b = nb
			pg.l.m.budget.give(pg.charged - want)
			pg.charged = want
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return int64(len(b)), nil
		}
		if err != nil {
			return int64(len(b)), fmt.Errorf("reading body: %w", err)
		}
	}
}

// probe reads on past the n bytes read: n at the end, n+1 if there is
// more.
func (pg *pageBuf) probe(r io.Reader, n int64) (int64, error) {
	var one [1]byte
	for {
		k, err := r.Read(one[:])
		if k > 0 {
			return n + 1, nil
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("reading body: %w", err)
		}
	}
}
