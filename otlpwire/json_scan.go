package otlpwire

import (
	"strconv"
	"strings"
)

// The byte-level JSON scanner under the OTLP/JSON decoders. It accepts
// exactly the JSON that protojson's tokenizer accepts (including its number
// grammar and its rejection of invalid UTF-8 and lone surrogates), so that
// everything the protojson path decoded still decodes. This file holds its
// state, errors, whitespace, separators and the skipping of unknown values;
// json_scan_string.go, json_scan_number.go and json_scan_value.go read the
// values.

// maxJSONDepth bounds message nesting the way protojson's default recursion limit
// (protowire.DefaultRecursionLimit) does: hostile input cannot exhaust the
// stack, and nothing protojson accepts is refused.
const maxJSONDepth = 10000

// jsonDecoder scans one OTLP/JSON document in b. Each string value is copied
// out of b on its own, so decoded messages do not keep the input alive.
type jsonDecoder struct {
	b         []byte
	pos       int    // next byte to read
	depth     int    // messages open, counted as protojson counts them
	buf       []byte // scratch for unescaping strings
	jsonPools        // storage for the decoded messages
	idBytes   slab[byte]

	strCache [internBuckets]string // see intern
}

// decodeError locates a decoding failure by byte offset and by the path of
// field names from the request down. It never holds input text: attribute
// values can be secrets.
type decodeError struct {
	off  int
	msg  string
	path []string // innermost first; list indexes are separate "[i]" segments
}

func (e *decodeError) Error() string {
	var b strings.Builder
	for i := len(e.path) - 1; i >= 0; i-- {
		seg := e.path[i]
		if b.Len() > 0 && seg[0] != '[' {
			b.WriteByte('.')
		}
		b.WriteString(seg)
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	b.WriteString("at byte ")
	b.WriteString(strconv.Itoa(e.off))
	b.WriteString(": ")
	b.WriteString(e.msg)
	return b.String()
}

// fail returns an error at byte off. At the end of the input the message
// says so, whatever the caller expected.
func (d *jsonDecoder) fail(off int, msg string) error {
	if off >= len(d.b) {
		msg = "unexpected end of input"
	}
	return &decodeError{off: off, msg: msg}
}

// within adds a path segment (a field name) to err on its way up.
func within(err error, seg string) error {
	if e, ok := err.(*decodeError); ok {
		e.path = append(e.path, seg)
	}
	return err
}

// withinIndex adds a list index segment to err on its way up.
func withinIndex(err error, i int) error {
	return within(err, "["+strconv.Itoa(i)+"]")
}

// typeError reports that the value at off has the wrong type for its field.
// A syntax error inside that value takes precedence: it is what protojson
// reports and the more useful message for a truncated or mangled line.
func (d *jsonDecoder) typeError(off int, want string) error {
	d.pos = off
	if err := d.skip(maxJSONDepth); err != nil {
		return err
	}
	return d.fail(off, "want "+want)
}

// peek returns the byte at d.pos, or 0 at the end of the input (NUL is never
// valid outside strings, so callers treat both as unexpected).
func (d *jsonDecoder) peek() byte {
	if d.pos < len(d.b) {
		return d.b[d.pos]
	}
	return 0
}

// skipWS skips the four JSON whitespace bytes. Compact JSON has none, so
// the first test usually returns.
func (d *jsonDecoder) skipWS() {
	if d.pos < len(d.b) && d.b[d.pos] > ' ' {
		return
	}
	for d.pos < len(d.b) {
		switch d.b[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// separator consumes whitespace and a ',' (true) or the closing byte (false)
// after an object member or array element.
func (d *jsonDecoder) separator(closing byte) (bool, error) {
	if d.pos < len(d.b) {
		switch d.b[d.pos] {
		case ',':
			d.pos++
			d.skipWS()
			return true, nil
		case closing:
			d.pos++
			return false, nil
		}
	}
	return d.separatorSlow(closing)
}

// separatorSlow is separator after whitespace or at an error.
func (d *jsonDecoder) separatorSlow(closing byte) (bool, error) {
	d.skipWS()
	switch d.peek() {
	case ',':
		d.pos++
		d.skipWS()
		return true, nil
	case closing:
		d.pos++
		return false, nil
	}
	return false, d.fail(d.pos, "want ',' or '"+string(closing)+"'")
}

// isNotDelim reports whether c may not directly follow a literal or number,
// as in protojson's tokenizer ("truex" and "1a" are errors).
func isNotDelim(c byte) bool {
	return c == '-' || c == '+' || c == '.' || c == '_' ||
		('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// literal consumes word (true, false or null) if it is next and followed by
// a delimiter.
func (d *jsonDecoder) literal(word string) bool {
	end := d.pos + len(word)
	if end > len(d.b) || string(d.b[d.pos:end]) != word || (end < len(d.b) && isNotDelim(d.b[end])) {
		return false
	}
	d.pos = end
	return true
}

// null consumes a null if it is next.
func (d *jsonDecoder) null() bool {
	return d.pos < len(d.b) && d.b[d.pos] == 'n' && d.literal("null")
}

// skip consumes one JSON value of any type, checking its syntax. rem is how
// many more arrays and objects may open inside it; protojson bounds skipped
// values by its remaining recursion budget in the same way.
func (d *jsonDecoder) skip(rem int) error {
	start := d.pos
	switch c := d.peek(); c {
	case '"':
		end, _, err := d.scanString(start)
		d.pos = end
		return err
	case '{', '[':
		if rem < 1 {
			return d.fail(start, "nesting too deep")
		}
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		d.pos++
		d.skipWS()
		if d.peek() == closing {
			d.pos++
			return nil
		}
		for {
			if c == '{' {
				if _, err := d.key(); err != nil {
					return err
				}
			}
			if err := d.skip(rem - 1); err != nil {
				return err
			}
			more, err := d.separator(closing)
			if !more {
				return err
			}
		}
	case 't', 'f', 'n':
		if d.literal("true") || d.literal("false") || d.literal("null") {
			return nil
		}
	default:
		if c == '-' || isDigit(c) {
			if n, ok := scanNumber(d.b[start:]); ok {
				d.pos += n
				return nil
			}
		}
	}
	return d.fail(start, "invalid value")
}
