package service

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/otelstep/otelstep/redact"
	"github.com/otelstep/otelstep/scraper"
	"github.com/otelstep/otelstep/sink"
)

// The status document: GET /status on the health endpoint (README,
// "Status document"). In the spirit of the collector's healthcheckv2
// extension: the service's status, then per pipeline ("pipeline:traces")
// its components ("receiver:otlp", "processor:batch", "exporter:file/x",
// "connector:spanmetrics"), each with healthy, status and, where there is
// one, error, and what otelstep knows of it beside ("details": a
// receiver's listeners and counts, a sink's state and counts, a scrape
// target's last scrape). The answer is 200 while healthy, else 503, as
// healthcheckv2's. A secret never appears: errors are redacted, endpoints
// shown without userinfo or query, no header at all.

// The statuses, as the collector's component status names them.
const (
	statusStarting    = "StatusStarting"
	statusOK          = "StatusOK"
	statusRecoverable = "StatusRecoverableError"
	statusPermanent   = "StatusPermanentError"
	statusStopping    = "StatusStopping"
)

// severity orders the statuses: a pipeline's is its worst component's.
func severity(s string) int {
	return slices.Index([]string{statusOK, statusRecoverable, statusStarting, statusStopping, statusPermanent}, s)
}

// statusDoc is the document.
type statusDoc struct {
	StartTime  time.Time                   `json:"start_time"`
	Healthy    bool                        `json:"healthy"`
	Status     string                      `json:"status"`
	Error      string                      `json:"error,omitempty"`
	StatusTime time.Time                   `json:"status_time"`
	Components map[string]*componentStatus `json:"components"`
}

// componentStatus is a pipeline's or a component's status.
type componentStatus struct {
	Healthy bool   `json:"healthy"`
	Status  string `json:"status"`
	Error   string `json:"error,omitempty"`
	// Components are a pipeline's.
	Components map[string]*componentStatus `json:"components,omitempty"`
	// Details is what otelstep knows of a component beside its status.
	Details any `json:"details,omitempty"`
}

// fileDetails is a JSONL file sink's.
type fileDetails struct {
	Path  string `json:"path"`
	State string `json:"state"` // ok, failing
}

// httpDetails is an OTLP/HTTP exporter's (sink.HTTP.Status, Stats).
type httpDetails struct {
	Endpoint string `json:"endpoint"`
	// State is ok, failing (no answer, or one to retry) or refused (an
	// answer that will not change: 401, 400, ...), since Since.
	State      string     `json:"state"`
	Since      *time.Time `json:"since,omitempty"`
	LastError  string     `json:"last_error,omitempty"`
	LastStatus int        `json:"last_status,omitempty"`
	// LastErrorSignal is the signal of the request LastError is of: an
	// exporter is one sink shared by every pipeline that lists it, so
	// each pipeline shows the same state, its latest request's.
	LastErrorSignal string     `json:"last_error_signal,omitempty"`
	LastErrorAt     *time.Time `json:"last_error_at,omitempty"`
	// What waits in the live queue; in the JSONL files for the backfill
	// to send (the backend was down, the queue full); and in the JSONL
	// files, refused by the backend, left for `otelstep replay`.
	QueueBatches  int         `json:"queue_batches"`
	QueueItems    int         `json:"queue_items"`
	QueueBytes    int64       `json:"queue_bytes"`
	ToBackfill    linesDetail `json:"to_backfill"`
	LeftForReplay linesDetail `json:"left_for_replay"`
	// Batches and items by fate (delivered, queue_full, backend_down,
	// backend_refused, unsent_at_stop), and the requests sent again.
	Fates   map[string]fateDetails `json:"fates"`
	Retries uint64                 `json:"retries"`
}

// linesDetail is lines of the JSONL files (sink.Lines).
type linesDetail struct {
	Batches int   `json:"batches"`
	Bytes   int64 `json:"bytes"`
	Items   int64 `json:"items"`
}

// fateDetails is the batches and items of one fate (sink.FateCount).
type fateDetails struct {
	Batches uint64 `json:"batches"`
	Items   uint64 `json:"items"`
}

