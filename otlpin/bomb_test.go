package otlpin

import (
	"bytes"
	"compress/gzip"
	"testing"
)

// A gzip bomb (a small body inflating past MaxRequestBytes) is too large,
// 413, whatever else holds the byte budget meanwhile: reading it takes
// from the budget no more than the limit it is read to, so it is never
// told to retry later (503), which would have its sender send it again for
// ever.
func TestGzipBombIs413NotRetryLater(t *testing.T) {
	var got rec
	r := start(t, Options{Traces: &got, MaxRequestBytes: 20 << 20, AdmissionBytes: 32 << 20})
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	_, _ = zw.Write(make([]byte, 24<<20))
	_ = zw.Close()
	// Another request's bytes are in flight: a batch still held downstream.
	held := r.admit.take(1 << 20)
	if held == nil {
		t.Fatal("no room for the held request")
	}
	defer held.lease.Release()
	for i := range 3 {
		resp, _ := post(t, r, "/v1/traces", ctProtobuf, "gzip", bomb.Bytes())
		if resp.StatusCode != 413 {
			t.Fatalf("bomb %d of %d bytes inflating to 24 MiB: %d, want 413", i, bomb.Len(), resp.StatusCode)
		}
	}
	if n := r.admit.inUse(); n != 1<<20 {
		t.Errorf("%d bytes of the budget in use after the bombs, want the held request's %d", n, 1<<20)
	}
}
