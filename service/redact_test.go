package service

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// Every place a record carries text goes through the replacer: message,
// string and error attributes, groups, values of other kinds that print the
// secret, attributes added with With and under WithGroup.
func TestRedactingHandler(t *testing.T) {
	const secret = "tok-3f9a"
	var buf bytes.Buffer
	log := slog.New(NewRedactingHandler(slog.NewTextHandler(&buf, nil), []string{secret, "other-secret"}))
	log = log.With("header", "Bearer "+secret)
	log.WithGroup("g").Info("sending with "+secret,
		"plain", secret,
		"err", fmt.Errorf("POST: %w", errors.New("401 for "+secret)),
		slog.Group("grp", "inner", "x"+secret+"x"),
		"any", struct{ S string }{secret},
		"n", 42,
		"other", "other-secret",
	)
	out := buf.String()
	if strings.Contains(out, secret) || strings.Contains(out, "other-secret") {
		t.Fatalf("a secret reached the log:\n%s", out)
	}
	for _, want := range []string{"sending with <redacted>", "plain=<redacted>", "401 for <redacted>", "inner=x<redacted>x", "n=42", "header=\"Bearer <redacted>\""} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if h := slog.NewTextHandler(&buf, nil); NewRedactingHandler(h, nil) != slog.Handler(h) {
		t.Error("no secrets: the handler should be returned as is")
	}
}
