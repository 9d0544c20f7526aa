package main

import (
	"bufio"
	"io"
	"strconv"
	"strings"
)

// Startup touches far more of the binary than running does: package
// initialisers (protobuf registration of every OTLP, gRPC and Prometheus
// type), config parsing and validation, building the pipelines. Linux maps
// a binary's pages into the process as they are touched, 64 KiB around
// each first touch, and they count in its resident set for as long as the
// mapping lasts, whether or not they are ever run again: 14.6 MiB of an
// idle otelstep's 17.6 MiB, and 15 MiB under a scrape load, of which
// about 10 MiB is what the running pipelines touch again (a 64 KiB window
// at a time). The job's memory, as Slurm's accounting and an OOM policy
// read it, is that resident set.
//
// So once the service is running, otelstep asks the kernel to unmap the
// pages of its binary's read-only mappings (text, rodata, pclntab):
// madvise(MADV_DONTNEED). It asks again once every target's first scrape
// is done: those make every series' state (textparse, the label and series
// tables), which the next scrapes, taking their lines from the line cache,
// seldom run; about 1 MiB more at 84 targets. The pages are clean page
// cache, so nothing is lost or written: those the running process still
// uses fault back in at their next touch, and the rest stay out. Only
// mappings that hold no private (copied-on-write) page are released: a
// read-only mapping a loader wrote to before protecting it (the
// relocations of a position-independent binary) would get the file's bytes
// back, not its own.

// mapping is one line of /proc/self/smaps with the fields read here.
type mapping struct {
	lo, hi    uint64
	perms     string
	path      string
	rssKB     int64
	anonymous int64 // kB of private anonymous (copied-on-write) pages
}

// releasable returns the mappings of exe in smaps (the text of
// /proc/self/smaps) that releaseStartPages releases: read-only, of the file
// itself, with no private page.
func releasable(smaps io.Reader, exe string) ([]mapping, error) {
	var out []mapping
	var cur *mapping
	keep := func() {
		if cur != nil && cur.path == exe && !strings.ContainsAny(cur.perms, "w") && cur.anonymous == 0 {
			out = append(out, *cur)
		}
	}
	sc := bufio.NewScanner(smaps)
	for sc.Scan() {
		line := sc.Text()
		fs := strings.Fields(line)
		if len(fs) == 0 {
			continue
		}
		if k, ok := strings.CutSuffix(fs[0], ":"); ok {
			// A field of the current mapping: "Name:   N kB".
			if cur == nil || len(fs) < 2 {
				continue
			}
			v, err := strconv.ParseInt(fs[1], 10, 64)
			if err != nil {
				continue // VmFlags and the like
			}
			switch k {
			case "Rss":
				cur.rssKB = v
			case "Anonymous":
				cur.anonymous = v
			}
			continue
		}
		// A mapping's header: "lo-hi perms offset dev inode [path]".
		keep()
		cur = nil
		a, b, ok := strings.Cut(fs[0], "-")
		if !ok || len(fs) < 5 {
			continue
		}
		lo, err1 := strconv.ParseUint(a, 16, 64)
		hi, err2 := strconv.ParseUint(b, 16, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		m := mapping{lo: lo, hi: hi, perms: fs[1]}
		if len(fs) >= 6 {
			m.path = strings.Join(fs[5:], " ")
		}
		cur = &m
	}
	keep()
	return out, sc.Err()
}
