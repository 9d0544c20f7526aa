package service

import (
	"fmt"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync/atomic"
	"time"
)

// state is the service's lifecycle as the health endpoint reports it.
type state int32

const (
	starting state = iota
	running
	stopping
)

func (s state) String() string {
	return [...]string{"starting", "running", "stopping"}[s]
}

// healthHandler answers 200 while running and 503 while starting or
// stopping, with a small JSON body, like the collector's health_check.
func (s *Service) healthHandler(w http.ResponseWriter, r *http.Request) {
	st := state(s.state.Load())
	w.Header().Set("Content-Type", "application/json")
	code := http.StatusServiceUnavailable
	msg := "Server not available"
	if st == running {
		code, msg = http.StatusOK, "Server available"
	}
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"status":%q,"state":%q,"upSince":%q,"uptime":%q}`+"\n", msg, st, s.started.Format(time.RFC3339Nano), time.Since(s.started).Round(time.Millisecond))
	if code == http.StatusOK {
		s.answeredOnce.Do(func() { close(s.answered) })
	}
}

// HealthAnswered is closed once the health endpoint has answered that the
// service is running: whatever waits for it is off the path of a
// supervisor waiting for the job's collector to come up.
func (s *Service) HealthAnswered() <-chan struct{} { return s.answered }

// counter is one of otelstep's own counters, exposed on /metrics.
type counter struct {
	name, help string
	labels     string
	v          atomic.Int64
}

// metricsHandler exposes otelstep's own telemetry in the Prometheus text
// format, so a job (or the embedded default config) can scrape it.
func (s *Service) metricsHandler(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	var b strings.Builder
	byName := map[string][]*counter{}
	var names []string
	for _, c := range s.counters() {
		if _, ok := byName[c.name]; !ok {
			names = append(names, c.name)
		}
		byName[c.name] = append(byName[c.name], c)
	}
	sort.Strings(names)
	for _, n := range names {
		cs := byName[n]
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s counter\n", n, cs[0].help, n)
		for _, c := range cs {
			fmt.Fprintf(&b, "%s{%s} %d\n", n, c.labels, c.v.Load())
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Fprintf(&b, "# HELP otelstep_go_goroutines Goroutines.\n# TYPE otelstep_go_goroutines gauge\notelstep_go_goroutines %d\n", runtime.NumGoroutine())
	fmt.Fprintf(&b, "# HELP otelstep_go_heap_bytes Heap in use.\n# TYPE otelstep_go_heap_bytes gauge\notelstep_go_heap_bytes %d\n", ms.HeapInuse)
	// Cumulative allocation counters: what `otelstep bench` divides by the
	// samples scraped for allocations and bytes per sample.
	fmt.Fprintf(&b, "# HELP otelstep_go_mallocs_total Heap objects allocated.\n# TYPE otelstep_go_mallocs_total counter\notelstep_go_mallocs_total %d\n", ms.Mallocs)
	fmt.Fprintf(&b, "# HELP otelstep_go_alloc_bytes_total Heap bytes allocated.\n# TYPE otelstep_go_alloc_bytes_total counter\notelstep_go_alloc_bytes_total %d\n", ms.TotalAlloc)
	if rss, ok := residentBytes(); ok {
		fmt.Fprintf(&b, "# HELP otelstep_process_resident_memory_bytes Resident set size.\n# TYPE otelstep_process_resident_memory_bytes gauge\notelstep_process_resident_memory_bytes %d\n", rss)
	}
	fmt.Fprintf(&b, "# HELP otelstep_uptime_seconds Seconds since start.\n# TYPE otelstep_uptime_seconds gauge\notelstep_uptime_seconds %.3f\n", time.Since(s.started).Seconds())
	_, _ = w.Write([]byte(b.String()))
}

func residentBytes() (int64, bool) {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	var size, rss int64
	if _, err := fmt.Sscan(string(data), &size, &rss); err != nil {
		return 0, false
	}
	return rss * int64(os.Getpagesize()), true
}
