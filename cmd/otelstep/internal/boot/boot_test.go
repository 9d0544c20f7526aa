package boot

import (
	"os"
	"runtime"
	"testing"
)

func TestMain(m *testing.M) {
	// init ran before this: it set GOMAXPROCS unless the environment did.
	if _, set := os.LookupEnv("GOMAXPROCS"); !set {
		if got := runtime.GOMAXPROCS(0); got != Procs {
			println("boot: GOMAXPROCS is", got, "after init, want", Procs)
			os.Exit(1)
		}
		RestoreProcs()
		runtime.SetDefaultGOMAXPROCS()
		want := runtime.GOMAXPROCS(0)
		runtime.GOMAXPROCS(Procs)
		procsSet = true
		RestoreProcs()
		if got := runtime.GOMAXPROCS(0); got != want {
			println("boot: GOMAXPROCS is", got, "after RestoreProcs, want the default", want)
			os.Exit(1)
		}
	}
	os.Exit(m.Run())
}

func TestReadOnlyOf(t *testing.T) {
	const maps = `00400000-00c48000 r-xp 00000000 fe:00 1234                               /tmp/otelstep
00c48000-0154f000 r--p 00848000 fe:00 1234                               /tmp/otelstep
0154f000-015cc000 rw-p 0114f000 fe:00 1234                               /tmp/otelstep
015cc000-0361a000 rw-p 00000000 00:00 0 
02000000-02001000 r--p 00000000 fe:00 99                                 /tmp/x/tmp/otelstep
02001000-02002000 r--p 00000000 fe:00 98                                 /tmp/otelstep.old
02002000-02003000 ---p 00000000 fe:00 1234                               /tmp/otelstep
7f0000000000-7f0000001000 r--p 00000000 fe:00 77                         /usr/lib/libc.so.6
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
5600aa000000-5600aa001000 r--p 00000000 fe:00 1234                       /tmp/otelstep
`
	got, n := readOnlyOf([]byte(maps), []byte("/tmp/otelstep"))
	want := []span{{0x400000, 0xc48000}, {0xc48000, 0x154f000}, {0x5600aa000000, 0x5600aa001000}}
	if n != len(want) {
		t.Fatalf("%d spans %x, want %x", n, got[:n], want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("span %d: %x, want %x", i, got[i], want[i])
		}
	}

	// A last line cut short (the read stopped in it) is not taken.
	cut := maps[:len(maps)-10]
	if _, n := readOnlyOf([]byte(cut), []byte("/tmp/otelstep")); n != 2 {
		t.Errorf("maps cut in its last line: %d spans, want 2", n)
	}
	if _, n := readOnlyOf([]byte("garbage\n-\n0-\n00400000-00c48000\n"), []byte("/tmp/otelstep")); n != 0 {
		t.Errorf("garbage: %d spans, want 0", n)
	}
}
