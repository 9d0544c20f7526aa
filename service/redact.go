package service

import (
	"context"
	"log/slog"

	"github.com/otelstep/otelstep/config"
	"github.com/otelstep/otelstep/redact"
)

// redactHandler replaces secrets in every message and string attribute
// before a record reaches the real handler: a token must never reach a log
// line, whatever a component chose to log, in whatever form (package
// redact).
type redactHandler struct {
	next slog.Handler
	r    *redact.Redactor
}

// NewRedactingHandler wraps h so that every secret in a record is shown as
// <redacted>. With no secrets it returns h.
func NewRedactingHandler(h slog.Handler, secrets []string) slog.Handler {
	return RedactingHandler(h, redact.New(secrets...))
}

// RedactingHandler wraps h so that whatever r hides is shown as
// <redacted>. With nothing to hide it returns h.
func RedactingHandler(h slog.Handler, r *redact.Redactor) slog.Handler {
	if r.Empty() {
		return h
	}
	return &redactHandler{next: h, r: r}
}

func (h *redactHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *redactHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.Replace(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *redactHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.r.Replace(v.String()))
	case slog.KindGroup:
		g := v.Group()
		out := make([]any, len(g))
		for i, x := range g {
			out[i] = h.attr(x)
		}
		return slog.Group(a.Key, out...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, h.r.Replace(err.Error()))
		}
		return slog.String(a.Key, h.r.Replace(v.String()))
	}
	return slog.Attr{Key: a.Key, Value: v}
}

func (h *redactHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		red[i] = h.attr(a)
	}
	return &redactHandler{next: h.next.WithAttrs(red), r: h.r}
}

func (h *redactHandler) WithGroup(name string) slog.Handler {
	return &redactHandler{next: h.next.WithGroup(name), r: h.r}
}

// tokens are the secrets the JSONL files must never hold (sink.FileOptions
// Secrets): the values of every Authorization header of the exporters and
// of every Authorization resource attribute the resource processors set
// (the ingest token, as "Bearer <token>" or alone). Other header values
// are secrets to the logs (config.Config.Secrets) but may be ordinary
// words an application writes, which the JSONL keeps.
func tokens(cfg *config.Config) []string {
	var out []string
	for _, e := range cfg.OTLPHTTP {
		for k, v := range e.Headers {
			if config.IsSecretKey(k) {
				out = append(out, v)
			}
		}
	}
	for _, acts := range cfg.Resource {
		for _, a := range acts {
			if s, ok := a.Value.(string); ok && config.IsSecretKey(a.Key) {
				out = append(out, s)
			}
		}
	}
	return out
}
