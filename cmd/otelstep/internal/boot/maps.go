package boot

// span is an address range [lo, hi).
type span struct{ lo, hi uintptr }

// maxSpans bounds what readOnlyOf returns: a Go binary has two read-only
// mappings (text and rodata), three or four when linked by an external
// linker.
const maxSpans = 8

// readOnlyOf returns the first n (at most maxSpans) readable, unwritable
// mappings of the file path in maps (the text of /proc/self/maps: "lo-hi
// perms offset dev inode path" a line), without allocating: it runs while
// the runtime is barely up. A line cut short at the end of maps is skipped.
func readOnlyOf(maps, path []byte) (out [maxSpans]span, n int) {
	for len(maps) > 0 && n < maxSpans {
		line := maps
		end := indexByte(maps, '\n')
		if end < 0 {
			break // cut short
		}
		line, maps = maps[:end], maps[end+1:]
		lo, i := parseHex(line, 0)
		if i >= len(line) || line[i] != '-' {
			continue
		}
		hi, j := parseHex(line, i+1)
		// " rwxp": the perms follow one space.
		if j+5 > len(line) || line[j] != ' ' || line[j+1] != 'r' || line[j+2] == 'w' {
			continue
		}
		if len(line) < len(path)+1 || string(line[len(line)-len(path):]) != string(path) || line[len(line)-len(path)-1] != ' ' {
			continue
		}
		out[n] = span{uintptr(lo), uintptr(hi)}
		n++
	}
	return out, n
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// parseHex parses the lower-case hex number at b[i:] and returns it and the
// index after it.
func parseHex(b []byte, i int) (uint64, int) {
	var v uint64
	for ; i < len(b); i++ {
		c := b[i]
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | uint64(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | uint64(c-'a'+10)
		default:
			return v, i
		}
	}
	return v, i
}
