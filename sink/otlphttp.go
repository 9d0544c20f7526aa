package sink

import (
	"bytes"
	"context"
	"fmt"
	"github.com/otelstep/otelstep/internal/pool"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/otelstep/otelstep/otlpwire"
	"github.com/otelstep/otelstep/pipeline"
	"github.com/otelstep/otelstep/redact"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// This file is one OTLP/HTTP export attempt, shared by the HTTP sink (which
// queues and drops) and replay (which checkpoints and never drops): encoding,
// the POST, and the classification of the answer per the OTLP/HTTP spec.

// EncodeRequest marshals b's export request as protobuf into out (which it
// resets), compressed as c says. It is what replay sends (decoded from
// files: no point's attributes are a producer's set, so it uses none); the
// HTTP sink uses its own requestEncoders.
func EncodeRequest(b *pipeline.Batch, c Compression, out *bytes.Buffer) error {
	re := requestEncPool.Get()
	defer requestEncPool.Put(re)
	return re.encode(b, c, out)
}

// requestEncPool holds EncodeRequest's encoders.
var requestEncPool pool.Pool[requestEncoder]

// requestEncoder is everything one export's encoding uses, kept from batch
// to batch by its owner: the protobuf encoder's bookkeeping, a piece of raw
// protobuf and the compressors' state (gzip's is about 1 MB of tables and
// window). A sync.Pool of these pieces would lose them at every GC, and
// each request would then regrow its buffers and re-initialise gzip.
//
// A body is begun, takes one batch or more (add), and is ended: an export
// request is its resources one after another (a repeated field), so the
// requests of several batches of a signal, one after the other, are the
// request of all of them, and one compressed stream goes across them.
type requestEncoder struct {
	enc otlpwire.ProtoEncoder
	raw []byte
	zw  compressors

	// The body being encoded, from begin to end.
	c       Compression
	sig     pipeline.Signal
	scraped bool // its batches are the scraper's (pipeline.Batch.Scraped)
	out     *bytes.Buffer
	w       compressor // nil: not streamed (snappy, none)
}

// compressPiece is how much raw protobuf a compressed request is encoded
// into before it goes through the compressor: a request is its resources'
// fields one after another, so it can be encoded a few resources at a
// time, and a worker holds a piece rather than a whole batch's raw
// protobuf, which runs to megabytes. (Snappy's block format takes the body
// whole.)
const compressPiece = 256 << 10

// maxKeptRaw bounds the raw buffer an encoder keeps between batches, so one
// huge resource does not pin its size for the process's life.
const maxKeptRaw = 4 * compressPiece

// maxKeptOut bounds the buffer a request body kept for reuse may have
// (HTTP.putBody). The body must be whole to be sent, and traces' gzipped
// bodies of a full batch come close to this bound: a smaller one would
// regrow them for every batch. Bigger ones go to the
// garbage collector: the kept bodies are memory beside the queue's bound,
// at most keptBodies of this.
const maxKeptOut = 4 << 20

// encode writes b's export request into out (which it resets), compressed
// as c says.
func (re *requestEncoder) encode(b *pipeline.Batch, c Compression, out *bytes.Buffer) error {
	if err := re.begin(c, b.Signal, b.Scraped, out); err != nil {
		return err
	}
	if err := re.add(b); err != nil {
		return err
	}
	return re.end()
}

// begin starts a request body of sig in out (which it resets), compressed
// as c says for batches that are the scraper's or not (scraped).
func (re *requestEncoder) begin(c Compression, sig pipeline.Signal, scraped bool, out *bytes.Buffer) error {
	if sig > pipeline.Logs {
		return fmt.Errorf("unknown signal %d", sig)
	}
	out.Reset()
	re.c, re.sig, re.scraped, re.out, re.w = c, sig, scraped, out, nil
	re.raw = re.raw[:0]
	switch c.Type {
	case "", "none", "snappy":
		return nil
	}
	zw, err := re.zw.writer(c, sig, scraped, out)
	if err != nil {
		return err
	}
	if zw == nil {
		return fmt.Errorf("unsupported compression type %q", c.Type)
	}
	re.w = zw
	return nil
}

// takes reports whether b, of the body's signal, is compressed as the
// body begun is: a scraped batch and another differ for metrics gzipped at
// the collector's level (Compression.asCollector), nowhere else.
func (re *requestEncoder) takes(b *pipeline.Batch) bool {
	return re.c.asCollector(re.sig, b.Scraped) == re.c.asCollector(re.sig, re.scraped)
}

// add appends b's resources to the body begun; b must be of its signal and
// compressed as it is (takes).
func (re *requestEncoder) add(b *pipeline.Batch) error {
	b.CheckLive()       // what it is about to read was not given back (pipeline.Lease)
	defer b.CheckLive() // nor while it read
	if b.Signal != re.sig {
		return fmt.Errorf("a %s batch in a %s request", b.Signal, re.sig)
	}
	if !re.takes(b) {
		return fmt.Errorf("a batch scraped=%t in a request of batches scraped=%t, compressed otherwise", b.Scraped, re.scraped)
	}
	// Every signal through the reflection-free encoder: proto.Marshal's
	// reflection would be a large part of both paths' CPU.
	enc := &re.enc
	var appendReq func(dst []byte, i, j int) []byte // resources i to j-1
	switch b.Signal {
	case pipeline.Metrics:
		appendReq = func(dst []byte, i, j int) []byte { return enc.AppendMetricsRequest(dst, b.Metrics[i:j]) }
	case pipeline.Traces:
		appendReq = func(dst []byte, i, j int) []byte { return enc.AppendTracesRequest(dst, b.Traces[i:j]) }
	case pipeline.Logs:
		appendReq = func(dst []byte, i, j int) []byte { return enc.AppendLogsRequest(dst, b.Logs[i:j]) }
	}
	n := b.Len()
	switch {
	case re.c.Type == "snappy":
		// The block format takes the body whole, at end.
		re.raw = appendReq(re.raw, 0, n)
		return nil
	case re.w == nil:
		re.out.Write(appendReq(re.out.AvailableBuffer(), 0, n))
		return nil
	}
	// The raw protobuf goes through the compressor a piece at a time:
	// after the resource that fills a piece, and within a metrics resource
	// bigger than a piece (otlpwire.ProtoEncoder.SetFlush).
	var werr error
	write := func(raw []byte) []byte {
		if werr == nil {
			_, werr = re.w.Write(raw)
		}
		return raw[:0]
	}
	enc.SetFlush(write, compressPiece)
	defer enc.SetFlush(nil, 0)
	for i := range n {
		re.raw = appendReq(re.raw, i, i+1)
		if len(re.raw) >= compressPiece || i == n-1 {
			re.raw = write(re.raw)
		}
		if werr != nil {
			return werr
		}
	}
	return nil
}

// end finishes the body begun.
func (re *requestEncoder) end() error {
	defer func() {
		re.out, re.w = nil, nil
		if cap(re.raw) > maxKeptRaw {
			re.raw = nil
		}
	}()
	switch {
	case re.c.Type == "snappy":
		return appendSnappy(re.out, re.raw)
	case re.w == nil:
		return nil
	}
	return re.w.Close()
}

// Export is one encoded export request and where it goes.
type Export struct {
	Signal  pipeline.Signal
	URL     string
	Headers map[string]string // values are secrets: never logged
	// Encoding is Body's Content-Encoding (Compression.Encoding), "" when
	// it is not compressed.
	Encoding string
	Body     []byte
	// Redact hides the secrets in what the answer says (its message, an
	// error), before it is cut to size; nil hides the header values.
	Redact *redact.Redactor
}

// Result classifies the answer to one POST.
type Result struct {
	// Status is the HTTP status, 0 when no answer came (network error,
	// timeout).
	Status int
	// Retryable: 429, 502, 503, 504 and other 5xx, network errors and
	// timeouts. The rest (400, 401, 413, ...) will fail the same way again.
	Retryable bool
	// RetryAfter is the server's Retry-After, 0 when absent.
	RetryAfter time.Duration
	// Rejected and PartialMessage are a 2xx answer's partial_success.
	Rejected       int64
	PartialMessage string
	// Err is nil on 2xx. It names the status and the server's message, and
	// never holds a header value (nor what Export.Redact hides), in any
	// form, or URL userinfo.
	Err error
}

// OK reports a 2xx answer.
func (r Result) OK() bool { return r.Err == nil }

// Post sends e once. ctx bounds the whole attempt (use it as the timeout).
func Post(ctx context.Context, c *http.Client, e Export) Result {
	red := e.Redact
	if red == nil {
		red = headerRedactor(e.Headers)
	}
	// The transport may go on reading the body after the response came
	// back (a backend that answers before it has read it all), until it
	// closes the body, so Post waits for every body it handed out to be
	// closed: its callers refill e.Body's memory for the next request.
	// Cancelling the request first ends a write still under way.
	ctx, cancel := context.WithCancel(ctx)
	var bodies sync.WaitGroup
	defer func() { cancel(); bodies.Wait() }()
	newBody := func() io.ReadCloser {
		if len(e.Body) == 0 {
			return http.NoBody // a body of unknown length would go chunked
		}
		bodies.Add(1)
		b := &sentBody{done: bodies.Done}
		b.Reset(e.Body)
		return b
	}
	body := newBody()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL, body)
	if err != nil {
		body.Close() // no transport took it
		return Result{Err: red.Error(redactErr(err))}
	}
	req.ContentLength = int64(len(e.Body))
	req.GetBody = func() (io.ReadCloser, error) { return newBody(), nil } // for the transport's retries
	req.Header.Set("User-Agent", "otelstep")
	for k, v := range e.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if e.Encoding != "" {
		req.Header.Set("Content-Encoding", e.Encoding)
	}
	resp, err := c.Do(req)
	if err != nil {
		return Result{Retryable: true, Err: red.Error(redactErr(err))}
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // allow connection reuse
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		r := Result{Status: resp.StatusCode}
		r.Rejected, r.PartialMessage = partialSuccess(e.Signal, resp, data, red)
		return r
	}
	r := Result{Status: resp.StatusCode, Err: fmt.Errorf("HTTP %d%s", resp.StatusCode, statusMessage(resp, data, red))}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests,
		resp.StatusCode >= 500 && resp.StatusCode != http.StatusNotImplemented && resp.StatusCode != http.StatusHTTPVersionNotSupported:
		r.Retryable = true
		r.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"))
	}
	return r
}

