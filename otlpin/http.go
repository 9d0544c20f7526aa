package otlpin

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"

	"github.com/otelstep/otelstep/otlpwire"
	"github.com/otelstep/otelstep/pipeline"
	"github.com/otelstep/otelstep/telemetry"
)

const (
	ctProtobuf = "application/x-protobuf"
	ctJSON     = "application/json"
)

func (r *Receiver) newHTTPServer() *http.Server {
	orDefault := func(d, def time.Duration) time.Duration {
		if d > 0 {
			return d
		}
		return def
	}
	o := r.opts
	srv := &http.Server{
		Handler:           http.HandlerFunc(r.serveHTTP),
		ReadHeaderTimeout: orDefault(o.HTTPReadHeaderTimeout, 10*time.Second),
		ReadTimeout:       orDefault(o.HTTPReadTimeout, time.Minute),
		WriteTimeout:      orDefault(o.HTTPWriteTimeout, time.Minute+r.timeout),
		IdleTimeout:       orDefault(o.HTTPIdleTimeout, 2*time.Minute),
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          nil,
	}
	srv.SetKeepAlivesEnabled(!o.HTTPDisableKeepAlives)
	srv.ConnState = httpConnState
	return srv
}

// httpConnState tells a shedding listener which connections have a
// request in flight (limit.go): from its headers read to its answer sent.
func httpConnState(c net.Conn, st http.ConnState) {
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	switch st {
	case http.StateActive:
		lc.busy.Store(1)
	case http.StateNew, http.StateIdle:
		lc.busy.Store(0)
	}
}

// httpError is a rejected request: status code and a message for the sender.
type httpError struct {
	status int
	code   codes.Code
	msg    string
	reason Reason
}

// overBudget is the answer to a request the receiver's byte budget has no
// room for (admission.go).
func overBudget() *httpError {
	return &httpError{http.StatusServiceUnavailable, codes.Unavailable, "otlpin: " + errOverBudget.Error() + ", retry later", ReasonOverBudget}
}

func (r *Receiver) serveHTTP(w http.ResponseWriter, req *http.Request) {
	sig, ok := pipeline.SignalOfPath(req.URL.Path)
	if !ok {
		r.httpReject(w, req, "unknown", "", &httpError{http.StatusNotFound, codes.NotFound, "otlpin: unknown path " + strconv.Quote(req.URL.Path) + "; OTLP/HTTP paths are /v1/metrics, /v1/traces and /v1/logs", ReasonUnknownPath})
		return
	}
	c := r.consumer(sig)
	if c == nil {
		r.httpReject(w, req, sig.String(), "", &httpError{http.StatusNotFound, codes.Unimplemented, fmt.Sprintf("otlpin: no %s pipeline is configured", sig), ReasonNoPipeline})
		return
	}
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		r.httpReject(w, req, sig.String(), "", &httpError{http.StatusMethodNotAllowed, codes.Unimplemented, "otlpin: method " + req.Method + " not allowed, use POST", ReasonMethod})
		return
	}
	ct := ""
	if mt, _, err := mime.ParseMediaType(req.Header.Get("Content-Type")); err == nil {
		ct = mt
	}
	if ct != ctProtobuf && ct != ctJSON {
		r.httpReject(w, req, sig.String(), "", &httpError{http.StatusUnsupportedMediaType, codes.InvalidArgument,
			fmt.Sprintf("otlpin: unsupported Content-Type %q, use %s or %s", req.Header.Get("Content-Type"), ctProtobuf, ctJSON), ReasonContentType})
		return
	}
	body, bd, g, herr := r.readBody(w, req, ct == ctProtobuf)
	if herr != nil {
		r.httpReject(w, req, sig.String(), ct, herr)
		return
	}
	b, resp, err := decodeHTTP(sig, ct, body)
	if err != nil {
		// A pooled body goes to the garbage collector: nothing is sure not
		// to point into it (the error's text, say). Its bytes are no
		// longer the budget's.
		g.lease.Release()
		r.httpReject(w, req, sig.String(), ct, &httpError{http.StatusBadRequest, codes.InvalidArgument, fmt.Sprintf("otlpin: cannot decode %s %s request: %v", ct, sig, err), ReasonDecode})
		return
	}
	if bd != nil {
		b.Leases = append(b.Leases, &bd.lease)
	}
	b.Leases = append(b.Leases, &g.lease)
	err = r.deliver(req.Context(), c, b)
	switch classify(err) {
	case outcomeOK:
		writeMessage(w, ct, http.StatusOK, resp)
	case outcomeRetry:
		msg := fmt.Sprintf("otlpin: %s pipeline cannot take data now, retry later: %v", sig, err)
		r.refuse(refusal{signal: sig.String(), tr: telemetry.HTTP, reason: ReasonRetryLater, remote: req.RemoteAddr, answer: "HTTP 503", err: msg})
		w.Header().Set("Retry-After", strconv.Itoa(int(retryAfter/time.Second)))
		writeMessage(w, ct, http.StatusServiceUnavailable, &spb.Status{Code: int32(codes.Unavailable), Message: msg})
	default:
		msg := fmt.Sprintf("otlpin: %s pipeline failed: %v", sig, err)
		r.refuse(refusal{signal: sig.String(), tr: telemetry.HTTP, reason: ReasonPipelineFailed, remote: req.RemoteAddr, answer: "HTTP 500", err: msg})
		writeMessage(w, ct, http.StatusInternalServerError, &spb.Status{Code: int32(codes.Internal), Message: msg})
	}
}

