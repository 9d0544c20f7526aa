package sink

import (
	"errors"
	"os"
	"unsafe"
)

// Where the file system takes it, the JSONL sink writes its big write-outs
// with O_DIRECT, from its own buffer straight to the device, and only the
// small ends of flushes through the page cache. Why: writing through the
// page cache costs this process the copy into it, the kernel's page
// allocation (on a VM whose host reclaims freed guest memory, a host fault a
// page) and the writeback hints that keep the cache from filling
// (writeback.go): 0.32-0.42 ns of CPU a byte measured here for 256 KiB
// writes with those hints. A direct write costs about 80 µs whatever its
// size plus about 0.05 ns a byte: 0.13-0.16 ns a byte for 1 MiB writes,
// 0.06-0.08 for 4 MiB. The JSONL is the larger of the two copies of
// everything (about 220 bytes a sample, 700 a span), so this is 5-8% of
// the whole ingest path.
//
// How the file stays as plain writes would leave it: the buffer's start is
// always at a block-aligned file offset (base). A write-out sends the
// buffer's whole blocks with one pwrite on the O_DIRECT descriptor and
// keeps the part block after them at the buffer's start; a flush then
// appends that part block through the page cache (the sink's ordinary
// descriptor, O_APPEND), so a reader sees every whole line at once, as
// before. The next direct write rewrites that part block with the same
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
	// directBufSize is the sink's buffer in direct mode: the 80 µs a
	// direct write costs is a quarter of what the page cache costs for
	// 1 MiB.
	directBufSize = 1 << 20
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
