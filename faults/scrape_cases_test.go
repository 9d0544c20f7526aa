package faults

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/otelstep/otelstep/internal/proctest"
	"github.com/otelstep/otelstep/otlpwire"
)

// pageTarget is a scrape target on loopback that serves one page, as
// many times as it is asked.
type pageTarget struct {
	ts      *httptest.Server
	page    []byte
	mu      sync.Mutex
	answers int
}

func newPageTarget(t testing.TB, page []byte) *pageTarget {
	pt := &pageTarget{page: page}
	pt.ts = httptest.NewServer(pt)
	t.Cleanup(pt.ts.Close)
	return pt
}

func (pt *pageTarget) Addr() string { return strings.TrimPrefix(pt.ts.URL, "http://") }

func (pt *pageTarget) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	if _, err := w.Write(pt.page); err == nil {
		pt.mu.Lock()
		pt.answers++
		pt.mu.Unlock()
	}
}

// Answers is the number of times the page was served whole.
func (pt *pageTarget) Answers() int {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	return pt.answers
}

// upByInstance is every up point in the metrics JSONL of dir, by the
// service.instance.id of its resource. strict fails on a line that is not
// whole; otherwise a last line still being written is left for later.
func upByInstance(dir string, strict bool) (map[string][]float64, error) {
	b, err := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !strict {
		b = b[:bytes.LastIndexByte(b, '\n')+1]
	}
	up := map[string][]float64{}
	err = readLines(bytes.NewReader(b), func(n int, line []byte) error {
		req, err := otlpwire.DecodeMetrics(line)
		if err != nil {
			return fmt.Errorf("metrics.jsonl line %d: %w", n, err)
		}
		for _, rm := range req.ResourceMetrics {
			inst := ""
			for _, kv := range rm.Resource.GetAttributes() {
				if kv.Key == "service.instance.id" {
					inst = kv.Value.GetStringValue()
				}
			}
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					if m.Name != "up" {
						continue
					}
					for _, p := range m.GetGauge().GetDataPoints() {
						if p.Flags&uint32(metricspb.DataPointFlags_DATA_POINT_FLAGS_NO_RECORDED_VALUE_MASK) == 0 {
							up[inst] = append(up[inst], p.GetAsDouble())
						}
					}
				}
			}
		}
		return nil
	})
	return up, err
}

// all reports whether vs holds at least n values and every one is v.
func all(vs []float64, v float64, n int) bool {
	if len(vs) < n {
		return false
	}
	for _, x := range vs {
		if x != v {
			return false
		}
	}
	return true
}

// A scrape target serving a page that breaks a limit (a name or label
// value past the 16 MiB the labels library holds, more labels than
// label_limit, more samples than sample_limit) fails its scrapes and
// nothing else: otelstep stays up, its OTLP receivers go on taking data
// and everything they answered 200 reaches the JSONL, the target's up is
// 0 in the JSONL with the reason in the log, the job's other target is
// scraped as ever, and SIGTERM ends it with exit 0.
func TestHostileScrapeTarget(t *testing.T) {
	const giantLen = 16<<20 + 1
	many := func(n int, line func(i int) string) []byte {
		var b strings.Builder
		b.WriteString("# TYPE hostile gauge\n")
		for i := range n {
			b.WriteString(line(i))
		}
		return []byte(b.String())
	}
	// The scrape timeout covers converting the page, whose time for a
	// 16 MiB page grows with the machine's load: a scrape cut by the
	// default 1 s timeout fails for that reason instead of the one
	// checked. Those cases get a scrape interval (and so timeout) with
	// room for a loaded CI runner.
	const giantInterval = 5 * time.Second
	cases := []struct {
		name     string
		page     []byte
		reason   string
		interval time.Duration // the scrape interval and timeout; 0: Setup's default
	}{
		{"giant label value", []byte("# TYPE hostile gauge\nhostile{v=\"" + strings.Repeat("v", giantLen) + "\"} 1\n"),
			"a name, label or value of 16777217 bytes", giantInterval},
		{"giant metric name", []byte("hostile 1\n" + strings.Repeat("n", giantLen) + " 1\n"),
			"a name, label or value of 16777217 bytes", giantInterval},
		{"too many labels", many(1, func(int) string {
			var l []string
			for i := range 20 {
				l = append(l, fmt.Sprintf("l%d=\"%d\"", i, i))
			}
			return "hostile{" + strings.Join(l, ",") + "} 1\n"
		}), "label_limit exceeded (metric: hostile, number of labels: 23, limit: 10)", 0},
		{"sample_limit exceeded", many(size(500, 50000), func(i int) string { return fmt.Sprintf("hostile{i=\"%d\"} %d\n", i, i) }),
			"sample limit exceeded (limit: 100)", 0},
	}
	for _, tc := range cases {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			hostile := newPageTarget(t, tc.page)
			steady := NewTarget(t, 10)
			n := configure(t, Setup{Targets: []string{hostile.Addr(), steady.Addr()},
				ScrapeConfig: "        sample_limit: 100\n        label_limit: 10\n", ScrapeInterval: tc.interval})
			p := n.start(t)
			l := newLedger()
			exp := httpExporter(t, n.HTTP)
			batches, scrapes := 0, size(3, 20)
			waitFor(t, fmt.Sprintf("%d failed scrapes of the hostile target in the JSONL, the steady one's up", scrapes), func() bool {
				if err := l.export(exp, fmt.Sprintf("during%d", batches), 10); err != nil {
					t.Errorf("export while a target is hostile: %v", err)
				}
				batches++
				up, err := upByInstance(n.Otel, false)
				if err != nil {
					t.Fatal(err)
				}
				return hostile.Answers() >= scrapes && all(up[hostile.Addr()], 0, scrapes) && all(up[steady.Addr()], 1, 1)
			})
			if code := proctest.Health(n.Health); code != http.StatusOK {
				t.Errorf("health answers %d", code)
			}
			if err := l.export(exp, "after", 10); err != nil {
				t.Errorf("export after the hostile scrapes: %v", err)
			}
			e := p.Stop(t)
			figure := checkExit(t, p, e)
			answered := l.Answered()
			got := n.jsonl(t)
			lost := got.Missing(answered)
			up, err := upByInstance(n.Otel, true)
			if err != nil {
				t.Fatal(err)
			}
			if !all(up[hostile.Addr()], 0, scrapes) || !all(up[steady.Addr()], 1, scrapes) {
				t.Errorf("up in the JSONL: hostile %v, steady %v", up[hostile.Addr()], up[steady.Addr()])
			}
			if got.Points["fault_target_value"] < 10*scrapes {
				t.Errorf("the steady target's points: %d, want %d or more", got.Points["fault_target_value"], 10*scrapes)
			}
			if got.Points["hostile"] != 0 {
				t.Errorf("%d points of the hostile page reached the JSONL", got.Points["hostile"])
			}
			out := p.Out.String()
			failed := 0
			for _, line := range strings.Split(out, "\n") {
				if strings.Contains(line, "scrape failed") && strings.Contains(line, hostile.Addr()) {
					failed++
					if !strings.Contains(line, tc.reason) || !strings.Contains(line, "target") {
						t.Errorf("the failure's log line does not give the reason %q:\n%.1000s", tc.reason, line)
					}
				}
			}
			// One line for the run of failures (the next would be a
			// summary minutes later), however many scrapes failed.
			if failed != 1 || len(out) > 1<<20 {
				t.Errorf("%d scrape failures logged for %d failed scrapes, want 1, in %d bytes of output:\n%.3000s", failed, len(up[hostile.Addr()]), len(out), out)
			}
			n.checkNoToken(t, p)
			report(t, fmt.Sprintf("%d KiB page: %d scrapes up=0 (%q), steady target up=1; %d spans answered 200 meanwhile; %s",
				len(tc.page)>>10, len(up[hostile.Addr()]), tc.reason, answered.Total(), figure), lost)
		})
	}
}

