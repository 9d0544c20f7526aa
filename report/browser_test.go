package report

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// findChromium returns Debian's chromium, or skips the test saying why;
// where CI promised it (OTELSTEP_BROWSER_REQUIRED=1, set by .ci/run) its
// absence fails the test instead.
func findChromium(t *testing.T) string {
	t.Helper()
	for _, c := range []string{os.Getenv("OTELSTEP_CHROMIUM"), "chromium", "chromium-browser", "/usr/bin/chromium"} {
		if c == "" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	if os.Getenv("OTELSTEP_BROWSER_REQUIRED") == "1" {
		t.Fatal("chromium not found, and OTELSTEP_BROWSER_REQUIRED=1 says it must be (apt-get install chromium, or OTELSTEP_CHROMIUM=PATH)")
	}
	t.Skip("chromium not found: the page is not opened in a browser (apt-get install chromium, or OTELSTEP_CHROMIUM=PATH; .ci/run installs it)")
	return ""
}

// pageProbe is what the test reads of an opened page.
type pageProbe struct {
	Panels map[string]struct {
		Canvas bool `json:"canvas"`
		Points int  `json:"points"`
		Series int  `json:"series"`
		Inked  int  `json:"inked"` // coloured (not grey) pixels on the canvas: the series' lines
	} `json:"panels"`
	Jobs    int    `json:"jobs"`
	Compare bool   `json:"compare"`
	Other   int    `json:"other"`
	Clicked string `json:"clicked"`
	ClickPt int    `json:"clickPoints"`
}

const probeJS = `(() => {
  const out = {panels: {}, jobs: document.querySelectorAll("[data-job]").length,
    compare: !!document.querySelector("[data-table=compare]"), other: document.querySelectorAll("#other li").length};
  document.querySelectorAll("[data-panel]").forEach(el => {
    const id = el.dataset.panel, u = window.reportCharts[id], c = el.querySelector("canvas");
    let inked = 0;
    if (c) {
      const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
      for (let i = 0; i < d.length; i += 4) if (d[i+3] > 0 && Math.max(d[i], d[i+1], d[i+2]) - Math.min(d[i], d[i+1], d[i+2]) > 60) inked++;
    }
    out.panels[id] = {canvas: !!c, series: u ? u.data.length - 1 : 0, inked: inked,
      points: u ? u.data.slice(1).reduce((n, s) => n + s.filter(v => v != null).length, 0) : 0};
  });
  const li = [...document.querySelectorAll("#other li")].find(l => !l.textContent.includes("no values"));
  if (li) {
    li.click();
    const u = window.reportCharts[li.dataset.metric];
    out.clicked = li.dataset.metric;
    out.clickPoints = u ? u.data.slice(1).reduce((n, s) => n + s.filter(v => v != null).length, 0) : 0;
  }
  return out;
})()`

// openPage opens a page file in headless chromium and returns the probe,
// the script errors and every request the page made.
func openPage(t *testing.T, chromium, page, screenshot string) (pageProbe, []string, []string) {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	// The first call starts the browser and opens the tab, on a context
	// without a deadline (a deadline there would end the browser).
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("chromium %s: %v", chromium, err)
	}

	var mu sync.Mutex
	var errs, requests []string
	err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			errs = append(errs, "exception: "+msg)
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var b strings.Builder
				for _, a := range ev.Args {
					b.Write(a.Value)
					b.WriteString(a.Description)
				}
				errs = append(errs, "console."+string(ev.Type)+": "+b.String())
			}
		case *cdplog.EventEntryAdded:
			// Content-Security-Policy refusals come this way.
			if ev.Entry.Level == cdplog.EntryLevelError {
				errs = append(errs, "log: "+ev.Entry.Text+" "+ev.Entry.URL)
			}
		case *network.EventRequestWillBeSent:
			requests = append(requests, ev.Request.URL)
		}
	})
	if err != nil {
		t.Fatalf("chromium %s: %v", chromium, err)
	}
	tctx, cancelT := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelT()
	url := "file://" + page
	enable := chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		if _, err := cdp.Call(ctx, t, network.Enable, network.EnableParams{}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, t, cdplog.Enable, cdp.Empty{})
		return err
	})
	if err := chromedp.Do(tctx, enable, chromedp.Navigate(url), chromedp.WaitReady("body")); err != nil {
		t.Fatalf("chromium on %s: %v", page, err)
	}
	probe, err := chromedp.Run(tctx, chromedp.Evaluate[pageProbe](probeJS))
	if err != nil {
		t.Fatalf("chromium on %s: %v", page, err)
	}
	if screenshot != "" {
		shot, err := chromedp.Run(tctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(screenshot, shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	var outside []string
	for _, u := range requests {
		if u != url && !strings.HasPrefix(u, "data:") {
			outside = append(outside, u)
		}
	}
	return probe, slices.Clone(errs), outside
}

// TestPageInChromium opens the page of one job and the compare page of two
// in headless chromium: every default panel with data drawn, no script
// error, no request leaving the page, and the other metrics chartable.
func TestPageInChromium(t *testing.T) {
	chromium := findChromium(t)
	r, _ := buildTestJobs(t)
	dir := t.TempDir()
	single := *r
	single.Jobs = r.Jobs[:1]
	for _, tc := range []struct {
		name string
		r    *Report
		jobs int
	}{{"one job", &single, 1}, {"two jobs compared", r, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			var page bytes.Buffer
			if err := tc.r.WritePage(&page); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(page.String(), testToken) {
				t.Fatal("the page holds the token")
			}
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".html")
			writeFile(t, path, page.Bytes())
			shot := ""
			if d := os.Getenv("OTELSTEP_REPORT_SCREENSHOTS"); d != "" {
				shot = filepath.Join(d, filepath.Base(path)+".png")
			}
			probe, errs, outside := openPage(t, chromium, path, shot)
			if len(errs) > 0 {
				t.Errorf("script errors: %q", errs)
			}
			if len(outside) > 0 {
				t.Errorf("requests leaving the page: %q", outside)
			}
			for _, p := range DefaultPanels() {
				got, ok := probe.Panels[p.ID]
				switch {
				case !ok:
					t.Errorf("panel %s: no element with data-panel", p.ID)
				case !got.Canvas || got.Points == 0 || got.Inked == 0:
					t.Errorf("panel %s: canvas %v, %d points, %d coloured pixels: not drawn", p.ID, got.Canvas, got.Points, got.Inked)
				case tc.jobs == 2 && got.Series%2 != 0:
					t.Errorf("panel %s: %d series, want each job's", p.ID, got.Series)
				}
			}
			if probe.Jobs != tc.jobs || probe.Compare != (tc.jobs > 1) {
				t.Errorf("page shows %d jobs (compare table %v), want %d", probe.Jobs, probe.Compare, tc.jobs)
			}
			if probe.Other == 0 || probe.Clicked == "" || probe.ClickPt == 0 {
				t.Errorf("other metrics: %d listed, clicking %q drew %d points", probe.Other, probe.Clicked, probe.ClickPt)
			}
		})
	}
}
