package replay

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/otelstep/otelstep/pipeline"
)

// benchFile writes the collector's metrics fixture lines repeated to about
// 16 MiB: a job's metrics.jsonl in miniature.
func benchFile(b *testing.B) (path string, lines int) {
	b.Helper()
	data, err := os.ReadFile("testdata/metrics.peer-gym-v1.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	data = append(bytes.TrimSpace(data), '\n')
	n := bytes.Count(data, []byte("\n"))
	var buf bytes.Buffer
	for buf.Len() < 16<<20 {
		buf.Write(data)
		lines += n
	}
	path = filepath.Join(b.TempDir(), "metrics.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	return path, lines
}

func benchReplay(b *testing.B, dry bool) {
	path, lines := benchFile(b)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	defer srv.Close()
	fi, _ := os.Stat(path)
	o := Options{Endpoint: srv.URL, Token: "t", Paths: []string{path}, StateDir: b.TempDir(), FromStart: true, DryRun: dry}
	b.ReportAllocs()
	b.SetBytes(fi.Size())
	var points int64
	for b.Loop() {
		s, err := Run(context.Background(), o)
		if err != nil || !s.OK() {
			b.Fatalf("replay: %v %v", err, s.Reason())
		}
		points += s.Signals[pipeline.Metrics].Items
	}
	b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
	b.ReportMetric(float64(points)/b.Elapsed().Seconds(), "points/s")
}

// BenchmarkReplay is the whole replay of a 16 MiB metrics file into a
// loopback backend that discards: read, decode, stamp, protobuf, gzip, POST.
func BenchmarkReplay(b *testing.B) { benchReplay(b, false) }

// BenchmarkReplayDryRun is the read and decode part alone.
func BenchmarkReplayDryRun(b *testing.B) { benchReplay(b, true) }
