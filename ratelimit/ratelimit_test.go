package ratelimit

import (
	"context"
	"testing"
	"time"
)

func TestLimiterSpacesEvents(t *testing.T) {
	l := New(100) // 10ms apart
	start := time.Now()
	for range 6 {
		if err := l.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if el := time.Since(start); el < 45*time.Millisecond {
		t.Errorf("6 waits at 100/s took %v, want at least 50ms", el)
	}
}

func TestLimiterStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l := New(0.001)
	_ = l.Wait(ctx) // the first slot is now
	if err := l.Wait(ctx); err == nil {
		t.Error("a wait on a cancelled context returned nil")
	}
	if New(0) != nil || New(0).Wait(context.Background()) != nil {
		t.Error("no rate must mean no limiter and no wait")
	}
	if err := Sleep(ctx, time.Hour); err == nil {
		t.Error("Sleep on a cancelled context returned nil")
	}
}
