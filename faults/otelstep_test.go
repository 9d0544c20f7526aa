package faults

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/otelstep/otelstep/internal/proctest"
)

// token is the ingest token the configs stamp on every resource; it must
// appear in no log line and no file but the config (which names only its
// variable).
const token = "faults-Secret-Token-5d1e8b"

const patience = proctest.Patience

// rssBound is the peak resident set every case must stay under: a job's
// otelstep is promised to stay under a few hundred MB whatever the input.
const rssBound = 256 << 20

// Setup is what a case's config holds beside the OTLP receivers (gRPC and
// HTTP), the health endpoint and the JSONL files of every signal.
type Setup struct {
	// Backend is the OTLP/HTTP backend's base URL; "" for none.
	Backend string
	// Exporter is YAML added under the otlp_http exporter (indented by
	// four spaces), e.g. retry_on_failure.
	Exporter string
	// Targets are host:port scrape targets of one job, "target".
	Targets []string
	// ScrapeInterval and ScrapeTimeout of that job; 0: 1s and the
	// interval.
	ScrapeInterval, ScrapeTimeout time.Duration
	// ScrapeConfig is YAML added to that job's scrape config (indented by
	// eight spaces), e.g. sample_limit.
	ScrapeConfig string
	// Prometheus is YAML added under receivers.prometheus beside its
	// config (indented by four spaces), e.g. memory_limit_mib.
	Prometheus string
	// OTLPHTTP is YAML added under receivers.otlp.protocols.http, GRPC
	// under grpc (indented by eight spaces).
	OTLPHTTP, OTLPGRPC string
	// GRPCAddr, if set, is the gRPC listener's address instead of a free
	// port.
	GRPCAddr string
}

// Node is one configured otelstep: its config and addresses.
type Node struct {
	Dir, Config        string // the case's folder and the config in it
	Otel               string // the JSONL folder
	Health, GRPC, HTTP string // host:port
	Env                []string
}

// configure writes s's config into a new folder.
func configure(t testing.TB, s Setup) *Node {
	t.Helper()
	p, err := ports.Take(3)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	n := &Node{Dir: dir, Config: filepath.Join(dir, "collector.yaml"), Otel: filepath.Join(dir, "otel"),
		Health: p[0], GRPC: p[1], HTTP: p[2], Env: []string{"OTEL_TOKEN=" + token}}
	if s.GRPCAddr != "" {
		n.GRPC = s.GRPCAddr
	}
	var b strings.Builder
	fmt.Fprintf(&b, "extensions:\n  health_check:\n    endpoint: %s\nreceivers:\n", n.Health)
	fmt.Fprintf(&b, "  otlp:\n    protocols:\n      grpc:\n        endpoint: %s\n%s      http:\n        endpoint: %s\n%s", n.GRPC, s.OTLPGRPC, n.HTTP, s.OTLPHTTP)
	if len(s.Targets) > 0 {
		interval, timeout := s.ScrapeInterval, s.ScrapeTimeout
		if interval == 0 {
			interval = time.Second
		}
		if timeout == 0 {
			timeout = interval
		}
		fmt.Fprintf(&b, "  prometheus:\n%s    config:\n      scrape_configs:\n      - job_name: target\n        scrape_interval: %s\n        scrape_timeout: %s\n%s        static_configs:\n        - targets: [%s]\n",
			s.Prometheus, interval, timeout, s.ScrapeConfig, strings.Join(s.Targets, ", "))
	}
	b.WriteString("processors:\n  batch: {}\n  resource:\n    attributes:\n    - {key: Authorization, value: \"${env:OTEL_TOKEN}\", action: upsert}\nexporters:\n")
	exporters := "[file/SIGNAL]"
	if s.Backend != "" {
		fmt.Fprintf(&b, "  otlp_http:\n    endpoint: %s\n    headers:\n      Authorization: Bearer ${env:OTEL_TOKEN}\n%s", s.Backend, s.Exporter)
		exporters = "[otlp_http, file/SIGNAL]"
	}
	for _, sig := range []string{"metrics", "traces", "logs"} {
		fmt.Fprintf(&b, "  file/%s:\n    path: %s\n", sig, filepath.Join(n.Otel, sig+".jsonl"))
	}
	b.WriteString("service:\n  extensions: [health_check]\n  pipelines:\n")
	for _, sig := range []string{"metrics", "traces", "logs"} {
		receivers := "[otlp]"
		if sig == "metrics" && len(s.Targets) > 0 {
			receivers = "[otlp, prometheus]"
		}
		fmt.Fprintf(&b, "    %s:\n      receivers: %s\n      processors: [resource, batch]\n      exporters: %s\n", sig, receivers, strings.ReplaceAll(exporters, "SIGNAL", sig))
	}
	if err := os.WriteFile(n.Config, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return n
}

// start runs otelstep on n's config and waits until it is healthy.
func (n *Node) start(t testing.TB) *proctest.Process {
	t.Helper()
	return proctest.Start(t, otelstepBin, n.Config, n.Health, n.Env...)
}

// jsonl reads what is in n's JSONL files, failing the test on a line that
// is not whole or does not decode.
func (n *Node) jsonl(t testing.TB) Items {
	t.Helper()
	it, err := readJSONL(n.Otel)
	if err != nil {
		t.Fatal(err)
	}
	return it
}

// statusDoc decodes the status document of the health endpoint health
// into doc and returns it as read, failing the test if it cannot.
func statusDoc(t testing.TB, health string, doc any) []byte {
	t.Helper()
	resp, err := http.Get("http://" + health + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("status document: %v", err)
	}
	if err := json.Unmarshal(b, doc); err != nil {
		t.Fatalf("status document: %v\n%s", err, b)
	}
	return b
}

// checkNoToken fails the test if the token is in n's folder (but the
// config) or in p's output.
func (n *Node) checkNoToken(t testing.TB, p *proctest.Process) {
	t.Helper()
	proctest.AssertNoToken(t, token, n.Dir, n.Config, p.Out.String())
}

// report logs the case's row of the closing table and fails the test when
// lost is not 0.
func report(t testing.TB, figure string, lost int) {
	t.Helper()
	t.Logf("| %s | %s | %d |", t.Name(), figure, lost)
	if lost != 0 {
		t.Errorf("lost %d items answered 200", lost)
	}
}

// checkExit fails the test unless e is exit 0 within the stop budget and
// under rssBound, and says so as a figure.
func checkExit(t testing.TB, p *proctest.Process, e proctest.Exit) string {
	t.Helper()
	if e.Code != 0 {
		t.Errorf("exit %d, want 0; output:\n%s", e.Code, p.Out.String())
	}
	if e.Took >= proctest.StopBudget {
		t.Errorf("stop took %v", e.Took)
	}
	if e.PeakRSS >= rssBound {
		t.Errorf("peak RSS %d MiB, bound %d MiB", e.PeakRSS>>20, rssBound>>20)
	}
	return fmt.Sprintf("exit %d, stop %.1f s, peak RSS %d MiB", e.Code, e.Took.Seconds(), e.PeakRSS>>20)
}
