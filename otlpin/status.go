package otlpin

import (
	"net"
	"sync/atomic"
	"time"

	"github.com/otelstep/otelstep/pipeline"
	"github.com/otelstep/otelstep/telemetry"
)

// acceptedCount is the requests of one signal and transport the pipelines
// took, and their items (-1 items: not counted, telemetry off).
type acceptedCount struct {
	requests, items atomic.Uint64
}

// countAccepted counts a request of items items of sig over tr as accepted.
func (r *Receiver) countAccepted(sig pipeline.Signal, tr telemetry.Transport, items int) {
	if int(sig) >= len(r.accepted) || int(tr) >= len(r.accepted[0]) {
		return
	}
	c := &r.accepted[sig][tr]
	c.requests.Add(1)
	if items > 0 {
		c.items.Add(uint64(items))
	}
}

// Status is what a receiver shows of itself in otelstep's status document.
type Status struct {
	// The bound addresses, "" when a protocol is not served.
	GRPCEndpoint string `json:"grpc_endpoint,omitempty"`
	HTTPEndpoint string `json:"http_endpoint,omitempty"`
	// Connections open on each listener, and the most it holds at once.
	Connections []ListenerStatus `json:"connections,omitempty"`
	// Accepted: the requests the pipelines took, by signal and transport.
	Accepted []AcceptedStatus `json:"accepted"`
	// Refused: the requests refused, by reason (refusals.go).
	Refused []RefusalStatus `json:"refused"`
	// LastRefusal is the latest of Refused, nil when none was.
	LastRefusal *RefusalStatus `json:"last_refusal,omitempty"`
}

// ListenerStatus is one listener's connections.
type ListenerStatus struct {
	Transport string `json:"transport"`
	Open      int    `json:"open"`
	Max       int    `json:"max"`
	PerPeer   int    `json:"max_per_peer,omitempty"`
	// IdleClosed: idle connections closed to make room for new ones;
	// Refused: new connections closed at once, their peer's all busy
	// (limit.go).
	IdleClosed uint64 `json:"idle_closed"`
	Refused    uint64 `json:"refused"`
}

// AcceptedStatus is the accepted requests of one signal and transport.
type AcceptedStatus struct {
	Signal    string `json:"signal"`
	Transport string `json:"transport"`
	Requests  uint64 `json:"requests"`
	Items     uint64 `json:"items"`
}

// Status is the receiver's addresses and counts as they are now.
func (r *Receiver) Status() Status {
	var st Status
	r.mu.Lock()
	for _, l := range []struct {
		tr string
		ln net.Listener
		p  *string
	}{{"grpc", r.grpcLn, &st.GRPCEndpoint}, {"http", r.httpLn, &st.HTTPEndpoint}} {
		if l.ln == nil {
			continue
		}
		*l.p = l.ln.Addr().String()
		if lim, ok := l.ln.(*Limited); ok {
			st.Connections = append(st.Connections, ListenerStatus{Transport: l.tr, Open: lim.Open(), Max: lim.Max(), PerPeer: lim.perPeer,
				IdleClosed: lim.evictions.Load(), Refused: lim.refusals.Load()})
		}
	}
	r.mu.Unlock()
	st.Accepted = []AcceptedStatus{}
	for _, sig := range []pipeline.Signal{pipeline.Metrics, pipeline.Traces, pipeline.Logs} {
		if r.consumer(sig) == nil {
			continue
		}
		for _, tr := range []telemetry.Transport{telemetry.GRPC, telemetry.HTTP} {
			c := &r.accepted[sig][tr]
			st.Accepted = append(st.Accepted, AcceptedStatus{Signal: sig.String(), Transport: transportName(tr), Requests: c.requests.Load(), Items: c.items.Load()})
		}
	}
	st.Refused = r.refusals.status()
	var last time.Time
	for i := range st.Refused {
		if f := &st.Refused[i]; f.Last.After(last) {
			last, st.LastRefusal = f.Last, f
		}
	}
	if st.LastRefusal != nil {
		lr := *st.LastRefusal
		st.LastRefusal = &lr
	}
	return st
}
