package config

import (
	"strings"
	"testing"
)

// compressionConfig is base with an otlp_http exporter holding the given
// keys (YAML at the exporter's indent).
func compressionConfig(keys string) string {
	src := strings.Replace(base, "exporters:\n", "exporters:\n  otlp_http:\n    endpoint: http://127.0.0.1:1\n"+keys, 1)
	return strings.Replace(src, "exporters: [file/traces]", "exporters: [file/traces, otlp_http]", 1)
}

// The collector's exporter keys compression and compression_params.level,
// for the types otelstep implements, with its rules for levels.
func TestExporterCompression(t *testing.T) {
	cases := []struct {
		name, keys string
		comp       string
		level      int
	}{
		{"default", "", "gzip", 0},
		{"gzip level", "    compression: gzip\n    compression_params:\n      level: 9\n", "gzip", 9},
		{"level before type", "    compression_params:\n      level: 1\n    compression: gzip\n", "gzip", 1},
		{"gzip default level", "    compression_params:\n      level: -1\n", "gzip", -1},
		{"huffman only", "    compression_params:\n      level: -2\n", "gzip", -2},
		{"zstd", "    compression: zstd\n", "zstd", 0},
		{"zstd any level", "    compression: zstd\n    compression_params:\n      level: 22\n", "zstd", 22},
		{"snappy", "    compression: snappy\n", "snappy", 0},
		{"none", "    compression: none\n", "none", 0},
		{"empty is none", "    compression: \"\"\n", "none", 0},
		{"level 0 on none", "    compression: none\n    compression_params:\n      level: 0\n", "none", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse("t.yaml", []byte(compressionConfig(tc.keys)), env(nil))
			if err != nil {
				t.Fatal(err)
			}
			e := c.OTLPHTTP["otlp_http"]
			if e.Compression != tc.comp || e.CompressionLevel != tc.level {
				t.Fatalf("compression %q level %d, want %q %d", e.Compression, e.CompressionLevel, tc.comp, tc.level)
			}
		})
	}
	refused := []struct {
		name, keys string
		want       []string
	}{
		{"lz4", "    compression: lz4\n", []string{"t.yaml:9:", "otlp_http.compression", `"lz4"`, "gzip, zstd, snappy or none"}},
		{"gzip level 10", "    compression: gzip\n    compression_params:\n      level: 10\n", []string{"t.yaml:11:", "compression_params.level", "10", "gzip level"}},
		{"gzip level -3", "    compression_params:\n      level: -3\n", []string{"t.yaml:10:", "compression_params.level", "-3"}},
		{"snappy level", "    compression_params:\n      level: 3\n    compression: snappy\n", []string{"t.yaml:10:", "compression_params.level", "snappy takes no level"}},
		{"level not a number", "    compression_params:\n      level: fast\n", []string{"t.yaml:10:", "compression_params.level", "fast"}},
		{"unknown param", "    compression_params:\n      window: 15\n", []string{"t.yaml:10:", "compression_params.window", `unknown key "window"`}},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(compressionConfig(tc.keys)), env(nil))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
