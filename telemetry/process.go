package telemetry

import (
	"context"
	"errors"
	"runtime/metrics"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"
)

// runtime/metrics samples the process metrics read, by index.
const (
	rmHeapObjects = iota
	rmTotal
	rmGoroutines
	rmAllocBytes
	rmAllocObjects
	rmTinyAllocs
	rmGCCycles
	rmHeapGoal
	rmCount
)

var rmNames = [rmCount]string{
	rmHeapObjects:  "/memory/classes/heap/objects:bytes",
	rmTotal:        "/memory/classes/total:bytes",
	rmGoroutines:   "/sched/goroutines:goroutines",
	rmAllocBytes:   "/gc/heap/allocs:bytes",
	rmAllocObjects: "/gc/heap/allocs:objects",
	rmTinyAllocs:   "/gc/heap/tiny/allocs:objects",
	rmGCCycles:     "/gc/cycles/total:gc-cycles",
	rmHeapGoal:     "/gc/heap/goal:bytes",
}

// process observes the process metrics when a reader collects: from
// runtime/metrics, which, unlike runtime.ReadMemStats, does not stop the
// world, from getrusage (cpu_unix.go) and from /proc/self/statm
// (procstat_linux.go). An instrument above the level is nil and not
// observed.
type process struct {
	start time.Time

	mu      sync.Mutex // readers may collect at once
	samples [rmCount]metrics.Sample
	buf     [1024]byte // /proc reads

	uptime, cpu                   metric.Float64ObservableCounter
	rss, heap, sys, goroutines    metric.Int64ObservableGauge
	allocBytes, mallocs, gcCycles metric.Int64ObservableCounter
	heapGoal                      metric.Int64ObservableGauge
	observed                      []metric.Observable
	hasCPU, hasRSS                bool
}

func newProcess(m metric.Meter, level Level, start time.Time) (*process, error) {
	p := &process{start: start}
	for i := range p.samples {
		p.samples[i].Name = rmNames[i]
	}
	var errs []error
	keep := func(o metric.Observable, err error) {
		errs = append(errs, err)
		if err == nil {
			p.observed = append(p.observed, o)
		}
	}
	var err error
	if level >= LevelBasic {
		p.uptime, err = m.Float64ObservableCounter("otelcol_process_uptime", metric.WithUnit("s"), metric.WithDescription("Uptime of the process."))
		keep(p.uptime, err)
		_, p.hasCPU = p.cpuSeconds()
		if p.hasCPU {
			p.cpu, err = m.Float64ObservableCounter("otelcol_process_cpu_seconds", metric.WithUnit("s"), metric.WithDescription("Total CPU user and system time in seconds."))
			keep(p.cpu, err)
		}
		_, p.hasRSS = p.rssBytes()
		if p.hasRSS {
			p.rss, err = m.Int64ObservableGauge("otelcol_process_memory_rss", metric.WithUnit("By"), metric.WithDescription("Total physical memory (resident set size)."))
			keep(p.rss, err)
		}
		p.heap, err = m.Int64ObservableGauge("otelcol_process_runtime_heap_alloc_bytes", metric.WithUnit("By"), metric.WithDescription("Bytes of allocated heap objects (runtime/metrics /memory/classes/heap/objects:bytes)."))
		keep(p.heap, err)
		p.sys, err = m.Int64ObservableGauge("otelcol_process_runtime_total_sys_memory_bytes", metric.WithUnit("By"), metric.WithDescription("Total bytes of memory obtained from the OS (runtime/metrics /memory/classes/total:bytes)."))
		keep(p.sys, err)
		p.goroutines, err = m.Int64ObservableGauge("otelstep_go_goroutines", metric.WithUnit("{goroutines}"), metric.WithDescription("Goroutines."))
		keep(p.goroutines, err)
	}
	if level >= LevelNormal {
		p.allocBytes, err = m.Int64ObservableCounter("otelcol_process_runtime_total_alloc_bytes", metric.WithUnit("By"), metric.WithDescription("Cumulative bytes allocated for heap objects (runtime/metrics /gc/heap/allocs:bytes)."))
		keep(p.allocBytes, err)
		p.mallocs, err = m.Int64ObservableCounter("otelstep_go_mallocs", metric.WithUnit("{objects}"), metric.WithDescription("Heap objects allocated, tiny ones included (runtime.MemStats.Mallocs, from runtime/metrics)."))
		keep(p.mallocs, err)
	}
	if level >= LevelDetailed {
		p.gcCycles, err = m.Int64ObservableCounter("otelstep_go_gc_cycles", metric.WithUnit("{cycles}"), metric.WithDescription("Completed GC cycles."))
		keep(p.gcCycles, err)
		p.heapGoal, err = m.Int64ObservableGauge("otelstep_go_heap_goal_bytes", metric.WithUnit("By"), metric.WithDescription("The GC's heap size goal."))
		keep(p.heapGoal, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if len(p.observed) > 0 {
		if _, err := m.RegisterCallback(p.observe, p.observed...); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// observe is the callback: one runtime/metrics read and the /proc files,
// for every process instrument.
func (p *process) observe(_ context.Context, o metric.Observer) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	metrics.Read(p.samples[:])
	u := func(i int) int64 {
		if v := p.samples[i].Value; v.Kind() == metrics.KindUint64 {
			return int64(v.Uint64())
		}
		return 0
	}
	if p.uptime != nil {
		o.ObserveFloat64(p.uptime, time.Since(p.start).Seconds())
	}
	if p.cpu != nil {
		if s, ok := p.cpuSeconds(); ok {
			o.ObserveFloat64(p.cpu, s)
		}
	}
	if p.rss != nil {
		if b, ok := p.rssBytes(); ok {
			o.ObserveInt64(p.rss, b)
		}
	}
	if p.heap != nil {
		o.ObserveInt64(p.heap, u(rmHeapObjects))
		o.ObserveInt64(p.sys, u(rmTotal))
		o.ObserveInt64(p.goroutines, u(rmGoroutines))
	}
	if p.allocBytes != nil {
		o.ObserveInt64(p.allocBytes, u(rmAllocBytes))
		// runtime.MemStats.Mallocs counts the tiny allocations one by
		// one, /gc/heap/allocs:objects only their blocks: the sum counts
		// each allocation, as the bench's allocations per sample do.
		o.ObserveInt64(p.mallocs, u(rmAllocObjects)+u(rmTinyAllocs))
	}
	if p.gcCycles != nil {
		o.ObserveInt64(p.gcCycles, u(rmGCCycles))
		o.ObserveInt64(p.heapGoal, u(rmHeapGoal))
	}
	return nil
}
