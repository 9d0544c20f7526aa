package main

import (
	"strings"
	"testing"
)

// TestReleasable: only the binary's own read-only mappings without a
// private page are released; a read-only mapping a loader wrote to
// (Anonymous above 0), a writable one, another file's and anonymous memory
// are left alone.
func TestReleasable(t *testing.T) {
	const exe = "/opt/job dir/otelstep"
	smaps := `00400000-00c44000 r-xp 00000000 fe:01 123 /opt/job dir/otelstep
Size:               8464 kB
Rss:                7312 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me
00c44000-01546000 r--p 00844000 fe:01 123 /opt/job dir/otelstep
Size:               9224 kB
Rss:                6920 kB
Anonymous:             0 kB
01546000-01560000 r--p 01146000 fe:01 123 /opt/job dir/otelstep
Rss:                  40 kB
Anonymous:            40 kB
01560000-015c3000 rw-p 01160000 fe:01 123 /opt/job dir/otelstep
Rss:                 436 kB
Anonymous:           120 kB
015c3000-01600000 rw-p 00000000 00:00 0
Rss:                 908 kB
Anonymous:           908 kB
7f0000000000-7f0000100000 r-xp 00000000 fe:01 9 /usr/lib/x86_64-linux-gnu/libc.so.6
Rss:                 920 kB
Anonymous:             0 kB
7f0000200000-7f0000300000 r--p 00000000 fe:01 124 /opt/job dir/otelstep.old
Rss:                  12 kB
Anonymous:             0 kB
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
Rss:                  20 kB
Anonymous:            20 kB
`
	ms, err := releasable(strings.NewReader(smaps), exe)
	if err != nil {
		t.Fatal(err)
	}
	want := []mapping{
		{lo: 0x400000, hi: 0xc44000, perms: "r-xp", path: exe, rssKB: 7312},
		{lo: 0xc44000, hi: 0x1546000, perms: "r--p", path: exe, rssKB: 6920},
	}
	if len(ms) != len(want) {
		t.Fatalf("got %d mappings %+v, want %+v", len(ms), ms, want)
	}
	for i := range want {
		if ms[i] != want[i] {
			t.Errorf("mapping %d: %+v, want %+v", i, ms[i], want[i])
		}
	}
}
