package bench

import (
	"bytes"
	"debug/buildinfo"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protowire"
)

// PeerKind is what a peer is, which decides how it is given the scenario.
type PeerKind string

const (
	// KindCollector takes the scenario's collector config (--config FILE):
	// the OpenTelemetry Collector, or otelstep.
	KindCollector PeerKind = "collector"
	// KindVMAgent is VictoriaMetrics' vmagent, a scraper that sends
	// Prometheus remote write: it is given the scenario's scrape jobs and
	// remote-writes to the backend (VMAgentArgs). It has no OTLP receiver,
	// no JSONL and no processors, so it measures scraping alone.
	KindVMAgent PeerKind = "vmagent"
)

// DetectPeerKind tells vmagent from a collector by the binary's Go build
// information: vmagent is built from VictoriaMetrics' app/vmagent package
// (its -version is empty when built with go install, so the build info is
// what names it). A binary that is not found, or not a Go binary, is taken
// for a collector, as before there were kinds.
func DetectPeerKind(command string) PeerKind {
	path, err := exec.LookPath(command)
	if err != nil {
		return KindCollector
	}
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return KindCollector
	}
	if strings.HasSuffix(bi.Path, "/app/vmagent") {
		return KindVMAgent
	}
	return KindCollector
}

// RemoteWritePath is where the backend takes Prometheus remote write.
const RemoteWritePath = "/api/v1/write"

// VMAgentArgs writes the scenario's scrape jobs as vmagent's
// -promscrape.config in s.Dir and returns its flags: listen on the health
// endpoint (its / answers 200 once it runs), remote-write to the backend,
// keep its queue in s.Dir.
func (s Scenario) VMAgentArgs() ([]string, error) {
	if len(s.Jobs) == 0 {
		return nil, fmt.Errorf("vmagent: no scrape jobs: it only scrapes (bench scrape)")
	}
	type staticConfig struct {
		Targets []string          `yaml:"targets"`
		Labels  map[string]string `yaml:"labels"`
	}
	type scrapeConfig struct {
		JobName        string         `yaml:"job_name"`
		ScrapeInterval string         `yaml:"scrape_interval"`
		ScrapeTimeout  string         `yaml:"scrape_timeout"`
		StaticConfigs  []staticConfig `yaml:"static_configs"`
	}
	var cfg struct {
		ScrapeConfigs []scrapeConfig `yaml:"scrape_configs"`
	}
	jobs := make([]string, 0, len(s.Jobs))
	for j := range s.Jobs {
		jobs = append(jobs, j)
	}
	sort.Strings(jobs)
	for _, j := range jobs {
		cfg.ScrapeConfigs = append(cfg.ScrapeConfigs, scrapeConfig{JobName: j, ScrapeInterval: s.Interval.String(), ScrapeTimeout: s.Interval.String(),
			StaticConfigs: []staticConfig{{Targets: s.Jobs[j], Labels: map[string]string{"gym_service": "bench"}}}})
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(s.Dir, "promscrape.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return nil, err
	}
	return []string{
		"-promscrape.config=" + path,
		"-httpListenAddr=" + s.Health,
		"-remoteWrite.url=" + s.Backend + RemoteWritePath,
		"-remoteWrite.tmpDataPath=" + filepath.Join(s.Dir, "vmagent-queue"),
	}, nil
}

// vmagentOwn are the names of the series vmagent adds to every scrape
// (up, scrape_duration_seconds, scrape_samples_scraped, ...): not the
// page's samples.
func vmagentOwn(name []byte) bool {
	return string(name) == "up" || bytes.HasPrefix(name, []byte("scrape_"))
}

var zstdDecoder, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))

// remoteWrite takes one Prometheus remote-write request: snappy (the
// protocol's) or zstd (VictoriaMetrics' own, which vmagent sends a backend
// that does not refuse it) around a WriteRequest. It counts the request,
// its bytes and the page's samples in it, keeps the scrape durations, and
// answers 204 as a remote-write backend does.
func (b *Backend) remoteWrite(w http.ResponseWriter, r *http.Request) {
	wire, err := io.ReadAll(r.Body)
	if err != nil {
		b.Bad.Add(1)
		http.Error(w, err.Error(), 400)
		return
	}
	var data []byte
	enc := r.Header.Get("Content-Encoding")
	switch enc {
	case "zstd":
		data, err = zstdDecoder.DecodeAll(wire, nil)
	case "snappy", "":
		enc = "snappy"
		data, err = snappy.Decode(nil, wire)
	default:
		err = fmt.Errorf("content encoding %q", enc)
	}
	var samples int64
	var durs []float64
	if err == nil {
		samples, durs, err = writeRequestSamples(data)
	}
	if err != nil {
		b.Bad.Add(1)
		http.Error(w, "remote write: "+err.Error(), 400)
		return
	}
	b.rw.requests.Add(1)
	b.rw.items.Add(samples)
	b.rw.wire.Add(int64(len(wire)))
	b.rw.raw.Add(int64(len(data)))
	b.rwEncoding.Store(enc)
	if len(durs) > 0 {
		now := time.Now()
		b.mu.Lock()
		for _, d := range durs {
			b.durations = append(b.durations, timedValue{now, d})
		}
		b.mu.Unlock()
	}
	w.WriteHeader(http.StatusNoContent)
}

