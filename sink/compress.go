package sink

import (
	"bytes"
	stdgzip "compress/gzip"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"

	"github.com/otelstep/otelstep/pipeline"
)

// Compression is how the exporter compresses its request bodies: the
// collector's otlphttp exporter settings `compression` and
// `compression_params.level`, with the collector's meanings and defaults
// (its confighttp client), so that a backend receives about as many bytes
// from otelstep as from the collector.
type Compression struct {
	// Type is "gzip", "zstd", "snappy" (the block format, as the
	// collector's "snappy"), or "none" ("" is none too).
	Type string
	// Level is compression_params.level. 0 is the type's default, as in
	// the collector: for gzip DefaultCompression, which is level 6 (the
	// standard library's meaning of -1, which the collector uses; the
	// compression library here would read -1 as 5), for zstd the fastest
	// (the collector maps its levels with zstd.EncoderLevelFromZstd, and
	// fills an unset level with -1). gzip takes -2 (Huffman only), -1, and
	// 1 to 9; zstd any level; snappy and none no level.
	Level int
}

// DefaultCompression is the exporter's compression when none is
// configured: gzip at the collector's default level.
var DefaultCompression = Compression{Type: "gzip"}

// Validate reports a type or level the exporter does not take, in the
// collector's words where it has them.
func (c Compression) Validate() error {
	switch c.Type {
	case "gzip":
		if c.Level < gzip.HuffmanOnly || c.Level > gzip.BestCompression {
			return fmt.Errorf("unsupported compression level %d for compression type %q (-2 to 9)", c.Level, c.Type)
		}
	case "zstd":
	case "snappy", "none", "":
		if c.Level != 0 {
			return fmt.Errorf("unsupported compression level %d for compression type %q (it takes none)", c.Level, c.Type)
		}
	default:
		return fmt.Errorf("unsupported compression type %q (gzip, zstd, snappy or none)", c.Type)
	}
	return nil
}

// Encoding is the body's Content-Encoding, "" when it is not compressed.
func (c Compression) Encoding() string {
	if c.Type == "none" {
		return ""
	}
	return c.Type
}

func (c Compression) String() string {
	switch c.Type {
	case "", "none":
		return "none"
	case "snappy":
		return c.Type
	}
	return fmt.Sprintf("%s level %d", c.Type, c.level())
}

// level is the compression library's level for c (gzip's level, or
// zstd's EncoderLevel).
func (c Compression) level() int {
	switch c.Type {
	case "gzip":
		if c.Level == 0 || c.Level == gzip.DefaultCompression {
			return 6
		}
	case "zstd":
		lv := c.Level
		if lv == 0 {
			lv = -1
		}
		return int(zstd.EncoderLevelFromZstd(lv))
	}
	return c.Level
}

// libLevel is the compression library's level for a body of sig. The
// collector's gzip level 6 (its default) is the standard library's lazy
// matcher; this library's levels up to 6 use faster matchers of its own,
// which on spans' and log records' high-entropy fields (ids, attribute
// values) send noticeably more bytes than the collector does, while its
// level 7 (the lazy matcher) sends as many at the same cost. On metrics,
// repetitive series, its level 6 is the nearer and the cheaper.
// docs/decisions.md has the figures.
func (c Compression) libLevel(sig pipeline.Signal) int {
	lv := c.level()
	if c.Type == "gzip" && lv == 6 && sig != pipeline.Metrics {
		return 7
	}
	return lv
}

// asCollector reports whether a body of sig, of scraped batches or not,
// is compressed by the standard library's gzip, the collector's own
// compressor, rather than this library's. Metrics at the collector's
// default level that the scraper did not make (received over OTLP,
// span_metrics' series, lines read back): their protobuf is the one the
// collector would send, so only its compressor sends its bytes, and this
// library's levels send up to a fifth more on repetitive series. The
// scraper's batches hold more of each page than the collector's, which
// makes up for this library's level 6 at a third of the cost.
func (c Compression) asCollector(sig pipeline.Signal, scraped bool) bool {
	return c.Type == "gzip" && c.level() == 6 && sig == pipeline.Metrics && !scraped
}

// compressor is a stateful compressing writer, reset for each body.
type compressor interface {
	io.WriteCloser
	Reset(w io.Writer)
}

// compressors are an encoder's compressing writers, one per type, each
// made on first use and kept for the encoder's life (gzip's is about
// 1 MB of tables and window: made anew per request it would cost as much
// CPU as the compression). A writer is remade when the level asked for
// changes, which a sink never does.
type compressors struct {
	std     *stdgzip.Writer // the collector's gzip (Compression.asCollector)
	gz      *gzip.Writer
	gzLevel int
	zs      *zstd.Encoder
	zsLevel int
}

// writer returns c's writer for a body of sig (of scraped batches or
// not), reset to write to out; nil for snappy and none, which are not
// streamed.
func (cs *compressors) writer(c Compression, sig pipeline.Signal, scraped bool, out *bytes.Buffer) (compressor, error) {
	if c.asCollector(sig, scraped) {
		if cs.std == nil {
			cs.std, _ = stdgzip.NewWriterLevel(out, stdgzip.DefaultCompression) // a valid level: no error
			return cs.std, nil
		}
		cs.std.Reset(out)
		return cs.std, nil
	}
	lv := c.libLevel(sig)
	switch c.Type {
	case "gzip":
		if cs.gz == nil || cs.gzLevel != lv {
			zw, err := gzip.NewWriterLevel(out, lv)
			if err != nil {
				return nil, fmt.Errorf("gzip level %d: %w", lv, err)
			}
			cs.gz, cs.gzLevel = zw, lv
			return zw, nil
		}
		cs.gz.Reset(out)
		return cs.gz, nil
	case "zstd":
		if cs.zs == nil || cs.zsLevel != lv {
			// One goroutine, as the collector's: the workers already
			// encode in parallel.
			zw, err := zstd.NewWriter(out, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.EncoderLevel(lv)))
			if err != nil {
				return nil, fmt.Errorf("zstd level %d: %w", lv, err)
			}
			cs.zs, cs.zsLevel = zw, lv
			return zw, nil
		}
		cs.zs.Reset(out)
		return cs.zs, nil
	}
	return nil, nil
}

// appendSnappy appends raw, snappy block-compressed (the collector's
// "snappy": one block, not the framed stream), to out.
func appendSnappy(out *bytes.Buffer, raw []byte) error {
	n := snappy.MaxEncodedLen(len(raw))
	if n < 0 {
		return fmt.Errorf("snappy: a body of %d bytes is too large for one block", len(raw))
	}
	out.Grow(n)
	out.Write(snappy.Encode(out.AvailableBuffer()[:n], raw))
	return nil
}
