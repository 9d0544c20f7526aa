package service

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/otelstep/otelstep/telemetry"
)

// state is the service's lifecycle as the health endpoint reports it.
type state int32

const (
	starting state = iota
	running
	stopping
)

func (s state) String() string {
	return [...]string{"starting", "running", "stopping"}[s]
}

// healthHandler answers 200 while running and 503 while starting or
// stopping, with a small JSON body, like the collector's health_check. While
// a JSONL file cannot be written it answers 503 too, the body saying why
// ("reason"): otelstep runs but takes no data.
func (s *Service) healthHandler(w http.ResponseWriter, r *http.Request) {
	st := state(s.state.Load())
	w.Header().Set("Content-Type", "application/json")
	code := http.StatusServiceUnavailable
	msg := "Server not available"
	reason := ""
	if st == running {
		code, msg = http.StatusOK, "Server available"
		if err := s.failing(); err != nil {
			code, msg, reason = http.StatusServiceUnavailable, "Server degraded", err.Error()
		}
	}
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"status":%q,"state":%q,"upSince":%q,"uptime":%q`, msg, st, s.started.Format(time.RFC3339Nano), time.Since(s.started).Round(time.Millisecond))
	if reason != "" {
		js, _ := json.Marshal(reason) // any bytes a path or an error holds
		fmt.Fprintf(w, `,"reason":%s`, js)
	}
	fmt.Fprintln(w, "}")
}

// failing is why a JSONL file cannot be written, nil while every one can.
func (s *Service) failing() error {
	var errs []error
	for _, f := range s.files {
		if err := f.Failing(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f.Name(), err))
		}
	}
	return errors.Join(errs...)
}

// metricsHandler serves otelstep's own metrics beside the health endpoint,
// in the Prometheus text format, so that a job (or the embedded default
// config) can scrape them: when service.telemetry.metrics names no readers.
// Otherwise /metrics answers 404 saying where they are.
func (s *Service) metricsHandler() http.Handler {
	if h := s.telemetry.Handler(); h != nil {
		return h
	}
	msg := "otelstep's own metrics go to the readers of service.telemetry.metrics"
	if s.telemetry.Level() == telemetry.LevelNone {
		msg = "otelstep's own metrics are off (service.telemetry.metrics.level: none)"
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, msg, http.StatusNotFound)
	})
}
