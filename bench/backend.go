package bench

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/otelstep/otelstep/otlpwire"
	"github.com/otelstep/otelstep/pipeline"
)

// Backend is an OTLP/HTTP backend on loopback that decodes everything it
// is sent (so a broken request is seen) and keeps only counts: per signal
// the requests, items, wire and decompressed bytes, and the
// scrape_duration_seconds values the scrapers reported. It takes
// Prometheus remote write too, on RemoteWritePath (RemoteWrite).
type Backend struct {
	srv  *http.Server
	addr string

	Bad     atomic.Int64
	signals [3]signalCounters // indexed by pipeline.Signal
	// rw counts Prometheus remote write (vmagent's), its items the
	// pages' samples; rwEncoding is its last request's encoding.
	rw         signalCounters
	rwEncoding atomic.Value

	mu        sync.Mutex
	durations []timedValue
}

type signalCounters struct {
	requests, items, wire, raw atomic.Int64
}

// SignalTotals is what the backend decoded for one signal: Wire is the
// request bodies as sent (compressed), Raw the protobuf after
// decompression. Items/Requests is the sender's batch size, Raw/Items its
// encoding, Wire/Raw its compression.
type SignalTotals struct {
	Requests, Items, Wire, Raw int64
}

// Totals returns the counts so far for sig.
func (b *Backend) Totals(sig pipeline.Signal) SignalTotals {
	c := &b.signals[sig]
	return SignalTotals{Requests: c.requests.Load(), Items: c.items.Load(), Wire: c.wire.Load(), Raw: c.raw.Load()}
}

type timedValue struct {
	at time.Time
	v  float64
}

// StartBackend listens on a loopback port.
func StartBackend() (*Backend, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("backend: %w", err)
	}
	b := &Backend{addr: ln.Addr().String()}
	b.srv = &http.Server{Handler: b}
	go func() { _ = b.srv.Serve(ln) }()
	return b, nil
}

// URL is the backend's base URL.
func (b *Backend) URL() string { return "http://" + b.addr }

// Close stops it.
func (b *Backend) Close() { _ = b.srv.Close() }

var gzipReaders sync.Pool

func (b *Backend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == RemoteWritePath {
		b.remoteWrite(w, r)
		return
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		b.Bad.Add(1)
		http.Error(w, err.Error(), 400)
		return
	}
	wire := int64(len(raw))
	data := raw
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, _ := gzipReaders.Get().(*gzip.Reader)
		if zr == nil {
			zr = new(gzip.Reader)
		}
		if err := zr.Reset(bytes.NewReader(raw)); err == nil {
			data, err = io.ReadAll(zr)
		}
		gzipReaders.Put(zr)
		if err != nil {
			b.Bad.Add(1)
			http.Error(w, err.Error(), 400)
			return
		}
	}
	sig, ok := pipeline.SignalOfPath(r.URL.Path)
	if !ok {
		http.NotFound(w, r)
		return
	}
	batch, err := otlpwire.UnmarshalRequest(sig, data)
	if err != nil {
		b.Bad.Add(1)
		http.Error(w, err.Error(), 400)
		return
	}
	c := &b.signals[sig]
	c.requests.Add(1)
	c.items.Add(int64(batch.Items))
	c.wire.Add(wire)
	c.raw.Add(int64(len(data)))
	if sig == pipeline.Metrics {
		now := time.Now()
		var durs []timedValue
		for _, rm := range batch.Metrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					if m.Name == "scrape_duration_seconds" {
						for _, p := range m.GetGauge().GetDataPoints() {
							durs = append(durs, timedValue{now, p.GetAsDouble()})
						}
					}
				}
			}
		}
		if len(durs) > 0 {
			b.mu.Lock()
			b.durations = append(b.durations, durs...)
			b.mu.Unlock()
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
}

// ScrapeDurations returns the p50 and p99 of the scrape_duration_seconds
// points that arrived in [from, to).
func (b *Backend) ScrapeDurations(from, to time.Time) (p50, p99 float64, n int) {
	b.mu.Lock()
	var vs []float64
	for _, d := range b.durations {
		if !d.at.Before(from) && d.at.Before(to) {
			vs = append(vs, d.v)
		}
	}
	b.mu.Unlock()
	if len(vs) == 0 {
		return 0, 0, 0
	}
	sort.Float64s(vs)
	q := func(f float64) float64 { return vs[min(len(vs)-1, int(f*float64(len(vs))))] }
	return q(0.5), q(0.99), len(vs)
}
