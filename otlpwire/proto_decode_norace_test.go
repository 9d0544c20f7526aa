//go:build !race

package otlpwire_test

const raceEnabled = false