// sentBody is a request body that says when the transport is done with it
// (http.RoundTripper closes the body once it is, even after RoundTrip has
// returned).
type sentBody struct {
	bytes.Reader
	once sync.Once
	done func()
}

func (b *sentBody) Close() error {
	b.once.Do(b.done)
	return nil
}

func isProto(resp *http.Response) bool {
	ct := resp.Header.Get("Content-Type")
	return strings.HasPrefix(ct, "application/x-protobuf") || strings.HasPrefix(ct, "application/protobuf")
}

// headerRedactor hides header values: what an Export without a Redactor
// must not let through.
func headerRedactor(h map[string]string) *redact.Redactor {
	if len(h) == 0 {
		return nil
	}
	vs := make([]string, 0, len(h))
	for _, v := range h {
		vs = append(vs, v)
	}
	return redact.New(vs...)
}

// maxMessage bounds a backend's message quoted in an error, once redacted.
const maxMessage = 256

// statusMessage returns ": <message>" from a google.rpc.Status body, or a
// plain-text body, redacted, then cut to maxMessage, or "". Redacted first:
// cut first, a secret at the cut would be too short to recognise and a
// piece of it would be left.
func statusMessage(resp *http.Response, data []byte, red *redact.Redactor) string {
	if len(data) == 0 {
		return ""
	}
	var msg string
	if isProto(resp) {
		msg = decodeStatusMessage(data)
	} else if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/") {
		msg = strings.TrimSpace(string(data))
	}
	if msg == "" {
		return ""
	}
	return ": " + truncate(red.Replace(msg), maxMessage)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// decodeStatusMessage extracts field 2 (message) of a google.rpc.Status.
