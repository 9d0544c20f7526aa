//go:build race

package otlpwire_test

const raceEnabled = true
