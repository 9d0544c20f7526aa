package scraper

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// barrierServers are n targets whose handlers answer only once all n
// requests have come in, so that the n bodies arrive together; each waits
// at most a few seconds for the others.
func barrierServers(t *testing.T, n int, page []byte) []*httptest.Server {
	t.Helper()
	var mu sync.Mutex
	arrived := 0
	all := make(chan struct{})
	var srvs []*httptest.Server
	for range n {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			arrived++
			if arrived == n {
				close(all)
			}
			mu.Unlock()
			select {
			case <-all:
			case <-time.After(patience):
			}
			w.Header().Set("Content-Type", ctText)
			w.Header().Set("Content-Length", strconv.Itoa(len(page)))
			_, _ = w.Write(page)
		}))
		t.Cleanup(srv.Close)
		srvs = append(srvs, srv)
	}
	return srvs
}

func managerOf(t *testing.T, srvs []*httptest.Server, next *collect) *Manager {
	t.Helper()
	var tgs []Target
	for _, srv := range srvs {
		tg := loopbackTarget()
		tg.Address = strings.TrimPrefix(srv.URL, "http://")
		tgs = append(tgs, tg)
	}
	m, err := New(Options{Targets: tgs, Next: next, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// The targets of a job are scraped in the same instant, and their bodies
// come in together; with one slot, one page at a time is read and
// converted, so the whole job's scrape needs one page buffer, not one per
// target.
func TestPagesReadOneAtATime(t *testing.T) {
	const n = freeBodies - 2 // all would be kept if all were in flight at once
	page := read(t, "node.txt")
	col := &collect{ch: make(chan struct{}, n)}
	m := managerOf(t, barrierServers(t, n, page), col)
	m.pages = newPageGate(1, time.Minute)
	m.bodies.keep = freeBodies
	// The gate waits a quarter of the scrape's timeout, which New caps at
	// the interval (1 s): under -race on a loaded machine six first
	// scrapes (every series new) took longer than that, and the last went
	// on without a slot.
	for _, l := range m.loops {
		l.t.Timeout = time.Minute
	}
	m.ScrapeAll(context.Background())
	if len(col.b) != n {
		t.Fatalf("%d batches, want %d", len(col.b), n)
	}
	for i, b := range col.b {
		if upOf(t, b) != 1 {
			t.Fatalf("target %d down", i)
		}
	}
	if len(m.bodies.free) != 1 {
		t.Errorf("%d page buffers made for %d pages read one at a time, want 1", len(m.bodies.free), n)
	}
	if len(m.pages.slots) != 0 {
		t.Errorf("%d slots still taken after the scrapes", len(m.pages.slots))
	}
}

// A target that sends its body slowly holds its slot, but the other
// targets' scrapes go on after the gate's wait, without one: they finish
// while the slow one is still reading.
func TestSlowBodyDoesNotHoldUpTheJob(t *testing.T) {
	const n = 3
	page := read(t, "node.txt")
	release := make(chan struct{})
	var m *Manager
	serve := func(w http.ResponseWriter, half bool) {
		w.Header().Set("Content-Type", ctText)
		w.Header().Set("Content-Length", strconv.Itoa(len(page)))
		if !half {
			_, _ = w.Write(page)
			return
		}
		_, _ = w.Write(page[:len(page)/2])
		w.(http.Flusher).Flush()
		<-release
		_, _ = w.Write(page[len(page)/2:])
	}
	// The slow target answers at once; the others once its scrape holds
	// the only slot.
	srvs := []*httptest.Server{httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		serve(w, true)
	}))}
	for range n - 1 {
		srvs = append(srvs, httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			for end := time.Now().Add(patience); len(m.pages.slots) == 0 && time.Now().Before(end); {
				time.Sleep(time.Millisecond)
			}
			serve(w, false)
		})))
	}
	for _, srv := range srvs {
		t.Cleanup(srv.Close)
	}
	col := &collect{ch: make(chan struct{}, n)}
	m = managerOf(t, srvs, col)
	m.pages = newPageGate(1, 20*time.Millisecond)
	done := make(chan struct{})
	go func() { m.ScrapeAll(context.Background()); close(done) }()
	deadline := time.After(patience)
	for got := 0; got < n-1; got++ {
		select {
		case <-col.ch:
		case <-deadline:
			close(release)
			t.Fatalf("%d of the %d other scrapes finished while one target's body was held back", got, n-1)
		}
	}
	col.mu.Lock()
	for _, b := range col.b {
		if upOf(t, b) != 1 {
			t.Error("a scrape failed")
		}
	}
	col.mu.Unlock()
	close(release)
	<-done
	if len(col.b) != n || upOf(t, col.b[n-1]) != 1 {
		t.Fatalf("the slow target's scrape: %d batches", len(col.b))
	}
	if len(m.pages.slots) != 0 {
		t.Errorf("%d slots still taken after the scrapes", len(m.pages.slots))
	}
}

