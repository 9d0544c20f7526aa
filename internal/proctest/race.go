//go:build race

package proctest

// Race: this is a build with the race detector, so a test may build the
// binary with it too (a data race in the running pipeline then exits 66).
const Race = true