func decodeStatusMessage(b []byte) string {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return ""
		}
		b = b[n:]
		if num == 2 && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return ""
			}
			return string(v)
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return ""
		}
		b = b[n:]
	}
	return ""
}

// partialSuccess decodes a 2xx protobuf answer's partial_success.
func partialSuccess(sig pipeline.Signal, resp *http.Response, data []byte, red *redact.Redactor) (rejected int64, msg string) {
	if len(data) == 0 || !isProto(resp) {
		return 0, ""
	}
	switch sig {
	case pipeline.Metrics:
		var r colmetricspb.ExportMetricsServiceResponse
		if proto.Unmarshal(data, &r) != nil {
			return 0, ""
		}
		rejected, msg = r.GetPartialSuccess().GetRejectedDataPoints(), r.GetPartialSuccess().GetErrorMessage()
	case pipeline.Traces:
		var r coltracepb.ExportTraceServiceResponse
		if proto.Unmarshal(data, &r) != nil {
			return 0, ""
		}
		rejected, msg = r.GetPartialSuccess().GetRejectedSpans(), r.GetPartialSuccess().GetErrorMessage()
	case pipeline.Logs:
		var r collogspb.ExportLogsServiceResponse
		if proto.Unmarshal(data, &r) != nil {
			return 0, ""
		}
		rejected, msg = r.GetPartialSuccess().GetRejectedLogRecords(), r.GetPartialSuccess().GetErrorMessage()
	}
	return rejected, truncate(red.Replace(msg), maxMessage)
}

// parseRetryAfter parses delay-seconds or an HTTP date; 0 if absent/invalid.
func parseRetryAfter(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil {
		if s < 0 {
			return 0
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}