// A target that is down (nothing listens on its port) and then comes up:
// up = 0 in the JSONL at every failed scrape, one WARN with the reason,
// no line a scrape (a summary at most every 5 minutes), and one INFO when
// it is back, counting the failed scrapes; the job's other target is
// scraped as ever; exit 0.
func TestScrapeTargetDownThenUp(t *testing.T) {
	p0, err := ports.Take(1)
	if err != nil {
		t.Fatal(err)
	}
	addr := p0[0]
	steady := NewTarget(t, 10)
	n := configure(t, Setup{Targets: []string{addr, steady.Addr()}})
	start := time.Now()
	p := n.start(t)
	down := size(5, 60)
	waitFor(t, fmt.Sprintf("%d failed scrapes of the absent target in the JSONL", down), func() bool {
		up, err := upByInstance(n.Otel, false)
		if err != nil {
			t.Fatal(err)
		}
		return all(up[addr], 0, down)
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	back := httptest.NewUnstartedServer(NewTarget(t, 10))
	back.Listener.Close()
	back.Listener = ln
	back.Start()
	t.Cleanup(back.Close)
	waitFor(t, "the target up in the JSONL and its recovery in the log", func() bool {
		up, err := upByInstance(n.Otel, false)
		if err != nil {
			t.Fatal(err)
		}
		v := up[addr]
		return len(v) > 0 && v[len(v)-1] == 1 && strings.Contains(p.Out.String(), "scrape target up again")
	})
	ran := time.Since(start)
	e := p.Stop(t)
	figure := checkExit(t, p, e)
	up, err := upByInstance(n.Otel, true)
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, v := range up[addr] {
		if v == 0 {
			failed++
		}
	}
	var warns, sums, ups []string
	for _, line := range strings.Split(p.Out.String(), "\n") {
		if !strings.Contains(line, addr) {
			continue
		}
		switch {
		case strings.Contains(line, "level=WARN") && strings.Contains(line, "target down"):
			warns = append(warns, line)
		case strings.Contains(line, "still down"):
			sums = append(sums, line)
		case strings.Contains(line, "level=INFO") && strings.Contains(line, "up again"):
			ups = append(ups, line)
		case strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR"):
			t.Errorf("another line about the target: %s", line)
		}
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "connection refused") {
		t.Errorf("want one WARN with the reason, got %q", warns)
	}
	if maxSums := int(ran / (5 * time.Minute)); len(sums) > maxSums {
		t.Errorf("%d summaries in %v, want at most one every 5 minutes", len(sums), ran.Round(time.Second))
	}
	if len(ups) != 1 || !strings.Contains(ups[0], fmt.Sprintf("failed_scrapes=%d ", failed)) && !strings.HasSuffix(ups[0], fmt.Sprintf("failed_scrapes=%d", failed)) {
		t.Errorf("want one INFO counting %d failed scrapes, got %q", failed, ups)
	}
	if !all(up[steady.Addr()], 1, failed) {
		t.Errorf("the steady target's up: %v", up[steady.Addr()])
	}
	n.checkNoToken(t, p)
	recovery := ""
	if len(ups) > 0 {
		recovery = ups[0][strings.Index(ups[0], "down_for="):]
	}
	report(t, fmt.Sprintf("a target down for %d scrapes (connection refused), then up: up = 0 at each in the JSONL; log: %d WARN, %d summaries, %d INFO (%s); %s",
		failed, len(warns), len(sums), len(ups), recovery, figure), 0)
}
