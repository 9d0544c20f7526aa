package scraper

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"time"
)

// plainConn is one target's kept-alive connection for plain-HTTP scrapes,
// and the few lines of HTTP/1.1 a scrape needs: the request is the same
// bytes every time, and the body is read straight into the page buffer.
//
// Why not net/http: its transport runs two goroutines per connection and
// hands every response between three, parses the headers into maps and
// wraps the body in several readers. At a job's load, a page a second from
// each of tens of targets, that was about a tenth of the scrape path's CPU,
// as much as the syscalls that move the bytes (bench/README.md). A loop
// scrapes its target one scrape at a time, under its mutex, so the
// connection needs no pool: the loop owns it.
//
// Whatever else a scrape may meet goes through net/http instead: https, a
// URL with user info (New decides), a redirect (loop.fetch retries it
// there, net/http follows it, and the target's later scrapes go there too).
type plainConn struct {
	addr string // host:port dialled
	req  []byte // the whole request, built once
	dial func(ctx context.Context, network, addr string) (net.Conn, error)

	c  net.Conn      // the open connection; nil when there is none
	br *bufio.Reader // reads c; kept from connection to connection
}

// errUseClient says the response is one plainConn leaves to net/http.
var errUseClient = errors.New("scraper: response left to net/http")

// maxHeadBytes bounds a response's status line and header fields together,
// as net/http's MaxResponseHeaderBytes does (there 10 MB by default; a
// metrics endpoint sends a few hundred bytes).
const maxHeadBytes = 1 << 20

// plainReadBuf is the connection's read buffer: the header and the start of
// the body arrive in it, and reads of the rest go straight to the page
// buffer (bufio reads into the caller's slice when it is the larger).
const plainReadBuf = 4 << 10

// aLongTimeAgo is a deadline in the past: setting it makes the
// connection's blocked reads and writes return at once.
var aLongTimeAgo = time.Unix(1, 0)

// newPlainConn returns the plainConn for u, or nil if u is not one it
// handles.
func newPlainConn(u *url.URL, timeout time.Duration) *plainConn {
	if u.Scheme != "http" || u.User != nil || u.Host == "" {
		return nil
	}
	var req []byte
	req = append(req, "GET "...)
	req = append(req, u.RequestURI()...)
	req = append(req, " HTTP/1.1\r\nHost: "...)
	req = append(req, u.Host...)
	req = append(req, "\r\nUser-Agent: otelstep\r\nAccept: "...)
	req = append(req, acceptHeader...)
	req = append(req, "\r\nAccept-Encoding: gzip\r\nX-Prometheus-Scrape-Timeout-Seconds: "...)
	req = strconv.AppendFloat(req, timeout.Seconds(), 'f', -1, 64)
	req = append(req, "\r\n\r\n"...)
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	return &plainConn{addr: addr, req: req, dial: d.DialContext}
}

// close closes the connection, if one is open.
func (p *plainConn) close() {
	if p.c != nil {
		_ = p.c.Close()
		p.c = nil
	}
}

// fetch does one scrape's request on the kept connection (dialling one if
// there is none) and reads the page into pg through l.readBody. It returns
// the page's Content-Type. On errUseClient pg is empty and nothing of the
// response was kept. The connection stays open for the next scrape only
// after a whole 200 response that the server did not say it would close.
func (p *plainConn) fetch(ctx context.Context, l *loop, pg *pageBuf) (string, error) {
	for attempt := 0; ; attempt++ {
		reused := p.c != nil
		if !reused {
			c, err := p.dial(ctx, "tcp", p.addr)
			if err != nil {
				if ctx.Err() != nil {
					return "", fmt.Errorf("%w while connecting", ctx.Err())
				}
				return "", err
			}
			p.c = c
			if p.br == nil {
				p.br = bufio.NewReaderSize(c, plainReadBuf)
			} else {
				p.br.Reset(c)
			}
		}
		ct, keep, stage, err := p.roundTrip(ctx, l, pg)
		if err == nil && keep {
			return ct, nil
		}
		p.close()
		if err == nil {
			return ct, nil
		}
		// A kept connection that the server closed while it was idle fails
		// before a byte of the response: try once more on a new one, as
		// net/http does for a GET.
		if reused && attempt == 0 && stage == stageNothingYet && ctx.Err() == nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			pg.reset()
			continue
		}
		// The connection's deadline is the context's, and may pass a moment
		// before the context says so: either way the scrape timed out.
		if cerr := ctx.Err(); cerr != nil || errors.Is(err, os.ErrDeadlineExceeded) {
			if cerr == nil {
				cerr = context.DeadlineExceeded
			}
			return "", fmt.Errorf("%w while %s", cerr, stage)
		}
		return "", err
	}
}

