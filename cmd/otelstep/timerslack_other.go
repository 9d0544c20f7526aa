//go:build !linux

package main

import (
	"errors"
	"time"
)

// setTimerSlack is Linux's (timerslack_linux.go).
func setTimerSlack(time.Duration) (time.Duration, error) {
	return 0, errors.ErrUnsupported
}