// targetDetails is one scrape target's (scraper.Manager.Targets).
type targetDetails struct {
	Job      string `json:"job"`
	Instance string `json:"instance"`
	URL      string `json:"url"`
	// Up is nil before the target's first scrape.
	Up                  *bool      `json:"up,omitempty"`
	LastScrape          *time.Time `json:"last_scrape,omitempty"`
	LastDuration        string     `json:"last_duration,omitempty"`
	LastError           string     `json:"last_error,omitempty"`
	ConsecutiveFailures int        `json:"consecutive_failures,omitempty"`
	DownSince           *time.Time `json:"down_since,omitempty"`
	Samples             int        `json:"samples"`
}

// statusHandler serves the status document.
func (s *Service) statusHandler(w http.ResponseWriter, _ *http.Request) {
	doc := s.status(time.Now())
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		http.Error(w, "otelstep: cannot encode the status document: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	code := http.StatusOK
	if !doc.Healthy {
		code = http.StatusServiceUnavailable
	}
	w.WriteHeader(code)
	_, _ = w.Write(append(out, '\n'))
}

// status builds the document as things are at now.
func (s *Service) status(now time.Time) *statusDoc {
	red := s.redactor
	doc := &statusDoc{StartTime: s.started, StatusTime: now, Components: map[string]*componentStatus{}}
	components := map[string]*componentStatus{} // by kind:id, each made once
	component := func(kind, id string) *componentStatus {
		key := kind + ":" + id
		if c, ok := components[key]; ok {
			return c
		}
		c := s.componentStatus(kind, id, red)
		components[key] = c
		return c
	}
	for _, p := range s.cfg.Service.Pipelines {
		ps := &componentStatus{Components: map[string]*componentStatus{}}
		for _, id := range p.Receivers {
			kind := "receiver"
			if _, ok := s.cfg.Connectors[id]; ok {
				kind = "connector"
			}
			ps.Components[kind+":"+id] = component(kind, id)
		}
		for _, id := range p.Processors {
			ps.Components["processor:"+id] = component("processor", id)
		}
		for _, id := range p.Exporters {
			kind := "exporter"
			if _, ok := s.cfg.Connectors[id]; ok {
				kind = "connector"
			}
			ps.Components[kind+":"+id] = component(kind, id)
		}
		ps.Status = statusOK
		var errs []string
		for _, key := range slices.Sorted(maps.Keys(ps.Components)) {
			c := ps.Components[key]
			if severity(c.Status) > severity(ps.Status) {
				ps.Status = c.Status
			}
			if c.Error != "" {
				errs = append(errs, key+": "+c.Error)
			}
		}
		ps.Error = strings.Join(errs, "; ")
		ps.Healthy = ps.Status == statusOK || ps.Status == statusRecoverable
		doc.Components["pipeline:"+p.ID] = ps
	}
	// The service: as GET / says (starting, stopping, a JSONL file that
	// cannot be written are unhealthy), its status the worst pipeline's.
	switch state(s.state.Load()) {
	case starting:
		doc.Status = statusStarting
	case stopping:
		doc.Status = statusStopping
	default:
		doc.Status = statusOK
		for _, ps := range doc.Components {
			if severity(ps.Status) > severity(doc.Status) {
				doc.Status = ps.Status
			}
		}
	}
	failing := s.failing()
	doc.Healthy = state(s.state.Load()) == running && failing == nil && doc.Status != statusPermanent
	if failing != nil {
		doc.Error = red.Replace(failing.Error())
	} else if doc.Status == statusPermanent || doc.Status == statusRecoverable {
		// The errors of the components in the service's status, each once
		// (an exporter is in several pipelines), so that the document says
		// why at its top as healthcheckv2's does.
		var errs []string
		seen := map[string]bool{}
		for _, id := range slices.Sorted(maps.Keys(doc.Components)) {
			ps := doc.Components[id]
			for _, key := range slices.Sorted(maps.Keys(ps.Components)) {
				if c := ps.Components[key]; c.Status == doc.Status && c.Error != "" && !seen[key] {
					seen[key] = true
					errs = append(errs, key+": "+c.Error)
				}
			}
		}
		doc.Error = strings.Join(errs, "; ")
	}
	return doc
}

// componentStatus is the status of the component kind:id.
func (s *Service) componentStatus(kind, id string, red *redact.Redactor) *componentStatus {
	c := &componentStatus{Healthy: true, Status: statusOK}
	fail := func(status string, err error) {
		c.Status, c.Error = status, red.Replace(err.Error())
		c.Healthy = status == statusRecoverable
	}
	switch kind {
	case "receiver":
		if r := s.receiverByID[id]; r != nil {
			c.Details = r.Status()
		}
		if m := s.scraperByID[id]; m != nil {
			targets, down := targetStatus(m, red)
			c.Details = targets
			if len(down) > 0 {
				// Recoverable: the target may come (back); the scrapes
				// of the others go on, and up = 0 records each failure.
				fail(statusRecoverable, fmt.Errorf("targets down: %s", strings.Join(down, "; ")))
			}
		}
	case "exporter":
		switch sk := s.sinks[id].(type) {
		case *sink.File:
			d := fileDetails{Path: s.cfg.Files[id].Path, State: "ok"}
			if err := sk.Failing(); err != nil {
				d.State = "failing"
				fail(statusRecoverable, err)
				c.Healthy = false // otelstep refuses data meanwhile (GET / answers 503)
			}
			c.Details = d
		case *sink.HTTP:
			c.Details = httpStatus(sk, s.cfg.OTLPHTTP[id].Endpoint, red)
			switch st := sk.Status(); st.State {
			case sink.StateFailing:
				fail(statusRecoverable, errors.New(red.Replace(st.LastError)))
			case sink.StateRefused:
				// The backend will answer the same until someone puts
				// it right (the token, say): what it refuses waits in
				// the JSONL for `otelstep replay`.
				fail(statusPermanent, errors.New(red.Replace(st.LastError)))
			}
		}
	}
	return c
}

// httpStatus is what the status document shows of exporter h, whose
// configured endpoint is endpoint.
func httpStatus(h *sink.HTTP, endpoint string, red *redact.Redactor) httpDetails {
	st, stats := h.Status(), h.Stats()
	d := httpDetails{Endpoint: red.Replace(safeEndpoint(endpoint)), State: st.State, Since: timeOrNil(st.Since),
		LastError: red.Replace(st.LastError), LastStatus: st.LastStatus, LastErrorAt: timeOrNil(st.LastErrorAt),
		QueueBatches: st.QueueBatches, QueueItems: st.QueueItems, QueueBytes: st.QueueBytes,
		Fates: map[string]fateDetails{}, Retries: stats.Retries}
	if st.LastError != "" {
		d.LastErrorSignal = st.LastSignal.String()
	}
	d.ToBackfill = linesDetail(st.Backlog.ToBackfill)
	d.LeftForReplay = linesDetail(st.Backlog.ForReplay)
	for _, f := range sink.Fates() {
		d.Fates[f.String()] = fateDetails{stats.Fates[f].Batches, stats.Fates[f].Items}
	}
	return d
}

// targetStatus is the scrape targets of m after their last scrapes, and
// a line for each one down.
func targetStatus(m *scraper.Manager, red *redact.Redactor) (out []targetDetails, down []string) {
	out = []targetDetails{}
	for _, t := range m.Targets() {
		d := targetDetails{Job: t.Job, Instance: t.Instance, URL: t.URL, Samples: t.Samples}
		if t.Scraped {
			up := t.Up
			d.Up, d.LastScrape, d.LastDuration = &up, timeOrNil(t.LastScrape), t.LastDuration.Round(time.Microsecond).String()
			d.LastError, d.ConsecutiveFailures, d.DownSince = red.Replace(t.LastError), t.ConsecutiveFailures, timeOrNil(t.DownSince)
			if !up {
				down = append(down, t.Job+" "+t.URL+": "+d.LastError)
			}
		}
		out = append(out, d)
	}
	return out, down
}

// timeOrNil is &t, nil for the zero time (shown as absent, not as year 1).
func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// safeEndpoint is an endpoint without what may hold a secret: userinfo,
// query and fragment.
func safeEndpoint(ep string) string {
	u, err := url.Parse(ep)
	if err != nil {
		return "(an endpoint that does not parse)"
	}
	u.User, u.RawQuery, u.Fragment, u.RawFragment, u.ForceQuery = nil, "", "", "", false
	return u.String()
}
