package service

import (
	"fmt"
	"time"

	"github.com/otelstep/otelstep/sink"
)

// A JSONL file that cannot be written at the stop (a full disk): the
// stop still drains every pipeline into its sinks (sink.File.Drain), so
// that what the file cannot take reaches the backend, and the stop is no
// failure when everything the file did not write by its deadline is at
// the backend: every item accepted is then in the JSONL or at the backend,
// and counted in the log. Nothing acknowledged is in question: an OTLP
// request is answered OK only once written.

// noteBackends records the OTLP/HTTP exporters beside the JSONL files of
// one pipeline (exp): what a file could not write at the stop is at the
// backend when they delivered everything.
func (s *Service) noteBackends(exp []sink.Sink) {
	var files []*sink.File
	var https []*sink.HTTP
	for _, sk := range exp {
		switch x := sk.(type) {
		case *sink.File:
			files = append(files, x)
		case *sink.HTTP:
			https = append(https, x)
		}
	}
	if s.fileBackends == nil {
		s.fileBackends = map[*sink.File][]*sink.HTTP{}
	}
	for _, f := range files {
		s.fileBackends[f] = append(s.fileBackends[f], https...)
	}
}

// drainFiles has every JSONL file take what the pipelines still hold,
// writable or not (sink.File.Drain).
func (s *Service) drainFiles() {
	for _, f := range s.files {
		f.Drain()
	}
}

// unwrittenWait bounds how long the stop waits for a file's writer to
// count what it did not write.
const unwrittenWait = time.Second

// judgeUnwritten says whether f, whose Shutdown ran out of time (err),
// left anything that is neither in the JSONL nor at the backend: nil when
// all of it is at the backend (logged, with the counts), else an error
// naming the file and the counts. Call it once the HTTP sinks have
// stopped.
func (s *Service) judgeUnwritten(f *sink.File, err error) error {
	lines, items, ok := f.Unwritten(unwrittenWait)
	if !ok {
		return fmt.Errorf("flush %s: %w (still writing)", f.Name(), err)
	}
	if items == 0 && lines == 0 {
		return nil
	}
	backends := s.fileBackends[f]
	delivered := len(backends) > 0
	for _, h := range backends {
		if st := h.Stats(); st.Failed > 0 || st.Dropped > 0 {
			delivered = false
		}
	}
	why := f.Failing()
	if why == nil {
		why = err
	}
	if !delivered {
		return fmt.Errorf("flush %s: %d lines of %d items not written by the stop's deadline (%w) and not all at the backend", f.Name(), lines, items, why)
	}
	s.log.Warn("JSONL file not written in full at the stop; what it lacks is at the backend",
		"sink", f.Name(), "unwritten_lines", lines, "unwritten_items", items, "error", why)
	return nil
}
