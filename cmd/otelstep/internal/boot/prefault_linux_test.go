package boot

import (
	"bufio"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// residentKB returns the size and the resident kB of this test binary's
// read-only mappings, from /proc/self/smaps.
func residentKB(t *testing.T) (sizeKB, rssKB int64) {
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
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) == 0 {
			continue
		}
		if !strings.HasSuffix(fs[0], ":") {
			in = len(fs) >= 6 && strings.Join(fs[5:], " ") == exe && fs[1][0] == 'r' && fs[1][1] != 'w'
			continue
		}
		if in && len(fs) >= 2 {
			v, _ := strconv.ParseInt(fs[1], 10, 64)
			switch fs[0] {
			case "Size:":
				sizeKB += v
			case "Rss:":
				rssKB += v
			}
		}
	}
	return sizeKB, rssKB
}

// TestPrefault: the binary's read-only pages, released, are all resident
// again after prefault.
func TestPrefault(t *testing.T) {
	var exe [1024]byte
	n, err := syscall.Readlink("/proc/self/exe", exe[:])
	if err != nil {
		t.Fatal(err)
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	spans, k := readOnlyOf(maps, exe[:n])
	if k == 0 {
		t.Fatalf("no read-only mapping of %s in /proc/self/maps", exe[:n])
	}
	// Probe the kernel: MADV_POPULATE_READ came in Linux 5.14.
	if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, spans[0].lo, 4096, madvPopulateRead); e != 0 {
		if errors.Is(e, syscall.EINVAL) {
			t.Skip("this kernel has no MADV_POPULATE_READ")
		}
		t.Fatal(e)
	}
	for _, s := range spans[:k] {
		if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, s.lo, s.hi-s.lo, syscall.MADV_DONTNEED); e != 0 {
			t.Fatalf("madvise(MADV_DONTNEED) %x-%x: %v", s.lo, s.hi, e)
		}
	}
	size, released := residentKB(t)
	prefault()
	_, after := residentKB(t)
	if after < size*95/100 {
		t.Fatalf("read-only mappings: %d kB; resident %d kB released, %d kB after prefault, want nearly all", size, released, after)
	}
	t.Logf("read-only mappings: %d kB; resident %d kB released, %d kB after prefault", size, released, after)
}
