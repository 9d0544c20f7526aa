package otlpwire

// Allocation is most of the cost of decoding: a metrics request is mostly
// small KeyValue/AnyValue messages. A pool hands out messages of one type
// from chunks allocated together and builds each list into an exact-size
// slice, so a request costs a few allocations per message type rather than
// several per message. Everything handed out belongs to the request being
// decoded (chunks are never reused across calls), so the caller owns the
// result as with any freshly allocated message.

// The chunks are the protobuf decoder's slabs (proto_decode_slab.go); a
// list is built in place at the start of a chunk of pointers (grow, claim).

// minList is the least room a list built in place starts with (see grow).
const minList = 8

// grow moves the first keep elements of the current chunk, a list being
// built in place, to a new chunk with room for more.
func (s *slab[T]) grow(keep, done, total int) {
	// Lists are mostly short and their storage is just pointers, so start
	// with room for a few elements rather than growing one at a time.
	size := max(2*keep, minList)
	if done > 0 {
		size = max(size, keep+(s.used*(total-done)/done)/2)
	}
	free := make([]T, min(size, max(maxChunk, 2*keep)))
	copy(free, s.free[:keep])
	s.free, s.chunk = free, free
}

// claim hands out the first n elements of the current chunk, which the
// caller has filled in place.
func (s *slab[T]) claim(n int) []T {
	out := s.free[:n:n]
	s.free = s.free[n:]
	s.used += n
	return out
}

// pool stores messages of type T for one decoded request and builds the
// lists that hold them.
type pool[T any] struct {
	items slab[T]
	lists slab[*T]
	open  bool // a list is being built in place in lists
}

// new returns a zeroed message; d is the decoder, for its progress.
func (p *pool[T]) new(d *jsonDecoder) *T {
	return &p.items.alloc(1, d.pos, len(d.b))[0]
}

// jsonList decodes a JSON array of messages, each with decode into storage
// from p. Elements may not be null, as in protojson.
//
// The list is built in place at the start of the current chunk of list
// storage, so elements are written once and the list needs no copy. A list
// nested in another list of the same type (an arrayValue inside an
// arrayValue) cannot share that space and uses a slice of its own.
func jsonList[T any](d *jsonDecoder, p *pool[T], decode func(*T) error) ([]*T, error) {
	start := d.pos
	if d.peek() != '[' {
		return nil, d.typeError(start, "an array")
	}
	d.pos++
	d.skipWS()
	if d.peek() == ']' {
		d.pos++
		return nil, nil
	}
	if p.open {
		return nestedList(d, p, decode)
	}
	p.open = true
	defer func() { p.open = false }()
	for n := 0; ; n++ {
		m := p.new(d)
		if err := decode(m); err != nil {
			return nil, withinIndex(err, n)
		}
		if n == len(p.lists.free) {
			p.lists.grow(n, d.pos, len(d.b))
		}
		p.lists.free[n] = m
		more, err := d.separator(']')
		if err != nil {
			return nil, err
		}
		if !more {
			return p.lists.claim(n + 1), nil
		}
	}
}

// nestedList is jsonList for a list inside another of the same type, after the
// '[' and with at least one element.
func nestedList[T any](d *jsonDecoder, p *pool[T], decode func(*T) error) ([]*T, error) {
	var out []*T
	for n := 0; ; n++ {
		m := p.new(d)
		if err := decode(m); err != nil {
			return nil, withinIndex(err, n)
		}
		out = append(out, m)
		more, err := d.separator(']')
		if err != nil {
			return nil, err
		}
		if !more {
			return out, nil
		}
	}
}

// scalarPool is the storage for lists of one scalar type: scratch to
// collect a list in (reused: scalar lists never nest) and the slab its
// exact-size copies are carved from.
type scalarPool[T any] struct {
	scratch []T
	lists   slab[T]
}

// scalars decodes a JSON array of scalars with decode, collecting them in
// p's scratch and returning an exact-size copy from p's lists.
func scalars[T any](d *jsonDecoder, p *scalarPool[T], decode func() (T, error)) ([]T, error) {
	start := d.pos
	if d.peek() != '[' {
		return nil, d.typeError(start, "an array")
	}
	d.pos++
	d.skipWS()
	if d.peek() == ']' {
		d.pos++
		return nil, nil
	}
	buf := p.scratch[:0]
	for i := 0; ; i++ {
		v, err := decode()
		if err != nil {
			return nil, withinIndex(err, i)
		}
		buf = append(buf, v)
		more, err := d.separator(']')
		if err != nil {
			return nil, err
		}
		if !more {
			break
		}
	}
	p.scratch = buf
	out := p.lists.alloc(len(buf), d.pos, len(d.b))
	copy(out, buf)
	return out, nil
}

// idChunk is the least storage allocated at a time for ids: bytes hold no
// pointers, so a few hundred cost next to nothing and save allocations.
const idChunk = 256

// bytes returns n zeroed bytes for an id (trace and span ids are 8 or 16
// bytes each).
func (d *jsonDecoder) bytes(n int) []byte {
	if s := &d.idBytes; len(s.free) < n {
		s.free = make([]byte, max(n, idChunk))
	}
	return d.idBytes.claim(n)
}