// readBody reads the request body, decompressing it, with both the
// compressed and the decompressed size limited to maxBody. It stops reading
// as soon as a limit is passed.
//
// When pooled is set (a protobuf request, which the decoder keeps views
// of) and the size is known, the body is read into one of the pool's,
// returned too: its lease goes with the batch.
//
// The body's bytes are taken from the receiver's budget (admission.go)
// before they are read: at once when the size is known, else as they are
// read (decompressed). The grant is returned for the batch's leases; when
// the budget has no room, the body is not read on and the answer is
// overBudget.
func (r *Receiver) readBody(w http.ResponseWriter, req *http.Request, pooled bool) (_ []byte, _ *body, _ *grant, herr *httpError) {
	if req.ContentLength > r.maxBody {
		return nil, nil, nil, r.tooLarge("body")
	}
	enc := strings.ToLower(strings.TrimSpace(req.Header.Get("Content-Encoding")))
	known := (enc == "" || enc == "identity") && req.ContentLength > 0
	var g *grant
	if known {
		g = r.admit.take(req.ContentLength)
	} else {
		g = r.admit.take(0)
	}
	if g == nil {
		r.discardBody(req)
		return nil, nil, nil, overBudget()
	}
	defer func() {
		if herr != nil {
			g.lease.Release()
		}
	}()
	body, bd, herr := r.readBodyOf(w, req, enc, known, pooled, g)
	return body, bd, g, herr
}

// readBodyOf is readBody's reading, of a body whose size is known (and
// taken from the budget) or read through g's budgetReader.
func (r *Receiver) readBodyOf(w http.ResponseWriter, req *http.Request, enc string, known, pooled bool, g *grant) ([]byte, *body, *httpError) {
	raw := http.MaxBytesReader(w, req.Body, r.maxBody)
	defer raw.Close()
	var src io.Reader = raw
	switch enc {
	case "", "identity":
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(raw)
		if err != nil {
			return nil, nil, r.bodyReadError(err, "gzip")
		}
		defer zr.Close()
		src = zr
	case "deflate":
		zr, err := zlib.NewReader(raw)
		if err != nil {
			return nil, nil, r.bodyReadError(err, "deflate")
		}
		defer zr.Close()
		src = zr
	case "zstd":
		zr, err := zstd.NewReader(raw, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(r.maxBody)+1<<20), zstd.WithDecoderMaxWindow(8<<20))
		if err != nil {
			return nil, nil, r.bodyReadError(err, "zstd")
		}
		defer zr.Close()
		src = zr
	default:
		return nil, nil, &httpError{http.StatusUnsupportedMediaType, codes.InvalidArgument, fmt.Sprintf("otlpin: unsupported Content-Encoding %q, use gzip, deflate, zstd or none", enc), ReasonContentEncoding}
	}
	if known {
		// The size is known (and within maxBody, checked above): read into
		// exactly that. A bytes.Buffer grown to it reallocates to twice the
		// size when ReadFrom looks for more room to find EOF, and the
		// decoded batch keeps the buffer alive (its strings point into it).
		// net/http ends the body at Content-Length, so a short body is the
		// only error left.
		var bd *body
		if pooled {
			bd = r.bodies.get(int(req.ContentLength))
		}
		var buf []byte
		if bd != nil {
			buf = bd.b
		} else {
			buf = make([]byte, req.ContentLength)
		}
		if _, err := io.ReadFull(raw, buf); err != nil {
			if bd != nil {
				bd.lease.Release() // nothing was decoded from it
			}
			return nil, nil, r.bodyReadError(err, enc)
		}
		return buf, bd, nil
	}
	var buf bytes.Buffer
	br := &budgetReader{r: src, g: g, limit: r.maxBody + 1}
	n, err := buf.ReadFrom(br)
	br.settle()
	if isOverBudget(err) {
		r.discardBody(req)
		return nil, nil, overBudget()
	}
	if err != nil {
		return nil, nil, r.bodyReadError(err, enc)
	}
	if n > r.maxBody {
		return nil, nil, r.tooLarge("decompressed body")
	}
	return buf.Bytes(), nil, nil
}

