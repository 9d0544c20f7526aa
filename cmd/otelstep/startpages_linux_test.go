package main

import (
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/otelstep/otelstep/cmd/otelstep/internal/boot"
	"github.com/otelstep/otelstep/config"
)

// exeResidentKB is how many kB of the test binary's read-only mappings
// are resident, and their size in kB.
func exeResidentKB(t *testing.T) (rssKB, sizeKB int64) {
	t.Helper()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip("no /proc/self/smaps")
	}
	defer f.Close()
	ms, err := releasable(f, exe)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		rssKB += m.rssKB
		sizeKB += int64(m.hi-m.lo) >> 10
	}
	return rssKB, sizeKB
}

// TestReleaseStartPages: in this very process, the binary's read-only
// pages leave the resident set, and the code goes on running (whatever it
// touches next faults back in).
func TestReleaseStartPages(t *testing.T) {
	before, _ := exeResidentKB(t)
	if before == 0 {
		t.Skip("no resident read-only mapping of the test binary")
	}
	kb, err := releaseStartPages()
	if err != nil {
		t.Fatal(err)
	}
	after, _ := exeResidentKB(t)
	if kb < before/2 || after > before/2 {
		t.Fatalf("resident kB of the binary's read-only mappings: %d before, %d after; release reported %d", before, after, kb)
	}
	// Run something that was not run since: a config parse, the binary's
	// own path.
	cfg, err := config.Parse("(embedded default)", defaultConfig, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Service.Pipelines) == 0 {
		t.Fatal("the embedded default parsed to no pipelines after the release")
	}
	t.Logf("read-only mappings resident: %d kB before, %d kB after, %d released", before, after, kb)
}

// TestPrefault: what releaseStartPages released of the binary, boot.Prefault
// (which package boot's init runs) maps in again, all of it.
func TestPrefault(t *testing.T) {
	if _, err := releaseStartPages(); err != nil {
		t.Fatal(err)
	}
	released, size := exeResidentKB(t)
	if size == 0 {
		t.Skip("no read-only mapping of the test binary to release")
	}
	if err := boot.Prefault(); err != nil {
		if errors.Is(err, syscall.EINVAL) {
			t.Skip("this kernel has no MADV_POPULATE_READ")
		}
		t.Fatal(err)
	}
	after, _ := exeResidentKB(t)
	if after < size*95/100 {
		t.Fatalf("read-only mappings: %d kB; resident %d kB released, %d kB after Prefault, want nearly all", size, released, after)
	}
	t.Logf("read-only mappings: %d kB; resident %d kB released, %d kB after Prefault", size, released, after)
}
