package scraper

import (
	"testing"
	"unsafe"
)

// TestSeriesStateSizes: the per-series structs stay in the size classes
// their comments promise; one of each exists per series of every target.
func TestSeriesStateSizes(t *testing.T) {
	if n := unsafe.Sizeof(pointSeries{}); n > 96 {
		t.Errorf("pointSeries is %d bytes, want at most 96", n)
	}
	if n := unsafe.Sizeof(seriesEntry{}); n > 48 {
		t.Errorf("seriesEntry is %d bytes, want at most 48", n)
	}
}