// discardBody reads what is left of a refused request's body (up to the
// size limit) into nothing, holding no memory: a server that answers and
// closes the connection while the body still comes in resets it, and the
// sender then sees no answer, where "retry later" is the one it must see.
func (r *Receiver) discardBody(req *http.Request) {
	_, _ = io.Copy(io.Discard, io.LimitReader(req.Body, r.maxBody))
}

func (r *Receiver) tooLarge(what string) *httpError {
	return &httpError{http.StatusRequestEntityTooLarge, codes.ResourceExhausted, fmt.Sprintf("otlpin: request %s larger than the limit of %d bytes", what, r.maxBody), ReasonTooLarge}
}

func (r *Receiver) bodyReadError(err error, enc string) *httpError {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return r.tooLarge("body")
	}
	if enc == "" || enc == "identity" {
		return &httpError{http.StatusBadRequest, codes.InvalidArgument, fmt.Sprintf("otlpin: cannot read request body: %v", err), ReasonDecode}
	}
	return &httpError{http.StatusBadRequest, codes.InvalidArgument, fmt.Sprintf("otlpin: cannot decompress %s request body: %v", enc, err), ReasonDecompress}
}

// decodeHTTP decodes an export request and returns its batch and the empty
// success response of the same service.
func decodeHTTP(sig pipeline.Signal, ct string, body []byte) (*pipeline.Batch, proto.Message, error) {
	var resp proto.Message
	switch sig {
	case pipeline.Metrics:
		resp = &colmetricspb.ExportMetricsServiceResponse{}
	case pipeline.Traces:
		resp = &coltracepb.ExportTraceServiceResponse{}
	default:
		resp = &collogspb.ExportLogsServiceResponse{}
	}
	if ct != ctJSON {
		b, err := otlpwire.UnmarshalOwnedRequest(sig, body) // body is this request's own buffer
		return b, resp, err
	}
	b := &pipeline.Batch{Signal: sig}
	var err error
	switch sig {
	case pipeline.Metrics:
		var m *colmetricspb.ExportMetricsServiceRequest
		m, err = otlpwire.DecodeMetrics(body)
		b.Metrics = m.GetResourceMetrics()
	case pipeline.Traces:
		var m *coltracepb.ExportTraceServiceRequest
		m, err = otlpwire.DecodeTraces(body)
		b.Traces = pipeline.TracesFromProto(m.GetResourceSpans())
	default:
		var m *collogspb.ExportLogsServiceRequest
		m, err = otlpwire.DecodeLogs(body)
		b.Logs = pipeline.LogsFromProto(m.GetResourceLogs())
	}
	if err != nil {
		return nil, nil, err
	}
	b.Items = pipeline.CountItems(b) // messages: the lengths of their slices
	return b, resp, nil
}

// httpReject records a rejected request of signal (refuse, never its
// body) and answers it. ct is the request's (supported) content type, ""
// if unknown: then the answer is plain text.
func (r *Receiver) httpReject(w http.ResponseWriter, req *http.Request, signal, ct string, e *httpError) {
	r.refuse(refusal{signal: signal, tr: telemetry.HTTP, reason: e.reason, remote: req.RemoteAddr, answer: "HTTP " + strconv.Itoa(e.status), err: e.msg})
	if e.status == http.StatusRequestEntityTooLarge || e.status == http.StatusBadRequest {
		// The rest of the body is not read: do not keep the connection.
		w.Header().Set("Connection", "close")
	}
	if e.status == http.StatusServiceUnavailable { // the sender is to come back
		w.Header().Set("Retry-After", strconv.Itoa(int(retryAfter/time.Second)))
	}
	if ct == "" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(e.status)
		_, _ = io.WriteString(w, e.msg+"\n")
		return
	}
	writeMessage(w, ct, e.status, &spb.Status{Code: int32(e.code), Message: e.msg})
}

// writeMessage answers with m encoded as ct.
func writeMessage(w http.ResponseWriter, ct string, status int, m proto.Message) {
	var out []byte
	var err error
	if ct == ctJSON {
		out, err = protojson.Marshal(m)
		if err == nil && len(out) == 0 {
			out = []byte("{}")
		}
	} else {
		out, err = proto.Marshal(m)
	}
	if err != nil {
		http.Error(w, "otlpin: cannot encode response", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(status)
	_, _ = w.Write(out)
}
