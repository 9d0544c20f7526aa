package sink

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"strings"
)

// scrubber hides secrets (the ingest token) wherever they appear in the
// bytes the JSONL sink writes: an application that puts the token in its
// own span attributes, log bodies or bytes values would otherwise have it
// written verbatim to a file in the job's folder. Resource attributes
// named in RedactResourceKeys are not written at all; this catches the
// rest.
//
// It looks for each secret as its bytes, as its OTLP/JSON string escape
// (when that differs) and as the part of its base64 that depends on it
// alone at each of the three alignments (OTLP/JSON writes bytes values as
// base64), and overwrites each match in place with bytes of the same
// length: '*' for the secret's bytes, 'A' (valid base64, so a bytes value
// still decodes) within base64. Same length, so a line's place in the
// file, which the delivery records hold, is what was counted when the
// line was built.
//
// The search reads one 8-byte word every stride bytes, stride being the
// shortest pattern's length less 7: every match of a pattern then holds
// one such word whole, one of the pattern's 8-byte pieces, which a bitmap
// of their hashes tells apart from other text in one probe. Only a hit
// is searched for the patterns with bytes.Index around it. So the scan
// reads an eighth to a fifteenth of the words, whatever the text; bytes.
// Index over the whole text for each pattern costs a pass per pattern,
// and more where the pattern's first byte is common.
//
// The sampled search is a trick (docs/decisions.md); newScrubber's plain
// argument is its off switch (FileOptions.PlainScrub): every pattern is
// then searched with bytes.Index over the whole write-out. Both find and
// mask the same matches.
//
// The bytes a write-out holds end at a line's end, between two resources
// or between two data points, never inside a string, so a secret is never
// split between two write-outs.
type scrubber struct {
	pats   []scrubPattern
	plain  bool // the off switch: no sampling
	stride int
	maxLen int
	// grams has the bit of the hash (gramHash) of every 8-byte piece of
	// every pattern set.
	grams [1 << gramBits / 64]uint64
}

const gramBits = 16

func gramHash(x uint64) uint64 { return (x * 0x9E3779B97F4A7C15) >> (64 - gramBits) }

type scrubPattern struct {
	b    []byte
	mask byte
}

// minScrubbed is the shortest secret scrubbed: a shorter one would mask
// ordinary text, and is no credential worth the name.
const minScrubbed = 8

// newScrubber returns the scrubber of secrets; nil when there is none to
// scrub. A secret written "Scheme credentials" (Bearer) is scrubbed by its
// credentials. plain turns the sampled-word search off.
func newScrubber(secrets []string, plain bool) *scrubber {
	s := &scrubber{plain: plain}
	seen := map[string]bool{}
	add := func(p string, mask byte) {
		if len(p) >= 4 && !seen[p] {
			seen[p] = true
			s.pats = append(s.pats, scrubPattern{[]byte(p), mask})
		}
	}
	for _, sec := range secrets {
		if _, cred, ok := strings.Cut(strings.TrimSpace(sec), " "); ok && len(strings.TrimSpace(cred)) >= minScrubbed {
			sec = strings.TrimSpace(cred)
		}
		if len(sec) < minScrubbed {
			continue
		}
		add(sec, '*')
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if enc.Encode(sec) == nil {
			add(strings.TrimSuffix(strings.TrimSpace(b.String()), `"`)[1:], '*')
		}
		for k := range 3 {
			pre := append(make([]byte, k, k+len(sec)), sec...)
			for _, e := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
				full := e.EncodeToString(pre)
				from, to := (8*k+5)/6, 8*len(pre)/6
				if to-from >= minScrubbed {
					add(full[from:to], 'A')
				}
			}
		}
	}
	if len(s.pats) == 0 {
		return nil
	}
	s.stride = 1 << 30
	for _, p := range s.pats {
		s.stride = min(s.stride, len(p.b)-7)
		s.maxLen = max(s.maxLen, len(p.b))
		for i := 0; i+8 <= len(p.b); i++ {
			h := gramHash(binary.LittleEndian.Uint64(p.b[i:]))
			s.grams[h/64] |= 1 << (h % 64)
		}
	}
	return s
}

// scrub overwrites every secret in p; it reports how many it found.
func (s *scrubber) scrub(p []byte) int {
	if s == nil {
		return 0
	}
	if s.plain {
		n := 0
		for _, pat := range s.pats {
			m, _ := maskAll(p, pat)
			n += m
		}
		return n
	}
	// The windows where a match may be, merged where they touch, in
	// order; then each pattern searched for in them in turn, leftmost
	// first, as the plain search does over the whole text: the two find
	// and mask the same matches even of patterns that overlap themselves
	// or each other.
	var winArr [64][2]int
	wins := winArr[:0]
	for q := s.nextHit(p, 0); q >= 0; q = s.nextHit(p, q+s.stride) {
		// A match holding the word at q starts no earlier than
		// q+8-maxLen and ends no later than q+maxLen.
		from, to := max(0, q+8-s.maxLen), min(len(p), q+s.maxLen)
		if k := len(wins) - 1; k >= 0 && from <= wins[k][1] {
			wins[k][1] = to
		} else {
			wins = append(wins, [2]int{from, to})
		}
	}
	n := 0
	for _, pat := range s.pats {
		next := 0 // past the pattern's last match
		for _, w := range wins {
			if at := max(w[0], next); at < w[1] {
				m, end := maskAll(p[at:w[1]], pat)
				n += m
				if m > 0 {
					next = at + end
				}
			}
		}
	}
	return n
}

// nextHit returns the first sampled word's place from q on whose hash is
// a pattern piece's, -1 if none.
func (s *scrubber) nextHit(p []byte, q int) int {
	for ; q+8 <= len(p); q += s.stride {
		h := gramHash(binary.LittleEndian.Uint64(p[q:]))
		if s.grams[h/64]&(1<<(h%64)) != 0 {
			return q
		}
	}
	return -1
}

// maskAll overwrites every match of pat in p, leftmost first, with its
// mask; it reports how many it found and where the last one ended.
func maskAll(p []byte, pat scrubPattern) (n, end int) {
	for i := 0; ; {
		j := bytes.Index(p[i:], pat.b)
		if j < 0 {
			return n, i
		}
		at := p[i+j : i+j+len(pat.b)]
		for k := range at {
			at[k] = pat.mask
		}
		n++
		i += j + len(pat.b)
	}
}
