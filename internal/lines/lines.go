// Package lines reads newline-delimited files (the JSONL the sink writes)
// one line at a time with a bound on a line's length: a longer line is
// reported as such and skipped without being held in memory. It is the
// reading that report (otelstep report) and replay share.
package lines

import (
	"bufio"
	"errors"
	"io"
)

// Reader reads lines of at most max bytes from a buffered reader, keeping
// the byte offset of the next line.
type Reader struct {
	r   *bufio.Reader
	max int
	off int64 // offset of the next line
	buf []byte
}

// NewReader reads r through a buffer of size bytes; off is r's offset in
// its file (where the first line starts), max the longest line kept.
func NewReader(r io.Reader, size, max int, off int64) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, size), max: max, off: off}
}

// Offset is the byte offset of the next line.
func (lr *Reader) Offset() int64 { return lr.off }

// Reset reads on from r, whose offset in its file is off (after a seek).
func (lr *Reader) Reset(r io.Reader, off int64) {
	lr.r.Reset(r)
	lr.off = off
}

// Next returns the next line's bytes (valid until the next call, or Take)
// without its newline, its start offset, whether it ended with a newline,
// and whether it was longer than max (then data is nil). io.EOF when
// nothing is left.
func (lr *Reader) Next() (data []byte, start int64, newline, tooLong bool, err error) {
	start = lr.off
	lr.buf = lr.buf[:0]
	for {
		frag, err := lr.r.ReadSlice('\n')
		lr.off += int64(len(frag))
		if !tooLong {
			if len(lr.buf)+len(frag) > lr.max+1 {
				tooLong, lr.buf = true, lr.buf[:0]
			} else {
				lr.buf = append(lr.buf, frag...)
			}
		}
		switch {
		case err == nil:
			if tooLong {
				return nil, start, true, true, nil
			}
			return lr.buf[:len(lr.buf)-1], start, true, false, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if lr.off == start {
				return nil, start, false, false, io.EOF
			}
			if tooLong {
				return nil, start, false, true, nil
			}
			return lr.buf, start, false, false, nil
		default:
			return nil, start, false, false, err
		}
	}
}

// Take hands over the buffer the last line was read into: a long line is
// kept as read rather than copied.
func (lr *Reader) Take() {
	lr.buf = nil
}
