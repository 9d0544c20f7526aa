package sink

import (
	"bytes"
	"context"
	"fmt"
	"github.com/otelstep/otelstep/internal/fakebackend"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/otelstep/otelstep/otlpwire"
	"github.com/otelstep/otelstep/pipeline"
)

// lineRecord is a DeliveryRecord that keeps what it is told.
type lineRecord struct {
	mu                     sync.Mutex
	delivered, undelivered []Line
}

func (r *lineRecord) Delivered(l Line) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.delivered = append(r.delivered, l)
}

func (r *lineRecord) Undelivered(l Line, _ Fate) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.undelivered = append(r.undelivered, l)
}

// idsAt is the batch ids of the lines of the file at path, each read from
// the bytes [Start, End) the record was told, which must be one whole line.
func idsAt(t *testing.T, data []byte, ls []Line) map[string]Line {
	t.Helper()
	out := map[string]Line{}
	for _, l := range ls {
		if l.Start < 0 || l.End > int64(len(data)) || l.End <= l.Start {
			t.Fatalf("line %+v is not in the file's %d bytes", l, len(data))
		}
		line := data[l.Start:l.End]
		if line[len(line)-1] != '\n' || bytes.IndexByte(line, '\n') != len(line)-1 || (l.Start > 0 && data[l.Start-1] != '\n') {
			t.Fatalf("bytes %d-%d are not one whole line: %q", l.Start, l.End, line)
		}
		req, err := otlpwire.DecodeMetrics(line[:len(line)-1])
		if err != nil {
			t.Fatalf("bytes %d-%d: %v", l.Start, l.End, err)
		}
		id := batchID(&pipeline.Batch{Metrics: req.ResourceMetrics})
		if _, dup := out[id]; dup {
			t.Fatalf("batch %s told twice", id)
		}
		out[id] = l
	}
	return out
}

// Each batch a tracked File and HTTP sink both take is reported once, with
// the byte range its line holds in the file (after what the file held at
// open, a line an earlier run left cut short included), delivered when the
// backend answered 2xx and not when it refused it.
func TestDeliveryRecordToldOfEachLine(t *testing.T) {
	refused := map[string]bool{"b3": true, "b7": true, "b8": true, "b15": true}
	srv := fakebackend.New(t)
	srv.Answer(func(r *fakebackend.Request) fakebackend.Reply {
		if r.Path != "/v1/metrics" || r.Header.Get("Content-Encoding") != "gzip" {
			t.Errorf("%s %q", r.Path, r.Header.Get("Content-Encoding"))
		}
		if refused[batchID(&pipeline.Batch{Metrics: r.Metrics.GetResourceMetrics()})] {
			return fakebackend.Reply{Status: http.StatusBadRequest, ContentType: "text/plain", Body: []byte("bad\n")}
		}
		return fakebackend.Reply{}
	})
	path := filepath.Join(t.TempDir(), "metrics.jsonl")
	earlier := "{\"resourceMetrics\":[]}\n{\"resourceMetr" // a run killed mid-line
	if err := os.WriteFile(path, []byte(earlier), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := NewFile(FileOptions{Path: path, Signal: pipeline.Metrics})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := newTestHTTP(t, srv.URL(), HTTPOptions{QueueSize: 100})
	fan := NewFanout(f, h)
	rec := &lineRecord{}
	fan.Track(f, h, rec)
	for _, s := range []Sink{f, h} {
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	const n = 20
	for i := range n {
		if err := fan.Consume(context.Background(), metricsBatch(fmt.Sprintf("b%d", i), 3)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := f.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	delivered, undelivered := idsAt(t, data, rec.delivered), idsAt(t, data, rec.undelivered)
	if len(delivered)+len(undelivered) != n {
		t.Fatalf("told of %d delivered and %d undelivered lines, want %d in all", len(delivered), len(undelivered), n)
	}
	for id := range undelivered {
		if !refused[id] {
			t.Errorf("%s told undelivered; the backend took it", id)
		}
	}
	for id := range refused {
		if _, ok := undelivered[id]; !ok {
			t.Errorf("%s not told undelivered; the backend refused it", id)
		}
	}
	var all []Line
	all = append(append(all, rec.delivered...), rec.undelivered...)
	sort.Slice(all, func(i, j int) bool { return all[i].Start < all[j].Start })
	if at := int64(len(earlier) + 1); all[0].Start != at {
		t.Errorf("the first line starts at %d, want %d: after what the file held and the newline ending its cut line", all[0].Start, at)
	}
	for i, l := range all {
		if l.Index != i {
			t.Errorf("the line at %d has index %d, want %d", l.Start, l.Index, i)
		}
		if i > 0 && l.Start != all[i-1].End {
			t.Errorf("line %d starts at %d, the one before ends at %d", i, l.Start, all[i-1].End)
		}
	}
}

// A batch the HTTP sink does not take (it has stopped) is undelivered.
func TestDeliveryUndeliveredWhenTheExporterHasStopped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "metrics.jsonl")
	f, err := NewFile(FileOptions{Path: path, Signal: pipeline.Metrics})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := newTestHTTP(t, "http://127.0.0.1:1", HTTPOptions{})
	fan := NewFanout(f, h)
	rec := &lineRecord{}
	fan.Track(f, h, rec)
	if err := f.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := h.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := fan.Consume(context.Background(), metricsBatch("late", 2)); err != nil {
		t.Fatal(err)
	}
	if err := f.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if got := idsAt(t, data, rec.undelivered); len(got) != 1 || len(rec.delivered) != 0 {
		t.Errorf("told %d undelivered and %d delivered, want the one batch undelivered", len(got), len(rec.delivered))
	}
}

func TestBearerToken(t *testing.T) {
	for _, c := range []struct {
		h    map[string]string
		want string
	}{
		{map[string]string{"Authorization": "Bearer t0k"}, "t0k"},
		{map[string]string{"authorization": "bearer  t0k "}, "t0k"},
		{map[string]string{"Authorization": "Basic dXNlcg=="}, ""},
		{map[string]string{"X-Api-Key": "Bearer t0k"}, ""},
		{nil, ""},
	} {
		if got := BearerToken(c.h); got != c.want {
			t.Errorf("BearerToken(%v) = %q, want %q", c.h, got, c.want)
		}
	}
}
