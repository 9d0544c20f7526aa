package telemetry

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"testing"

	"github.com/otelstep/otelstep/config"
)

// openFDs is the number of the test process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	return len(ents)
}

// A flood of idle connections to a pull reader takes at most pullMaxConns
// of its descriptors, and it goes on answering: the idle ones are closed
// within seconds to let a scrape in.
func TestPullReaderConnectionsBounded(t *testing.T) {
	tm := newTelemetry(t, config.Telemetry{Readers: []config.MetricReader{{Path: "r[0]", Pull: &config.PullReader{Host: "127.0.0.1", Port: 0}}}})
	if err := tm.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer tm.Shutdown(context.Background())
	addr := tm.PullAddrs()[0].String()
	before := openFDs(t)
	const flood = 4 * pullMaxConns
	for range flood {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	// The backlog is first in, first out: when the scrape's connection
	// is accepted, every flood connection before it was (or was let wait
	// in the backlog).
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a scrape during the flood: %s", resp.Status)
	}
	// The test's own ends of the flood, and at most pullMaxConns of the
	// server's (plus a few of the runtime's and the scrape's).
	if grew := openFDs(t) - before; grew > flood+pullMaxConns+8 {
		t.Fatalf("%d descriptors more with %d idle connections: the server holds more than %d", grew, flood, pullMaxConns)
	}
}
