package bench

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protowire"
)

// stubEnv set to 1 makes this test binary a stand-in vmagent (TestMain):
// the vmagent mode is tested where vmagent is not installed.
const stubEnv = "OTELSTEP_BENCH_VMAGENT_STUB"

func TestMain(m *testing.M) {
	if os.Getenv(stubEnv) == "1" {
		os.Exit(vmagentStub(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// vmagentStub does what the bench needs of vmagent with the flags
// VMAgentArgs gives: it reads the scrape jobs from -promscrape.config,
// answers 200 on -httpListenAddr, scrapes each target every interval and
// remote-writes every sample (snappy, as the protocol has it) with up and
// scrape_duration_seconds to -remoteWrite.url; SIGTERM stops it once the
// scrapes under way are sent, as vmagent flushes at its stop.
func vmagentStub(args []string) int {
	fs := flag.NewFlagSet("vmagent-stub", flag.ContinueOnError)
	cfgPath := fs.String("promscrape.config", "", "")
	listen := fs.String("httpListenAddr", "", "")
	rwURL := fs.String("remoteWrite.url", "", "")
	queue := fs.String("remoteWrite.tmpDataPath", "", "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "vmagent-stub: "+format+"\n", a...)
		return 1
	}
	if *cfgPath == "" || *listen == "" || *rwURL == "" || *queue == "" {
		return fail("want -promscrape.config, -httpListenAddr, -remoteWrite.url and -remoteWrite.tmpDataPath: %q", args)
	}
	data, err := os.ReadFile(*cfgPath)
	if err != nil {
		return fail("%v", err)
	}
	var cfg struct {
		ScrapeConfigs []struct {
			JobName        string        `yaml:"job_name"`
			ScrapeInterval time.Duration `yaml:"scrape_interval"`
			StaticConfigs  []struct {
				Targets []string          `yaml:"targets"`
				Labels  map[string]string `yaml:"labels"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return fail("%s: %v", *cfgPath, err)
	}
	if err := os.MkdirAll(*queue, 0o755); err != nil {
		return fail("%v", err)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fail("%v", err)
	}
	go func() { _ = http.Serve(ln, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})) }()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	for _, sc := range cfg.ScrapeConfigs {
		if sc.JobName == "" || sc.ScrapeInterval <= 0 {
			return fail("job %q: scrape_interval %s", sc.JobName, sc.ScrapeInterval)
		}
		for _, st := range sc.StaticConfigs {
			for _, target := range st.Targets {
				base := labels.NewBuilder(labels.FromMap(st.Labels)).Set("job", sc.JobName).Set("instance", target).Labels()
				wg.Go(func() {
					for t := time.NewTicker(sc.ScrapeInterval); ; {
						if err := stubScrape(target, *rwURL, base); err != nil {
							select {
							case errs <- err:
							default:
							}
							stop()
						}
						select {
						case <-ctx.Done():
							return
						case <-t.C:
						}
					}
				})
			}
		}
	}
	wg.Wait()
	select {
	case err := <-errs:
		return fail("%v", err)
	default:
		return 0
	}
}

// stubScrape scrapes one target and remote-writes what it read.
func stubScrape(target, rwURL string, base labels.Labels) error {
	start := time.Now()
	resp, err := http.Get("http://" + target + "/metrics")
	if err != nil {
		return err
	}
	page, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	p, err := textparse.New(page, resp.Header.Get("Content-Type"), labels.NewSymbolTable(), textparse.ParserOptions{})
	if err != nil {
		return err
	}
	now := time.Now().UnixMilli()
	var req []byte
	series := func(ls labels.Labels, v float64) {
		var ts []byte
		ls.Range(func(l labels.Label) {
			var lb []byte
			lb = protowire.AppendTag(lb, 1, protowire.BytesType)
			lb = protowire.AppendString(lb, l.Name)
			lb = protowire.AppendTag(lb, 2, protowire.BytesType)
			lb = protowire.AppendString(lb, l.Value)
			ts = protowire.AppendTag(ts, 1, protowire.BytesType)
			ts = protowire.AppendBytes(ts, lb)
		})
		var sm []byte
		sm = protowire.AppendTag(sm, 1, protowire.Fixed64Type)
		sm = protowire.AppendFixed64(sm, math.Float64bits(v))
		sm = protowire.AppendTag(sm, 2, protowire.VarintType)
		sm = protowire.AppendVarint(sm, uint64(now))
		ts = protowire.AppendTag(ts, 2, protowire.BytesType)
		ts = protowire.AppendBytes(ts, sm)
		req = protowire.AppendTag(req, 1, protowire.BytesType)
		req = protowire.AppendBytes(req, ts)
	}
	with := func(name string) labels.Labels {
		return labels.NewBuilder(base).Set(labels.MetricName, name).Labels()
	}
	var ls labels.Labels
	for {
		e, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if e == textparse.EntrySeries {
			_, _, v := p.Series()
			p.Labels(&ls)
			b := labels.NewBuilder(ls)
			base.Range(func(l labels.Label) { b.Set(l.Name, l.Value) })
			series(b.Labels(), v)
		}
	}
	series(with("up"), 1)
	series(with("scrape_duration_seconds"), time.Since(start).Seconds())
	post, err := http.NewRequest(http.MethodPost, rwURL, bytes.NewReader(snappy.Encode(nil, req)))
	if err != nil {
		return err
	}
	post.Header.Set("Content-Encoding", "snappy")
	post.Header.Set("Content-Type", "application/x-protobuf")
	post.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	resp, err = http.DefaultClient.Do(post)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("remote write: %s", resp.Status)
	}
	return nil
}

// checkVMAgentRun runs bench scrape against the vmagent argv alone and
// checks the row: what the targets served while it ran reached the
// backend by remote write, counted as samples, with its bytes.
func checkVMAgentRun(t *testing.T, argv []string, wantEncoding string) {
	t.Helper()
	page := GenPage(120, 4)
	const count = 2000
	rep, err := RunScrape(context.Background(), ScrapeOptions{Pages: []Page{page}, Copies: 2, Interval: 200 * time.Millisecond,
		Count: count, Impls: []Impl{{Name: "vmagent", Argv: argv, Peer: true, Kind: KindVMAgent}}, Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 1 {
		t.Fatalf("%d rows", len(rep.Results))
	}
	r := rep.Results[0]
	if !strings.HasPrefix(r.BackendProtocol, "remote write "+wantEncoding) {
		t.Errorf("backend received %q, want remote write %s", r.BackendProtocol, wantEncoding)
	}
	if r.Samples < count || r.PeakRSSBytes <= 0 || r.CPUSeconds < 0 {
		t.Errorf("window: %d samples (want at least %d), peak RSS %d, CPU %g s", r.Samples, count, r.PeakRSSBytes, r.CPUSeconds)
	}
	// Every sample served while it ran is at the backend (SIGTERM sends
	// what it scraped), and no more: vmagent's own series are not counted.
	if r.BackendPoints < count || r.Dropped != 0 || r.BadRequests != 0 || r.JSONLPoints != 0 {
		t.Errorf("backend: %d samples, %d dropped, %d bad requests, %d JSONL points", r.BackendPoints, r.Dropped, r.BadRequests, r.JSONLPoints)
	}
	if r.BackendPoints%int64(page.Samples) != 0 {
		t.Errorf("backend: %d samples, not whole pages of %d", r.BackendPoints, page.Samples)
	}
	if r.BackendBytesPerSample <= 0 || r.JSONLBytesPerSample != 0 {
		t.Errorf("bytes per sample: backend %g, JSONL %g", r.BackendBytesPerSample, r.JSONLBytesPerSample)
	}
}

// The vmagent mode against the stand-in: the scrape jobs as
// -promscrape.config, health on the listen address, remote write decoded
// and counted, the stop flushing.
func TestScrapeVMAgentStub(t *testing.T) {
	t.Setenv(stubEnv, "1")
	checkVMAgentRun(t, []string{os.Args[0]}, "snappy")
}

// The same against the real vmagent (VMAGENT, or vmagent on PATH), which
// the bench tells by its build information.
func TestScrapeVMAgent(t *testing.T) {
	path := os.Getenv("VMAGENT")
	if path == "" {
		var err error
		if path, err = exec.LookPath("vmagent"); err != nil {
			t.Skip("vmagent not installed: set VMAGENT to its binary, or put it on PATH")
		}
	}
	if k := DetectPeerKind(path); k != KindVMAgent {
		t.Fatalf("%s detected as %q", path, k)
	}
	checkVMAgentRun(t, []string{path}, "")
}

func TestDetectPeerKind(t *testing.T) {
	for _, c := range []string{os.Args[0], "/no/such/binary", "/bin/sh"} {
		if k := DetectPeerKind(c); k != KindCollector {
			t.Errorf("%s: %q, want collector", c, k)
		}
	}
}

// Frozen targets serve the same bytes at every scrape; live ones, new
// values each time.
func TestTargetsFrozen(t *testing.T) {
	page := GenPage(10, 2)
	// One connection: the target reads a request once its handler for the
	// one before, which renders the next page, has returned.
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	for _, frozen := range []bool{false, true} {
		tg, err := StartTargets([]Page{page}, 1, false, frozen)
		if err != nil {
			t.Fatal(err)
		}
		var bodies [][]byte
		for range 3 {
			resp, err := client.Get("http://" + tg.list[0].addr + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			bodies = append(bodies, b)
		}
		tg.Close()
		for i, b := range bodies {
			want := ShiftValues(page.Body, 1)
			if !frozen {
				want = ShiftValues(page.Body, int64(i+1))
			}
			if !bytes.Equal(b, want) {
				t.Errorf("frozen=%v: scrape %d is not the page shifted by %d:\n%s", frozen, i+1, i+1, b)
			}
		}
	}
}
