package faults

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/otelstep/otelstep/bench"
	"github.com/otelstep/otelstep/internal/proctest"
)

var (
	long     = flag.Bool("faults.long", false, "run the long version of each fault: more data, longer faults")
	raceFlag = flag.Bool("faults.race", false, "build otelstep with the race detector (the memory figures are then the detector's)")
)

// otelstepBin is the otelstep under test, built once by TestMain.
var otelstepBin string

// ports hands out loopback ports nothing listens on, never twice in a run.
var ports bench.Ports

func TestMain(m *testing.M) {
	flag.Parse()
	b := &proctest.Build{Env: []string{"CGO_ENABLED=0"}, Args: []string{"-pgo=off"}}
	if *raceFlag {
		b = &proctest.Build{Args: []string{"-pgo=off", "-race"}}
	}
	p, err := b.Path()
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults: building otelstep:", err)
		os.Exit(2)
	}
	otelstepBin = p
	code := m.Run()
	b.Remove()
	os.Exit(code)
}

// size is the short figure, or the long one under -faults.long.
func size(short, long_ int) int {
	if *long {
		return long_
	}
	return short
}
