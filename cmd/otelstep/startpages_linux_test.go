package main

import (
	"os"
	"testing"

	"github.com/otelstep/otelstep/config"
)

// exeResidentKB is how many kB of the test binary's read-only mappings
// are resident.
func exeResidentKB(t *testing.T) int64 {
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
	var kb int64
	for _, m := range ms {
		kb += m.rssKB
	}
	return kb
}

// TestReleaseStartPages: in this very process, the binary's read-only
// pages leave the resident set, and the code goes on running (whatever it
// touches next faults back in).
func TestReleaseStartPages(t *testing.T) {
	before := exeResidentKB(t)
	if before == 0 {
		t.Skip("no resident read-only mapping of the test binary")
	}
	kb, err := releaseStartPages()
	if err != nil {
		t.Fatal(err)
	}
	after := exeResidentKB(t)
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
