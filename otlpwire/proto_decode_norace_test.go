//go:build !race

package otlpwire_test

import ()

const raceEnabled = false