// RemoteWrite returns the remote-write counts so far: Items are the pages'
// samples (the sender's own series, such as up, left out), Wire the
// request bodies as sent, Raw the protobuf; and the last request's
// encoding (snappy or zstd), "" before any.
func (b *Backend) RemoteWrite() (SignalTotals, string) {
	enc, _ := b.rwEncoding.Load().(string)
	return SignalTotals{Requests: b.rw.requests.Load(), Items: b.rw.items.Load(), Wire: b.rw.wire.Load(), Raw: b.rw.raw.Load()}, enc
}

// writeRequestSamples walks a remote-write WriteRequest (prompb: field 1
// its time series, each with labels in field 1 and samples in field 2) and
// counts the samples of series that are not the sender's own
// (vmagentOwn); it returns the values of scrape_duration_seconds.
func writeRequestSamples(b []byte) (samples int64, durations []float64, err error) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, nil, protowire.ParseError(n)
		}
		b = b[n:]
		if num != 1 || typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return 0, nil, protowire.ParseError(n)
			}
			b = b[n:]
			continue
		}
		ts, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return 0, nil, protowire.ParseError(n)
		}
		b = b[n:]
		name, vals, err := timeSeries(ts)
		if err != nil {
			return 0, nil, err
		}
		switch {
		case string(name) == "scrape_duration_seconds":
			durations = append(durations, vals...)
		case !vmagentOwn(name):
			samples += int64(len(vals))
		}
	}
	return samples, durations, nil
}

// timeSeries returns a TimeSeries' __name__ and its samples' values.
func timeSeries(b []byte) (name []byte, vals []float64, err error) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, nil, protowire.ParseError(n)
		}
		b = b[n:]
		if typ != protowire.BytesType || (num != 1 && num != 2) {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return nil, nil, protowire.ParseError(n)
			}
			b = b[n:]
			continue
		}
		m, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return nil, nil, protowire.ParseError(n)
		}
		b = b[n:]
		if num == 1 { // Label{name = 1, value = 2}
			var k, v []byte
			if err := fields(m, func(f protowire.Number, x []byte) {
				if f == 1 {
					k = x
				} else if f == 2 {
					v = x
				}
			}); err != nil {
				return nil, nil, err
			}
			if string(k) == "__name__" {
				name = v
			}
			continue
		}
		// Sample{value = 1 (double), timestamp = 2}
		var v float64
		for len(m) > 0 {
			f, t, n := protowire.ConsumeTag(m)
			if n < 0 {
				return nil, nil, protowire.ParseError(n)
			}
			m = m[n:]
			if f == 1 && t == protowire.Fixed64Type {
				u, n := protowire.ConsumeFixed64(m)
				if n < 0 {
					return nil, nil, protowire.ParseError(n)
				}
				v = math.Float64frombits(u)
				m = m[n:]
				continue
			}
			if n = protowire.ConsumeFieldValue(f, t, m); n < 0 {
				return nil, nil, protowire.ParseError(n)
			}
			m = m[n:]
		}
		vals = append(vals, v)
	}
	return name, vals, nil
}

// fields calls f with each length-delimited field of message m.
func fields(m []byte, f func(protowire.Number, []byte)) error {
	for len(m) > 0 {
		num, typ, n := protowire.ConsumeTag(m)
		if n < 0 {
			return protowire.ParseError(n)
		}
		m = m[n:]
		if typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(m)
			if n < 0 {
				return protowire.ParseError(n)
			}
			f(num, v)
			m = m[n:]
			continue
		}
		if n = protowire.ConsumeFieldValue(num, typ, m); n < 0 {
			return protowire.ParseError(n)
		}
		m = m[n:]
	}
	return nil
}
