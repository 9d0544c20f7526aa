package sink

import (
	"context"
	"encoding/base64"
	"fmt"
	"github.com/otelstep/otelstep/internal/fakebackend"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/otelstep/otelstep/pipeline"
	"github.com/otelstep/otelstep/redact/redacttest"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// echoToken is the token the fake backends below echo.
const echoToken = "Xq7Lm2Rt9Vw4Pz8Kd3Hs"

// echoForms are the ways the backends echo the Authorization header.
func echoForms() map[string]string {
	h := "Bearer " + echoToken
	return map[string]string{
		"raw":        h,
		"base64":     base64.StdEncoding.EncodeToString([]byte("Authorization: " + h)),
		"base64url":  base64.RawURLEncoding.EncodeToString([]byte(h)),
		"urlencoded": url.QueryEscape("authorization=" + h),
		"json":       fmt.Sprintf(`{"header":%q}`, h),
	}
}

// echoBodies are error bodies echoing the token in every form, placed so
// that it is before, across and after byte 256, where a message is cut.
func echoBodies() map[string]string {
	out := map[string]string{}
	for name, form := range echoForms() {
		for _, pad := range []int{0, 100, 200, 205, 210, 215, 220, 225, 230, 235, 256, 300, 70 << 10} {
			out[fmt.Sprintf("%s after %d bytes", name, pad)] = "invalid credentials " + strings.Repeat(".", pad) + form + " (refused)"
		}
	}
	return out
}

// A backend's answer that echoes the token, in any form, anywhere in the
// body, leaves no piece of it in the error Post returns: redacted before it
// is cut to 256 bytes. Both with a Redactor of the config's secrets and
// with none (the header values then).
func TestPostRedactsEchoes(t *testing.T) {
	srv := fakebackend.New(t)
	srv.Route("/", "metrics")
	headers := map[string]string{"Authorization": "Bearer " + echoToken}
	for name, text := range echoBodies() {
		for _, ct := range []string{"text/plain", "application/x-protobuf"} {
			body := text
			if ct != "text/plain" {
				st := protowire.AppendTag(nil, 2, protowire.BytesType)
				body = string(protowire.AppendString(st, text))
			}
			srv.AnswerAll(fakebackend.Reply{Status: http.StatusBadRequest, ContentType: ct, Body: []byte(body)})
			res := Post(context.Background(), http.DefaultClient, Export{Signal: pipeline.Metrics, URL: srv.URL() + "/", Headers: headers})
			if res.Err == nil || res.Status != http.StatusBadRequest {
				t.Fatalf("%s: status %d", name, res.Status)
			}
			msg := res.Err.Error()
			if leak := redacttest.Leak(msg, echoToken); leak != "" {
				t.Errorf("%s (%s): the error holds %s", name, ct, leak)
			}
			if len(body) < 64<<10 && !strings.Contains(msg, "invalid credentials") { // a longer body is read cut: its protobuf does not decode
				t.Errorf("%s (%s): the message is gone: %s", name, ct, redacttest.Describe(msg))
			}
		}
	}
}

// A 2xx answer's partial_success message is redacted before it is cut,
// the sink's secrets (the config's, not only its headers) hidden.
func TestPartialSuccessRedacted(t *testing.T) {
	srv := fakebackend.New(t)
	h, logs := newTestHTTP(t, srv.URL(), HTTPOptions{Secrets: []string{"Bearer " + echoToken}})
	for name, text := range echoBodies() {
		if len(text) > 60<<10 {
			continue // read cut at 64 KiB: it does not decode
		}
		resp, _ := proto.Marshal(&colmetricspb.ExportMetricsServiceResponse{PartialSuccess: &colmetricspb.ExportMetricsPartialSuccess{RejectedDataPoints: 1, ErrorMessage: text}})
		srv.AnswerAll(fakebackend.Reply{ContentType: "application/x-protobuf", Body: resp})
		res := h.post(pipeline.Metrics, nil)
		if res.Rejected != 1 {
			t.Fatalf("%s: rejected %d", name, res.Rejected)
		}
		if leak := redacttest.Leak(res.PartialMessage, echoToken); leak != "" {
			t.Errorf("%s: the partial success message holds %s", name, leak)
		}
	}
	if leak := redacttest.Leak(logs.String(), echoToken); leak != "" {
		t.Errorf("the log holds %s", leak)
	}
}

// The sink's own log lines (export failed, retrying) hold no piece of a
// token the backend echoes, with a logger that redacts nothing itself.
func TestHTTPLogsNoEcho(t *testing.T) {
	bodies := echoBodies()
	var answers []string
	for _, b := range bodies {
		answers = append(answers, b)
	}
	srv := fakebackend.New(t)
	srv.Answer(func(r *fakebackend.Request) fakebackend.Reply {
		if r.N > len(answers) {
			return fakebackend.Reply{}
		}
		b := answers[r.N-1]
		code := http.StatusBadRequest
		if len(b)%2 == 0 {
			code = http.StatusServiceUnavailable // retried: logged at debug
		}
		return fakebackend.Reply{Status: code, ContentType: "text/plain", Body: []byte(b)}
	})
	h, logs := newTestHTTP(t, srv.URL(), HTTPOptions{Headers: map[string]string{"Authorization": "Bearer " + echoToken},
		Retry: RetryOptions{Enabled: true, InitialInterval: time.Millisecond, MaxInterval: time.Millisecond, MaxElapsedTime: time.Minute}})
	_ = h.Start(context.Background())
	for i := range len(bodies) {
		_ = h.Enqueue(context.Background(), metricsBatch(fmt.Sprint(i), 1))
	}
	waitFor(t, time.Minute, func() bool { st := h.Stats(); return st.SentBatches+st.Failed == uint64(len(bodies)) }, "every batch answered")
	_ = h.Shutdown(ctxT(patience))
	l := logs.String()
	if !strings.Contains(l, "invalid credentials") {
		t.Fatalf("the backend's messages are not logged: %s", redacttest.Describe(l))
	}
	if leak := redacttest.Leak(l, echoToken); leak != "" {
		t.Errorf("the log holds %s", leak)
	}
}
