// Package boot sets up the process for a fast start before the packages
// that make starting slow are initialised: it runs otelstep's Go code on
// one thread (see Procs) and maps the binary's read-only pages in, one call
// per mapping (prefault_linux.go).
//
// It must be initialised early, so it imports only runtime and syscall.
// Go initialises, of the packages whose imports are all initialised, the
// one with the smallest import path first (the specification's "Package
// initialization"). In the built binary syscall is the 14th package to be
// initialised, and this one ("github.com/otelstep/…") comes 15th of 183:
// before time, os, net, protobuf, gRPC, YAML and Prometheus.
// TestBootInitialisesEarly checks the order in the built binary.
//
// With main setting GOGC only once running, these made exec to ready on
// the embedded default 24–25 ms and 560–620 page faults, from 35–37 ms and
// 930–1,130 (perf stat over 30 starts, three pairs, 2026-12-05).
package boot

import (
	"runtime"
	"syscall"
)

// Procs is the GOMAXPROCS otelstep runs at unless the GOMAXPROCS
// environment variable is set (why one: cmd/otelstep's defaultProcs).
// Setting it here, before anything has been allocated on the second P,
// costs nothing; from main, after the initialisers, it stopped the world to
// flush and sweep that P's cached spans: 7% of a start's CPU. The runtime's
// second P also faulted in about 180 pages of its own (GOMAXPROCS=1 in the
// environment: 700 against 890 page faults).
const Procs = 1

// procsSet records whether init set GOMAXPROCS.
var procsSet bool

func init() {
	if _, set := syscall.Getenv("GOMAXPROCS"); !set {
		runtime.GOMAXPROCS(Procs)
		procsSet = true
	}
	_ = Prefault() // an optimisation only
}

// RestoreProcs gives GOMAXPROCS back to the runtime's default (one per CPU
// the process may use, updated as that changes) if init set it, for the
// subcommands that are not the collector (bench, replay) and for tests.
func RestoreProcs() {
	if procsSet {
		runtime.SetDefaultGOMAXPROCS()
		procsSet = false
	}
}
