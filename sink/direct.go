package sink

import (
	"errors"
	"os"
	"time"
	"unsafe"
)

// Where the file system takes it, the JSONL sink writes its big write-outs
// with O_DIRECT, from its own buffer straight to the device, and only the
// small ends of flushes through the page cache. Why: writing through the
// page cache costs this process the copy into it, the kernel's page
// allocation (on a VM whose host reclaims freed guest memory, a host fault a
// page) and the writeback hints that keep the cache from filling
// (writeback.go). A direct write costs a fixed amount of CPU whatever its
// size, so it pays only for big writes. Process CPU measured here (user +
// system, ext4 on the VM's disk), paced at 70 MiB/s as the traces load
// writes its JSONL: 256 KiB writes with the hints 1.53-1.56 ns a byte,
// direct writes of 256 KiB cost more than that (2026-12-03), of 1 MiB
// 0.59-0.63, of 2 MiB 0.34, of 4 MiB 0.19-0.21; written as fast as the disk
// takes them 0.32-0.42, 0.13-0.16, 0.09-0.10 and 0.06-0.08. The JSONL is
// the larger of the two copies of everything (about 220 bytes a sample, 700
// a span).
//
// How the file stays as plain writes would leave it: the buffer's start is
// always at a block-aligned file offset (base). A write-out sends the
// buffer's whole blocks with one pwrite on the O_DIRECT descriptor (when
// they are directMin or more) and keeps the rest at the buffer's start; a
// flush then appends that rest through the page cache (the sink's ordinary
// descriptor, O_APPEND), so a reader sees every whole line at once, as
// before, and keeps its last part block in the buffer. The next direct write rewrites that part block with the same
// bytes plus new ones: at most one block written twice a flush. The kernel
// keeps the two descriptors coherent (a direct write first writes back and
// then drops the cached pages it covers).
//
// Direct writes are an optimisation only: a file system that refuses
// O_DIRECT at open (tmpfs, some FUSE) or at the first write gets the page
// cache path, and any error from a direct write turns it off for the file
// and writes the same bytes the ordinary way, where the sink's retries
// and error logs apply.

const (
	// directAlign is the alignment of a direct write's memory, length and
	// file offset: the logical block size is 512 or 4096 bytes, and 4096
	// suits both.
	directAlign = 4096
	// directBufMin and directBufMax bound the sink's buffer in direct
	// mode. Its size follows the rate the file is written at (File.resize):
	// a direct write costs about the same CPU whatever its size (0.3-0.5 ms
	// here, 2026-12-05, paced at 2 MiB/s: 128 KiB to 512 KiB writes cost
	// alike, 2 MiB ones half as much again), so a buffer of a quarter of a
	// second's bytes keeps that to four writes a second, and at the top of
	// the range, the traces load's 70 MiB/s, 2 MiB writes cost a fifth of
	// the page cache's CPU for a quarter of 4 MiB's memory. Sized for the
	// top at all rates, the buffer was an eighth of the heap at 40,000
	// samples a second (1.9 MB of JSONL a second).
	directBufMin = 512 << 10
	directBufMax = 2 << 20
	// directWritesPerSecond is how many write-outs a second the buffer's
	// size aims at, below directBufMax.
	directWritesPerSecond = 4
	// directRateWindow is the least time a rate is measured over.
	directRateWindow = time.Second
	// directMin is the least that goes out as a direct write: below it
	// the page cache is cheaper.
	directMin = 256 << 10
)

// errShortDirect is a direct write that wrote less than it was given, and
// not a whole number of blocks.
var errShortDirect = errors.New("short direct write")

// directFile is the O_DIRECT descriptor of a sink's file.
type directFile struct {
	f    *os.File
	fd   int
	base int64 // file offset of the sink's buf[0]; a multiple of directAlign
	// wrote counts the bytes written directly (tests check direct mode
	// was used).
	wrote int64
	// part is the file's last part block when it was opened, until the
	// buffer is made at the first batch.
	part []byte

	// size is the buffer's size now, between directBufMin and
	// directBufMax: see resize.
	size int
	// since is when the rate window began, at is the bytes written
	// (File.written) then.
	since time.Time
	at    int64
}

// sizeFor returns the buffer size for a file written at rate bytes a
// second, now size bytes: grown to a power of two that fills in a
// directWritesPerSecond'th of a second once the rate outruns the buffer,
// shrunk back once the rate falls below a quarter of that (so that a rate
// near a boundary does not flip the size, and the buffer, every window).
func sizeFor(rate float64, size int) int {
	want := rate / directWritesPerSecond
	if want <= float64(size) && want*4 >= float64(size) {
		return size
	}
	n := directBufMin
	for n < directBufMax && float64(n) < want {
		n <<= 1
	}
	return n
}

// alignedBuf returns an empty slice of capacity n whose memory starts at a
// multiple of directAlign.
func alignedBuf(n int) []byte {
	b := make([]byte, n+directAlign)
	off := 0
	if r := int(uintptr(unsafe.Pointer(&b[0])) % directAlign); r != 0 {
		off = directAlign - r
	}
	return b[off : off : off+n]
}

// isAligned reports whether p's memory starts at a multiple of directAlign
// (a buffer append regrew for one huge resource may not).
func isAligned(p []byte) bool {
	return cap(p) > 0 && uintptr(unsafe.Pointer(unsafe.SliceData(p)))%directAlign == 0
}

func alignDownDirect(n int) int { return n &^ (directAlign - 1) }