// stage is how far a round trip got, for errors.
type stage string

const (
	stageNothingYet stage = "waiting for the response"
	stageHead       stage = "reading the response header"
	stageBody       stage = "reading the body"
)

// roundTrip writes the request and reads the response on p.c. keep says
// whether the connection can carry the next request.
func (p *plainConn) roundTrip(ctx context.Context, l *loop, pg *pageBuf) (ct string, keep bool, st stage, err error) {
	c := p.c
	if d, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(d)
	} else {
		_ = c.SetDeadline(time.Time{})
	}
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(aLongTimeAgo) })
	defer func() {
		// The deadline func ran (or is running): the connection's
		// deadline may be in the past now, whatever came of the scrape.
		if !stop() {
			keep = false
		}
	}()
	if _, err := c.Write(p.req); err != nil {
		return "", false, stageNothingYet, fmt.Errorf("sending the request: %w", err)
	}
	h, st, err := readHead(p.br)
	if err != nil {
		return "", false, st, err
	}
	if h.code >= 300 && h.code < 400 {
		return "", false, stageHead, errUseClient
	}
	if h.code != 200 {
		return "", false, stageHead, fmt.Errorf("server returned HTTP status %s", h.status)
	}
	var body io.Reader
	var lb lengthBody
	switch {
	case h.chunked:
		body = httputil.NewChunkedReader(p.br)
	case h.length >= 0:
		lb = lengthBody{r: p.br, n: h.length}
		body = &lb
	default:
		body, h.close = p.br, true // the body ends where the connection does
	}
	if err := l.readBody(ctx, pg, body, h.gzipped, h.length); err != nil {
		return "", false, stageBody, err
	}
	keep = !h.close
	if keep && h.chunked {
		// the trailer section, up to its empty line
		if _, err := readFields(p.br, maxHeadBytes, nil); err != nil {
			keep = false
		}
	}
	if keep && p.br.Buffered() > 0 {
		keep = false // bytes that belong to no request
	}
	return h.ct, keep, stageBody, nil
}

// lengthBody is a body of n bytes: the connection ending before they are
// all read is an error, not the end of the page.
type lengthBody struct {
	r *bufio.Reader
	n int64
}

func (b *lengthBody) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	n, err := b.r.Read(p)
	b.n -= int64(n)
	if err == io.EOF && b.n > 0 {
		err = io.ErrUnexpectedEOF
	}
	if err == nil && b.n == 0 {
		err = io.EOF
	}
	return n, err
}

// respHead is what a scrape needs of a response's header.
type respHead struct {
	code    int
	status  string // the status line after the version, "404 Not Found"
	ct      string // Content-Type
	gzipped bool   // Content-Encoding: gzip
	length  int64  // Content-Length, -1 if none
	chunked bool   // Transfer-Encoding: chunked
	close   bool   // the server closes the connection after this response
}

// readHead reads a response's status line and header fields, skipping
// interim (1xx) responses. st says how far it got when err is not nil:
// stageNothingYet if not a byte of a response arrived.
func readHead(br *bufio.Reader) (h respHead, st stage, err error) {
	budget := maxHeadBytes
	for first := true; ; first = false {
		line, err := readLine(br, budget)
		if err != nil {
			if first && len(line) == 0 {
				return h, stageNothingYet, fmt.Errorf("%s: %w", stageNothingYet, err)
			}
			return h, stageHead, fmt.Errorf("%s: %w", stageHead, err)
		}
		budget -= len(line)
		h, err = parseStatusLine(line)
		if err != nil {
			return h, stageHead, err
		}
		if budget, err = readFields(br, budget, &h); err != nil {
			return h, stageHead, fmt.Errorf("%s: %w", stageHead, err)
		}
		if h.code >= 100 && h.code < 200 && h.code != 101 {
			continue // 100 Continue, 103 Early Hints: the response follows
		}
		if h.code == 101 || h.code == 204 || h.code == 304 {
			h.close = true // no body follows that this reader could frame
		}
		return h, stageHead, nil
	}
}

