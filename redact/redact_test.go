package redact_test

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/otelstep/otelstep/redact"
	"github.com/otelstep/otelstep/redact/redacttest"
)

// tokens are secrets of the shapes ingest tokens have: plain alphanumeric,
// with dashes and underscores, base64-like with + / =, a JWT-like one with
// dots, and a short one.
var tokens = []string{
	"k7Qz2pXv9LmN4rTa",
	"e2e-Secret-Token-7f3a9c_x",
	"Zm9v+YmFy/cXV4PT1hYmM+ZGVm/Z2hp==",
	"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
	"s3cr3t!",
}

// echoes are the forms a backend, a proxy or a library may echo a header
// in.
func echoes(tok string) map[string]string {
	out := map[string]string{}
	for _, msg := range []string{tok, "Bearer " + tok, "Authorization: Bearer " + tok, "x" + tok, "xy" + tok, "user:" + tok} {
		out["raw "+msg[:min(len(msg), 3)]] = msg
		for name, enc := range map[string]*base64.Encoding{"std": base64.StdEncoding, "url": base64.URLEncoding, "rawstd": base64.RawStdEncoding, "rawurl": base64.RawURLEncoding} {
			out[fmt.Sprintf("base64 %s of %d+token", name, len(msg)-len(tok))] = enc.EncodeToString([]byte(msg))
		}
		out[fmt.Sprintf("query-escaped %d+token", len(msg)-len(tok))] = url.QueryEscape(msg)
		out[fmt.Sprintf("path-escaped %d+token", len(msg)-len(tok))] = url.PathEscape(msg)
	}
	var all, lower strings.Builder
	for i := 0; i < len(tok); i++ {
		fmt.Fprintf(&all, "%%%02X", tok[i])
		fmt.Fprintf(&lower, "%%%02x", tok[i])
	}
	out["every byte percent-encoded"] = all.String()
	out["lower-case percent-encoding"] = lower.String()
	js, _ := json.Marshal(map[string]string{"authorization": "Bearer " + tok})
	out["JSON"] = string(js)
	var u strings.Builder
	for _, r := range tok {
		fmt.Fprintf(&u, `\u%04x`, r)
	}
	out["JSON \\u-escaped"] = u.String()
	out["Go quoted"] = fmt.Sprintf("%q", "Bearer "+tok)
	out["hex"] = hex.EncodeToString([]byte(tok))
	out["HEX"] = strings.ToUpper(hex.EncodeToString([]byte(tok)))
	// Cut: what is left of the token when the echo was cut short.
	for _, n := range []int{redact.Window(len(tok)), len(tok) - 1} {
		out[fmt.Sprintf("cut to %d", n)] = "invalid token " + tok[:n]
		out[fmt.Sprintf("tail %d", n)] = tok[len(tok)-n:] + " was refused"
	}
	return out
}

// Every form of every token is hidden, in any surrounding text: no piece
// of the token of redact.Window bytes or more is left, as it is or decoded.
func TestReplaceHidesEchoes(t *testing.T) {
	for ti, tok := range tokens {
		r := redact.New("Bearer "+tok, "unrelated-secret-value")
		for name, echo := range echoes(tok) {
			for _, wrap := range []string{"%s", "error: %s", "ab%sc", `{"message":"%s"}`, "401 Unauthorized: %s\n"} {
				text := fmt.Sprintf(wrap, echo)
				out := r.Replace(text)
				if leak := redacttest.Leak(out, tok); leak != "" {
					t.Errorf("token %d, %s in %q: %s", ti, name, wrap, leak)
				}
				if !strings.Contains(out, redact.Mask) {
					t.Errorf("token %d, %s in %q: nothing redacted", ti, name, wrap)
				}
			}
		}
	}
}

// A secret is hidden in a long text wherever it is, and the text around it
// is kept.
func TestReplaceKeepsTheRest(t *testing.T) {
	tok := tokens[0]
	r := redact.New(tok)
	text := strings.Repeat("a", 300) + tok + strings.Repeat("b", 300)
	if got, want := r.Replace(text), strings.Repeat("a", 300)+redact.Mask+strings.Repeat("b", 300); got != want {
		t.Errorf("got %s", redacttest.Describe(got))
	}
	if got := r.Replace("Bearer " + tok + " and again " + tok); got != "Bearer "+redact.Mask+" and again "+redact.Mask {
		t.Errorf("got %s", redacttest.Describe(got))
	}
}

// Ordinary text is left alone: the auth scheme, words of a backend's
// message, another token, other base64, percent-encoded and escaped text.
func TestReplaceLeavesOrdinaryText(t *testing.T) {
	r := redact.New("Bearer "+tokens[0], tokens[1])
	for _, s := range []string{
		"Bearer token invalid for tenant gym",
		"HTTP 401: Unauthorized",
		"Bearer aGVsbG8gd29ybGQgdGhpcyBpcyBub3QgdGhlIHRva2Vu",
		base64.StdEncoding.EncodeToString([]byte("a different message, long enough to have many windows")),
		"path=%2Fv1%2Fmetrics&q=a%20b",
		`{"message":"bad \"value\" \u00e9\n"}`,
		"trace_id 5b8efff798038103d269b633813fc60c",
		"",
	} {
		if got := r.Replace(s); got != s {
			t.Errorf("%q became %q", s, got)
		}
	}
}

// No secrets, or a nil Redactor, changes nothing; errors keep their chain.
func TestReplaceNothingAndErrors(t *testing.T) {
	var nilR *redact.Redactor
	if nilR.Replace("x") != "x" || !redact.New().Empty() || !nilR.Empty() {
		t.Error("a Redactor of nothing changed text")
	}
	r := redact.New(tokens[0])
	base := fmt.Errorf("sentinel")
	err := fmt.Errorf("POST: %w: echo %s", base, tokens[0])
	got := r.Error(err)
	if strings.Contains(got.Error(), tokens[0]) || !strings.Contains(got.Error(), "POST: sentinel: echo "+redact.Mask) {
		t.Errorf("Error: %s", redacttest.Describe(got.Error()))
	}
	if !errorsIs(got, base) {
		t.Error("the redacted error lost its chain")
	}
	if clean := fmt.Errorf("nothing here"); r.Error(clean) != clean {
		t.Error("an error with no secret was wrapped")
	}
}

func errorsIs(err, target error) bool {
	for ; err != nil; err = unwrap(err) {
		if err == target {
			return true
		}
	}
	return false
}

func unwrap(err error) error {
	u, ok := err.(interface{ Unwrap() error })
	if !ok {
		return nil
	}
	return u.Unwrap()
}

// The leak checker finds what it must, so that the tests above mean
// something.
func TestLeakChecker(t *testing.T) {
	tok := tokens[1]
	w := redact.Window(len(tok))
	for name, echo := range echoes(tok) {
		if redacttest.Leak(echo, tok) == "" {
			t.Errorf("checker misses %s", name)
		}
	}
	if redacttest.Leak("nothing "+tok[:w-1], tok) != "" {
		t.Error("a piece shorter than the window counted as a leak")
	}
}

func BenchmarkReplaceLogLine(b *testing.B) {
	r := redact.New("Bearer "+tokens[1], tokens[0])
	line := `otlp/http exporter: export failed, batch dropped signal=metrics url=https://otlp.example.com/v1/metrics items=8192 error="HTTP 400: invalid metric name \"vllm:num_requests_running\""`
	b.ReportAllocs()
	for b.Loop() {
		r.Replace(line)
	}
}
