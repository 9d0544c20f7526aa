//go:build !linux

package main

import (
	"errors"
	"time"
)

// The timer slack is Linux's (tuning_linux.go).

func currentTimerSlack() (time.Duration, error) { return 0, errors.ErrUnsupported }

func setTimerSlack(time.Duration) error { return errors.ErrUnsupported }
