package sink

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/otelstep/otelstep/pipeline"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// requestsBackend records the batch ids of each request's resources, and
// refuses (400) a request holding one of refuse.
type requestsBackend struct {
	mu       sync.Mutex
	requests [][]string
}

func newRequestsBackend(t *testing.T, refuse ...string) (*requestsBackend, *httptest.Server) {
	be := &requestsBackend{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, err := decompressBody(r.Header.Get("Content-Encoding"), r.Body)
		if err != nil {
			t.Errorf("body: %v", err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		var req colmetricspb.ExportMetricsServiceRequest
		if err := proto.Unmarshal(raw, &req); err != nil {
			t.Errorf("proto: %v", err)
		}
		var ids []string
		for _, rm := range req.ResourceMetrics {
			ids = append(ids, batchID(&pipeline.Batch{Metrics: []*metricspb.ResourceMetrics{rm}}))
		}
		be.mu.Lock()
		be.requests = append(be.requests, ids)
		be.mu.Unlock()
		for _, id := range refuse {
			if slices.Contains(ids, id) {
				http.Error(w, "bad", http.StatusBadRequest)
				return
			}
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(srv.Close)
	return be, srv
}

func (be *requestsBackend) got() [][]string {
	be.mu.Lock()
	defer be.mu.Unlock()
	return slices.Clone(be.requests)
}

// The exporter gathers a signal's batches into requests of up to
// RequestItems items: a batch that would take a request past that begins
// the next, one bigger than that goes alone, and the requests are one
// compressed stream each that the backend decodes whole. Each batch is
// still settled on its own with its request's fate: counted in the fates,
// and its JSONL line told delivered or not.
func TestHTTPGathersBatchesIntoRequests(t *testing.T) {
	be, srv := newRequestsBackend(t, "b4")
	path := filepath.Join(t.TempDir(), "metrics.jsonl")
	f, err := NewFile(FileOptions{Path: path, Signal: pipeline.Metrics})
	if err != nil {
		t.Fatal(err)
	}
	// Only the size and the stop end a request here: its wait is longer
	// than the test.
	h, _ := newTestHTTP(t, srv.URL, HTTPOptions{RequestItems: 250, RequestWait: time.Hour})
	fan := NewFanout(f, h)
	rec := &lineRecord{}
	fan.Track(f, h, rec)
	for _, s := range []Sink{f, h} {
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		if err := fan.Consume(context.Background(), metricsBatch(fmt.Sprintf("b%d", i), 100)); err != nil {
			t.Fatal(err)
		}
	}
	if err := fan.Consume(context.Background(), metricsBatch("big", 300)); err != nil {
		t.Fatal(err)
	}
	if err := fan.Consume(context.Background(), metricsBatch("last", 10)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := f.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	got := be.got()
	slices.SortFunc(got, func(a, b []string) int { return slices.Index(order, a[0]) - slices.Index(order, b[0]) })
	want := [][]string{{"b0", "b1"}, {"b2", "b3"}, {"b4", "b5"}, {"b6", "b7"}, {"b8", "b9"}, {"big"}, {"last"}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("requests %v, want %v", got, want)
	}
	st := h.Stats()
	if d := st.Fates[Delivered]; d != (FateCount{Batches: 10, Items: 1110}) {
		t.Errorf("delivered %+v, want 10 batches of 1110 items", d)
	}
	if r := st.Fates[LeftRefused]; r != (FateCount{Batches: 2, Items: 200}) {
		t.Errorf("refused %+v, want 2 batches of 200 items", r)
	}
	if a := st.Accepted(); a != (FateCount{Batches: 12, Items: 1310}) {
		t.Errorf("accepted %+v, want every batch taken", a)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	delivered, undelivered := idsAt(t, data, rec.delivered), idsAt(t, data, rec.undelivered)
	if len(delivered) != 10 || len(undelivered) != 2 {
		t.Fatalf("told of %d delivered and %d undelivered lines, want 10 and 2", len(delivered), len(undelivered))
	}
	for _, id := range []string{"b4", "b5"} {
		if _, ok := undelivered[id]; !ok {
			t.Errorf("%s not told undelivered: its request was refused", id)
		}
	}
}

// order is the batch ids TestHTTPGathersBatchesIntoRequests sends, in order.
var order = []string{"b0", "b1", "b2", "b3", "b4", "b5", "b6", "b7", "b8", "b9", "big", "last"}

// A request that does not fill is sent RequestWait after its first batch,
// without a stop or another batch.
func TestHTTPRequestSentAfterItsWait(t *testing.T) {
	be, srv := newRequestsBackend(t)
	h, _ := newTestHTTP(t, srv.URL, HTTPOptions{RequestWait: 10 * time.Millisecond})
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer h.Shutdown(ctxT(time.Minute))
	for _, id := range []string{"a", "b", "c"} {
		if err := h.Enqueue(context.Background(), metricsBatch(id, 5)); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for h.Stats().SentBatches < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("after a minute the backend got %v, want a, b and c", be.got())
		}
		time.Sleep(time.Millisecond)
	}
	var ids []string
	for _, r := range be.got() {
		ids = append(ids, r...)
	}
	if !slices.Equal(ids, []string{"a", "b", "c"}) {
		t.Fatalf("the backend got %v, want a, b and c in order", ids)
	}
}
