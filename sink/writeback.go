package sink

// The JSONL files are written once and read later, if ever, by replay or a
// shipper: keeping what was written in the page cache only evicts what the
// job on the node is using, and on a VM whose host reclaims freed guest
// memory every fresh page-cache page costs a host fault (measured here:
// appending to a file costs 1.1-1.3 ns of system time a byte when the page
// cache grows, 0.15-0.2 ns when it reuses its own pages). So, as
// RocksDB's bytes_per_sync and PostgreSQL's backend_flush_after do, the
// sink starts writeback of every writebackChunk it appends and drops the
// chunk before that from the page cache once the kernel has written it.
// Both are hints (sync_file_range and fadvise): they never make a write
// fail, and the fsync at shutdown still decides durability.

// writebackChunk is how often writeback is started: large enough that the
// calls cost nothing next to the bytes, small enough that the pages kept
// (about two chunks) are a few MiB.
const writebackChunk = 8 << 20

// writeback tracks the offsets of one append-only file.
type writeback struct {
	fd       uintptr
	chunk    int64
	off      int64 // end of the file as this sink has written it
	started  int64 // writeback started for [.., started)
	last     int64 // start of the last range writeback was started for
	dropped  int64 // dropped from the page cache: [.., dropped)
	disabled bool  // a call failed (not a file the kernel can write back): no more hints
}

// wrote records n bytes appended and, at each chunk boundary, starts
// writeback of the new chunk and drops the chunks before it. A page still
// under writeback is skipped by the kernel, so the chunk just before the
// new one is dropped again at the next boundary.
func (w *writeback) wrote(n int) {
	if w == nil || w.disabled {
		return
	}
	w.off += int64(n)
	if w.off-w.started < w.chunk {
		return
	}
	from := w.started
	if err := startWriteback(w.fd, from, w.off-from); err != nil {
		w.disabled = true
		return
	}
	w.started = w.off
	// [dropped, from) had at least a chunk's time to be written.
	if from > w.dropped {
		_ = dropCache(w.fd, w.dropped, from-w.dropped)
		w.dropped = max(w.dropped, alignDown(w.last))
	}
	w.last = from
}

// dropAlign is where a dropped range's end is taken back to for the next
// one: the kernel keeps a page or a large folio (up to 2 MiB, naturally
// aligned) that a range covers only in part, so the next range starts at
// or before it.
const dropAlign = 2 << 20

func alignDown(off int64) int64 { return off &^ (dropAlign - 1) }

// synced drops the file from the page cache once it is fsynced (all clean).
func (w *writeback) synced() {
	if w == nil || w.disabled {
		return
	}
	_ = dropCache(w.fd, 0, 0) // the whole file: pages skipped at a boundary too
	w.dropped = w.off
}