func TestPageGate(t *testing.T) {
	g := newPageGate(2, 10*time.Millisecond)
	ctx := context.Background()
	if !g.enter(ctx) || !g.enter(ctx) {
		t.Fatal("two slots not taken")
	}
	if g.enter(ctx) {
		t.Fatal("a third slot taken")
	}
	g.leave()
	if !g.enter(ctx) {
		t.Fatal("a freed slot not taken")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	g.wait = time.Hour
	if g.enter(cctx) {
		t.Fatal("a slot taken past the context's end")
	}
	// with a deadline, a quarter of the time left: given up long before it
	dctx, dcancel := context.WithTimeout(ctx, 8*time.Second)
	defer dcancel()
	if g.enter(dctx) {
		t.Fatal("a third slot taken before the deadline")
	}
	if dctx.Err() != nil {
		t.Fatal("waited for a slot until the scrape's deadline")
	}
	if newPageGate(0, 0).slots == nil || cap(newPageGate(0, 0).slots) != 1 {
		t.Error("a gate of 0 slots is not one of 1")
	}
}

func TestGrowExact(t *testing.T) {
	b := newBuf(t, 100)
	b.WriteString("abc")
	growExact(b, 1000)
	if b.Cap() < 1003 || b.Cap() > 1003+64 || b.String() != "abc" {
		t.Errorf("grown to cap %d holding %q, want about 1003 holding abc", b.Cap(), b.String())
	}
	c := b.Cap()
	growExact(b, 10)
	if b.Cap() != c {
		t.Errorf("regrown with room to spare: cap %d → %d", c, b.Cap())
	}
}

func newBuf(t *testing.T, n int) *bytes.Buffer {
	t.Helper()
	return bytes.NewBuffer(make([]byte, 0, n))
}

// A buffer too small for a page is grown with room to spare, so that a
// page a few bytes longer at the next scrape reads into the same buffer.
func TestBodyListGrowsWithSlack(t *testing.T) {
	var l bodyList
	b := l.get(100_000)
	if b.Cap() < 100_000 || b.Cap() > 100_000+100_000/pageSlack+64 {
		t.Fatalf("new buffer for 100000 bytes: cap %d", b.Cap())
	}
	c := b.Cap()
	l.put(b)
	b2 := l.get(100_100) // the page grew by 100 bytes
	if b2 != b || b2.Cap() != c {
		t.Errorf("page 100 bytes longer: got cap %d (same buffer %v), want the same buffer of cap %d", b2.Cap(), b2 == b, c)
	}
	l.put(b2)
	b3 := l.get(200_000)
	if b3.Cap() < 200_000 {
		t.Errorf("page twice as long: cap %d", b3.Cap())
	}
}

// A buffer over bigBody is never kept: the memory of a huge page goes
// back to the GC, whatever page comes next.
func TestBodyListKeepsNoBigBuffer(t *testing.T) {
	l := bodyList{keep: 2}
	const page = bigBody + bigBody/4
	b := l.get(page)
	b.Write(make([]byte, page))
	l.put(b)
	if b2 := l.get(page); b2 == b {
		t.Fatal("the big page's buffer was kept")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.free {
		if f.Cap() > bigBody {
			t.Errorf("a buffer of %d bytes in the free list", f.Cap())
		}
	}
}
