//go:build !race

package proctest

// Race: this is a build with the race detector.
const Race = false
