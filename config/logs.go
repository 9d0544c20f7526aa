package config

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Logs is service.telemetry.logs beyond its level, with the collector's
// keys and defaults: console lines on stderr.
type Logs struct {
	// Encoding is console (slog's key=value text) or json (one JSON
	// object a line, for log shippers).
	Encoding string
	// OutputPaths are where the log goes: "stderr", "stdout" or file
	// paths (appended to, created when missing).
	OutputPaths []string
	// ErrorOutputPaths are where a failure to write the log is reported,
	// as the collector's logger does (not where ERROR lines go).
	ErrorOutputPaths []string
}

func defaultLogs() Logs {
	return Logs{Encoding: "console", OutputPaths: []string{"stderr"}, ErrorOutputPaths: []string{"stderr"}}
}

// logsKey decodes one key of service.telemetry.logs other than level.
func (c *Config) logsKey(d *dec, key string, kn, vn *yaml.Node, path string) error {
	l := &c.Service.Logs
	switch key {
	case "encoding":
		s, err := d.str(vn, path)
		if err != nil {
			return err
		}
		switch strings.ToLower(s) {
		case "console", "json":
			l.Encoding = strings.ToLower(s)
		default:
			return d.errf(vn, path, "unknown encoding %q (console or json)", s)
		}
	case "output_paths", "error_output_paths":
		list, err := d.strList(vn, path)
		if err != nil {
			return err
		}
		for i, p := range list {
			if p == "" {
				return d.errf(vn.Content[i], fmt.Sprintf("%s[%d]", path, i), "empty path (stderr, stdout or a file)")
			}
		}
		if len(list) == 0 {
			return d.errf(vn, path, "no paths: the log would go nowhere (stderr, stdout or files)")
		}
		if key == "output_paths" {
			l.OutputPaths = list
		} else {
			l.ErrorOutputPaths = list
		}
	case "sampling":
		return d.errf(kn, path, "sampling is not implemented: otelstep logs a repeated problem once, then a periodic summary, so there is nothing to sample; remove the key")
	}
	return nil
}