// parseStatusLine parses "HTTP/1.1 200 OK" into a respHead with no fields.
func parseStatusLine(line []byte) (respHead, error) {
	h := respHead{length: -1}
	proto, rest, ok := bytes.Cut(line, []byte{' '})
	if !ok || len(rest) < 3 || (len(rest) > 3 && rest[3] != ' ') {
		return h, fmt.Errorf("malformed HTTP status line %q", clip(line))
	}
	switch string(proto) {
	case "HTTP/1.1":
	case "HTTP/1.0":
		h.close = true // unless it says keep-alive
	default:
		return h, fmt.Errorf("malformed HTTP response version %q", clip(proto))
	}
	code, err := strconv.Atoi(string(rest[:3]))
	if err != nil || code < 100 {
		return h, fmt.Errorf("malformed HTTP status code %q", clip(rest[:3]))
	}
	h.code, h.status = code, string(bytes.TrimSpace(rest))
	return h, nil
}

// readFields reads header (or trailer) fields up to their empty line into h
// (nil: read and drop them), with at most budget bytes, and returns what is
// left of it.
func readFields(br *bufio.Reader, budget int, h *respHead) (int, error) {
	var lengths int
	var saidClose bool // close wins over keep-alive, in any order
	for {
		line, err := readLine(br, budget)
		if err != nil {
			return budget, err
		}
		budget -= len(line)
		if len(line) == 0 {
			if h != nil && h.chunked && lengths > 0 {
				// a length next to chunked framing is ignored (RFC 9112
				// 6.3), and such a response is not trusted with the next
				// request
				h.length, h.close = -1, true
			}
			return budget, nil
		}
		if h == nil {
			continue
		}
		name, value, ok := bytes.Cut(line, []byte{':'})
		if !ok || len(name) == 0 || name[len(name)-1] == ' ' || name[len(name)-1] == '\t' || line[0] == ' ' || line[0] == '\t' {
			return budget, fmt.Errorf("malformed header line %q", clip(line))
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			n, err := strconv.ParseInt(string(value), 10, 64)
			if err != nil || n < 0 || (lengths > 0 && n != h.length) {
				return budget, fmt.Errorf("bad Content-Length %q", clip(value))
			}
			lengths++
			h.length = n
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			if !bytes.EqualFold(value, []byte("chunked")) {
				return budget, fmt.Errorf("unsupported Transfer-Encoding %q", clip(value))
			}
			h.chunked = true
		case bytes.EqualFold(name, []byte("Content-Encoding")):
			h.gzipped = string(value) == "gzip"
		case bytes.EqualFold(name, []byte("Content-Type")):
			h.ct = string(value)
		case bytes.EqualFold(name, []byte("Connection")):
			for tok := range bytes.SplitSeq(value, []byte{','}) {
				tok = bytes.TrimSpace(tok)
				if bytes.EqualFold(tok, []byte("close")) {
					h.close, saidClose = true, true
				} else if bytes.EqualFold(tok, []byte("keep-alive")) && !saidClose {
					h.close = false // an HTTP/1.0 server's keep-alive
				}
			}
		}
	}
}

// readLine reads one line, without its CRLF (or bare LF), of at most budget
// bytes. The line is valid until the next read from br.
func readLine(br *bufio.Reader, budget int) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		// a line longer than the read buffer: the rare case that copies
		long := append([]byte(nil), line...)
		for err == bufio.ErrBufferFull && len(long) <= budget {
			line, err = br.ReadSlice('\n')
			long = append(long, line...)
		}
		line = long
	}
	if len(line) > budget {
		return nil, fmt.Errorf("response header longer than %d bytes", maxHeadBytes)
	}
	if err != nil {
		if err == io.EOF && len(line) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return line, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// clip is b for an error message: at most 64 bytes of it.
func clip(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}
