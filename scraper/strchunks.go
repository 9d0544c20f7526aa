package scraper

import "unsafe"

// strChunks makes strings whose bytes lie one after the other in shared
// chunks, in the order they are made. The converter keeps a target's raw
// series keys and metadata lines in them, in page order: each scrape
// compares the page's lines with them front to back (linecache.go), and
// at many targets those comparisons were a quarter of the conversion
// while each key was an allocation of its own, because every first touch
// of a key was a cache miss. Laid out in page order the hardware
// prefetcher reads ahead, and the keys take no size-class rounding.
//
// A chunk's bytes are never written again once handed out, so the
// strings stay immutable. A chunk lives while any of its strings does:
// series that come and go leave dead bytes behind until the chunk's last
// string goes, at most chunkSize per string still alive in the worst
// (interleaved) case, and nothing when a page's series keep coming back,
// which is what targets do.
type strChunks struct {
	buf []byte // the current chunk; its free part is buf[len(buf):cap(buf)]
}

// chunkSize is the size of a chunk; strings longer than a quarter of it
// get an allocation of their own rather than waste a chunk's tail.
const chunkSize = 4 << 10

// str returns a string equal to b.
func (sc *strChunks) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > chunkSize/4 {
		return string(b)
	}
	if cap(sc.buf)-len(sc.buf) < len(b) {
		sc.buf = make([]byte, 0, chunkSize)
	}
	n := len(sc.buf)
	sc.buf = append(sc.buf, b...)
	return unsafe.String(&sc.buf[n], len(b))
}
