package config

import (
	"strconv"

	"go.yaml.in/yaml/v3"
)

// The otlp_http exporter's compression and compression_params.level, as
// the collector's confighttp takes them for the types otelstep
// implements; the sink (sink.Compression) gives them the collector's
// meanings.

// compression reads the compression type: gzip, zstd, snappy or none
// ("" is none, as in the collector).
func (d *dec) compression(n *yaml.Node, path string) (string, error) {
	s, err := d.str(n, path)
	if err != nil {
		return "", err
	}
	switch s {
	case "gzip", "zstd", "snappy", "none":
		return s, nil
	case "":
		return "none", nil
	}
	return "", d.errf(n, path, "compression %q is not implemented (gzip, zstd, snappy or none)", s)
}

// compressionParams reads compression_params into e, returning the level's
// node (nil when absent) for compressionLevel, which checks it against the
// type once the whole exporter is read.
func (d *dec) compressionParams(e *OTLPHTTPExporter, n *yaml.Node, path string) (*yaml.Node, error) {
	var level *yaml.Node
	err := d.mapping(n, path, []string{"level"}, func(key string, kn, vn *yaml.Node) error {
		level = vn
		v, err := strconv.Atoi(vn.Value)
		if vn.Kind != yaml.ScalarNode || err != nil {
			return d.errf(vn, join(path, key), "expected an integer level, got %q", vn.Value)
		}
		e.CompressionLevel = v
		return nil
	})
	return level, err
}

// compressionLevel checks e's level (read from n, nil when not set)
// against its compression, as the collector does: gzip takes -2 (Huffman
// only), -1 (its default, level 6) and 0 to 9, 0 meaning not set (the
// default too); zstd any level (mapped to its nearest); snappy and none
// none.
func (d *dec) compressionLevel(e *OTLPHTTPExporter, n *yaml.Node, path string) error {
	if n == nil {
		return nil
	}
	lv := e.CompressionLevel
	switch e.Compression {
	case "gzip":
		if lv < -2 || lv > 9 {
			return d.errf(n, path, "level %d is not a gzip level (-2 Huffman only, -1 the default, 1 fastest to 9 smallest)", lv)
		}
	case "zstd":
	default:
		if lv != 0 {
			return d.errf(n, path, "compression %s takes no level (only gzip and zstd do)", e.Compression)
		}
	}
	return nil
}
