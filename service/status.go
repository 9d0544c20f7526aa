package service

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/otelstep/otelstep/redact"
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

// httpDetails is an OTLP/HTTP exporter's.
type httpDetails struct {
	Endpoint      string `json:"endpoint"`
	SentBatches   uint64 `json:"sent_batches"`
	SentItems     uint64 `json:"sent_items"`
	FailedBatches uint64 `json:"failed_batches"`
	Dropped       uint64 `json:"dropped_batches"`
	Retries       uint64 `json:"retries"`
}

// targetDetails is one scrape target's.
type targetDetails struct {
	Job     string `json:"job"`
	Target  string `json:"target"`
	Up      *bool  `json:"up,omitempty"` // nil before its first scrape
	Scraped string `json:"last_scrape,omitempty"`
	Error   string `json:"last_error,omitempty"`
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
	red := redact.New(s.cfg.Secrets...)
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
		if _, ok := s.scraperByID[id]; ok {
			c.Details = s.targetStatus(id)
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
			st := sk.Stats()
			c.Details = httpDetails{Endpoint: red.Replace(safeEndpoint(s.cfg.OTLPHTTP[id].Endpoint)),
				SentBatches: st.SentBatches, SentItems: st.SentItems, FailedBatches: st.Failed, Dropped: st.Dropped, Retries: st.Retries}
		}
	}
	return c
}

// targetStatus is the scrape targets of prometheus receiver id, as its
// config lists them.
func (s *Service) targetStatus(id string) []targetDetails {
	var out []targetDetails
	for _, sc := range s.cfg.Prometheus[id].ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			for _, addr := range st.Targets {
				out = append(out, targetDetails{Job: sc.JobName, Target: addr})
			}
		}
	}
	return out
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
