package otlpwire

// The decoders' memory: the messages of a request are carved from slabs,
// and its repeated fields built from lists (see decoder); the OTLP/JSON
// decoder's pools (json_decode_pool.go) are slabs too.

// Chunk sizes, in elements.
const (
	minChunk = 1
	maxChunk = 4096
)

// slab hands out elements of one type from chunks. A chunk is sized by
// extrapolating how many elements the rest of the body will need from how
// many the part already read needed (OTLP requests are repetitive), halved
// so an unrepresentative start costs one more chunk rather than a large
// unused one, and at least half of what was handed out so far, so the
// number of chunks grows logarithmically when the estimate is low.
type slab[T any] struct {
	free  []T // rest of the current chunk
	chunk []T // the current chunk, for rewind
	used  int // elements handed out so far
}

// one returns a zeroed element. done is the decoder's position, total the
// body's length.
func (s *slab[T]) one(done, total int) *T {
	if len(s.free) == 0 {
		s.refill(1, done, total)
	}
	p := &s.free[0]
	s.free = s.free[1:]
	s.used++
	return p
}

// alloc returns n zeroed elements. The slice's capacity equals its length,
// so appending to it reallocates instead of overwriting its neighbour.
func (s *slab[T]) alloc(n, done, total int) []T {
	if len(s.free) < n {
		s.refill(n, done, total)
	}
	out := s.free[:n:n]
	s.free = s.free[n:]
	s.used += n
	return out
}

func (s *slab[T]) refill(n, done, total int) {
	size := max(minChunk, s.used/2)
	if done > 0 {
		size = max(size, int(int64(s.used)*int64(total-done)/int64(done)/2))
	}
	s.free = make([]T, max(n, min(size, maxChunk)))
	s.chunk = s.free
}

// rewind hands out the current chunk again, zeroed, once nothing handed out
// is in use (a scratch decoder's, between spans). used is kept, so a chunk
// that was too small is replaced by one sized for what the spans so far
// needed, and the chunk settles at about one span's worth.
func (s *slab[T]) rewind() {
	clear(s.chunk[:len(s.chunk)-len(s.free)])
	s.free = s.chunk
}

// rewind is slab.rewind for a list. Its stack is only emptied: what it held
// past its length points into the list's own chunks, which rewind clears.
func (l *list[T]) rewind() {
	l.items.rewind()
	l.ptrs.rewind()
	l.stack = l.stack[:0]
}

// list stores the messages of one type and builds the repeated fields that
// hold them. While a message is decoded, the elements of its repeated field
// are pushed on stack; when the message ends, finish copies them into an
// exact-size slice carved from ptrs. Lists of the same type nest (a
// KeyValue's kvlist value holds KeyValues): an element is pushed only once
// it is fully decoded, and a nested list is finished, popped back to its
// mark, before that, so each message's elements are contiguous above its
// mark.
type list[T any] struct {
	items slab[T]
	ptrs  slab[*T]
	stack []*T
}

func (l *list[T]) new(done, total int) *T { return l.items.one(done, total) }

func (l *list[T]) push(m *T) { l.stack = append(l.stack, m) }

func (l *list[T]) mark() int { return len(l.stack) }

// count is how many elements were pushed since mark.
func (l *list[T]) count(mark int) int { return len(l.stack) - mark }

// finish returns dst with the elements pushed since mark appended, and pops
// them. dst is empty unless a message occurs more than once and is merged;
// a non-empty dst came from an earlier finish with capacity equal to its
// length, so append copies rather than writes into a neighbour's slice.
func (l *list[T]) finish(mark int, dst []*T, done, total int) []*T {
	n := len(l.stack) - mark
	if n == 0 {
		return dst
	}
	var out []*T
	if len(dst) == 0 {
		out = l.ptrs.alloc(n, done, total)
		copy(out, l.stack[mark:])
	} else {
		out = append(dst, l.stack[mark:]...)
	}
	l.stack = l.stack[:mark]
	return out
}
