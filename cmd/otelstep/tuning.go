package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
)

// The collector's process-wide settings are all here, set once by tune
// from run before anything is built; bench and replay run at the runtime's
// defaults. Each has an off switch, and DESIGN.md ("Process settings")
// says why each is worth it. Nothing else in otelstep changes how the Go
// runtime or the kernel treats the process.

// defaultProcs is how many threads run otelstep's Go code at once unless
// --procs or GOMAXPROCS says otherwise. otelstep runs beside a benchmark,
// on the benchmark's cores, and its work is many short pieces handed
// between goroutines (a scrape loop, the fan-out, the batcher, two sinks,
// the receivers' connections). With more than one P the runtime wakes an
// idle thread for each hand-off and lets it spin looking for work, which
// costs more than the work handed over, and the GC takes a quarter of the
// Ps for its mark workers: on a 64-core node, 16 threads taken from the
// benchmark. One core's worth is far above a job's load.
const defaultProcs = 1

// defaultGCPercent is the GC target otelstep runs at unless GOGC is set.
// Its memory is the benchmark job's, and it allocates little once running
// (a scrape's points come from pooled chunks, request bodies are pooled),
// so marking the live heap more often costs little CPU for a smaller peak.
const defaultGCPercent = 25

// tune applies the collector's settings: GOMAXPROCS from --procs (procs,
// given) or defaultProcs, and the GC target. lookup reads the environment.
func tune(procs int, given bool, lookup func(string) (string, bool)) {
	setProcs(procs, given, lookup)
	setGCPercent(lookup)
}

// setProcs sets GOMAXPROCS to n (0: the runtime's own choice, one per CPU
// the process may use) if --procs was given or GOMAXPROCS is not set (the
// runtime has applied that one already).
func setProcs(n int, given bool, lookup func(string) (string, bool)) {
	if _, set := lookup("GOMAXPROCS"); set && !given {
		return
	}
	if n == 0 {
		runtime.SetDefaultGOMAXPROCS()
		return
	}
	runtime.GOMAXPROCS(n)
}

// setGCPercent sets defaultGCPercent unless GOGC is set (the runtime has
// applied that one already).
func setGCPercent(lookup func(string) (string, bool)) {
	if _, set := lookup("GOGC"); !set {
		debug.SetGCPercent(defaultGCPercent)
	}
}

// settings returns GOMAXPROCS and the GC target in force ("off" for
// GOGC=off), for the log: what tune set, or what the environment did.
func settings() (procs int, gogc string) {
	s := []metrics.Sample{{Name: "/sched/gomaxprocs:threads"}, {Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	if pct := int64(s[1].Value.Uint64()); pct >= 0 {
		gogc = strconv.FormatInt(pct, 10)
	} else {
		gogc = "off"
	}
	return int(s[0].Value.Uint64()), gogc
}
