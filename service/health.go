package service

import (
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
// stopping, with a small JSON body, like the collector's health_check.
func (s *Service) healthHandler(w http.ResponseWriter, r *http.Request) {
	st := state(s.state.Load())
	w.Header().Set("Content-Type", "application/json")
	code := http.StatusServiceUnavailable
	msg := "Server not available"
	if st == running {
		code, msg = http.StatusOK, "Server available"
	}
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"status":%q,"state":%q,"upSince":%q,"uptime":%q}`+"\n", msg, st, s.started.Format(time.RFC3339Nano), time.Since(s.started).Round(time.Millisecond))
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
