package scraper

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// The targets of a job share their series keys: whichever of two targets
// saw a series first made its key, the other holds the same string, a key
// of its own only for the series the other lacks, and it converts its page
// as a converter of its own would. A job of one target has no table.
func TestSeriesKeysSharedWithinAJob(t *testing.T) {
	node := read(t, "node.txt")
	extra := []byte("# TYPE only_second gauge\nonly_second{x=\"1\"} 3\n")
	second := append(append([]byte{}, node...), extra...)
	srv := func(page []byte) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ctText)
			_, _ = w.Write(page)
		}))
		t.Cleanup(s.Close)
		return s
	}
	var tgs []Target
	for i, s := range []*httptest.Server{srv(node), srv(second), srv(node)} {
		tg := fixtureTarget("node")
		if i == 2 {
			tg = fixtureTarget("other") // another job: keys of its own
		}
		// Both scrapes must finish for the line cache to have taken the
		// second page's lines; a 1 s timeout cut one on a loaded machine.
		tg.Interval, tg.Timeout = patience, patience
		tg.Address = strings.TrimPrefix(s.URL, "http://")
		tgs = append(tgs, tg)
	}
	col := &collect{ch: make(chan struct{}, 3)}
	m, err := New(Options{Targets: tgs, Next: col, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for range 2 {
		m.ScrapeAll(context.Background())
	}
	first, sec, other := m.loops[0].conv, m.loops[1].conv, m.loops[2].conv
	if sec.keys != first.keys || first.keys == nil || other.keys != nil {
		t.Fatal("the job's converters do not share one table, or a job of one target has one")
	}
	if !first.keys.on() {
		t.Fatal("the table turned itself off for pages that share all but one series")
	}
	shared, own := 0, 0
	for k, se := range rawOf(sec) {
		fse := rawOf(first)[k]
		switch {
		case fse == nil:
			own++
			if !strings.HasPrefix(k, "only_second") {
				t.Errorf("series %q is the first target's too, but has a key of its own", k)
			}
		case unsafe.StringData(fse.key) == unsafe.StringData(se.key):
			shared++
		default:
			t.Errorf("series %q: a copy of the first target's key", k)
		}
	}
	if own != 1 || shared != len(rawOf(first)) {
		t.Errorf("second target: %d keys shared, %d its own; want %d and 1", shared, own, len(rawOf(first)))
	}
	for k, se := range rawOf(other) {
		if fse := rawOf(first)[k]; fse != nil && unsafe.StringData(fse.key) == unsafe.StringData(se.key) {
			t.Fatalf("series %q: another job's target shares the key", k)
		}
	}
	// What the shared keys give is what keys of its own give.
	alone := NewConverter(tgs[1])
	for _, page := range [][]byte{second, second} {
		if _, err := alone.Convert(page, ctText, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if sec.lc.taken != alone.lc.taken || sec.lc.taken < bytes.Count(second, []byte("\n"))/2 {
		t.Errorf("second target's cache took %d lines, a converter of its own %d", sec.lc.taken, alone.lc.taken)
	}
}

// A job whose targets serve different series drops its table: it would
// cost a map slot a key and share nothing. (b's page has one of a's three
// series: 1 found, 5 made.)
func TestSeriesKeysOffWhenNothingIsShared(t *testing.T) {
	pages := [][]byte{
		[]byte("# TYPE a gauge\na{x=\"1\"} 1\na{x=\"2\"} 2\na{x=\"3\"} 3\n"),
		[]byte("# TYPE b gauge\nb{x=\"1\"} 1\nb{x=\"2\"} 2\na{x=\"3\"} 3\n"),
	}
	sets, pools, metas, keys := newAttrSets(nil), newSlabPools(), newMetaLines(), newSeriesKeys()
	var convs []*Converter
	for range pages {
		c := newConverter(fixtureTarget("j"), sets, pools, metas)
		c.keys = keys
		convs = append(convs, c)
	}
	if _, err := convs[0].Convert(pages[0], ctText, time.Now()); err != nil {
		t.Fatal(err)
	}
	if !keys.on() {
		t.Fatal("off after the first target's scrape, before any other could share")
	}
	rm, err := convs[1].Convert(pages[1], ctText, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if keys.on() {
		t.Fatal("still on after a target that found 1 of its 3 series in it")
	}
	if m := findPoints(rm, "b"); m == nil || len(m.GetGauge().DataPoints) != 2 {
		t.Fatalf("b: %v", m)
	}
	// off: new series get keys of their own, and scrapes go on (a key of
	// more than one byte: Go's one-byte strings all share static bytes)
	for _, c := range convs {
		if _, err := c.Convert(append([]byte("cc 1\n"), pages[0]...), ctText, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if unsafe.StringData(convs[0].lc.lines[0].se.key) == unsafe.StringData(convs[1].lc.lines[0].se.key) {
		t.Error("a key shared after the table turned off")
	}
}

// Two first scrapes converted at once each find part of their series made
// by the other: the table keeps going.
func TestSeriesKeysConcurrentFirstScrapes(t *testing.T) {
	page := read(t, "node.txt")
	sets, pools, metas, keys := newAttrSets(nil), newSlabPools(), newMetaLines(), newSeriesKeys()
	var wg sync.WaitGroup
	for range 2 {
		c := newConverter(fixtureTarget("j"), sets, pools, metas)
		c.keys = keys
		wg.Go(func() {
			for range 2 {
				if _, err := c.Convert(page, ctText, time.Now()); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if !keys.on() {
		t.Fatalf("turned off by two identical pages: %d found, %d made", keys.hits, keys.misses)
	}
	if keys.hits != keys.misses {
		t.Errorf("%d keys found, %d made; want each series made once and found once", keys.hits, keys.misses)
	}
}

// A failed scrape forgets its target's series, and the job's table
// forgets their keys: a target failing with new series at every scrape
// does not grow it.
func TestSeriesKeysForgottenOnFailure(t *testing.T) {
	keys := newSeriesKeys()
	tg := Target{JobName: "j", Address: "127.0.0.1:1", Interval: time.Second}
	c := newConverter(tg, newAttrSets(nil), newSlabPools(), newMetaLines())
	c.keys = keys
	for i := range 5 {
		page := []byte(fmt.Sprintf("# TYPE g gauge\ng{s=\"%d\",i=\"1\"} 1\ng{s=\"%d\",i=\"2\"} 2\n}}broken\n", i, i))
		if _, _, err := c.ConvertLeased(page, ctText, time.Now(), 0); err == nil {
			t.Fatal("the broken page converted")
		}
		c.DownLeased(time.Now(), 0)
	}
	keys.mu.Lock()
	defer keys.mu.Unlock()
	if keys.keys == nil || len(keys.keys) != 0 {
		t.Errorf("the table holds %d keys after failed scrapes only (on: %v)", len(keys.keys), keys.keys != nil)
	}
}
