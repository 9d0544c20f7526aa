package report

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/otelstep/otelstep/internal/lines"
	"github.com/otelstep/otelstep/otlpwire"
)

// signalFiles are the files of a job's otel/ folder, in the order they are
// read. Each line is dispatched by its first key, not by the file's name, so
// a file holding several signals is read whole.
var signalFiles = []string{"metrics.jsonl", "traces.jsonl", "logs.jsonl"}

// DefaultMaxLineBytes is the longest line decoded (replay's limit): a longer
// one is counted as skipped without being held in memory.
const DefaultMaxLineBytes = 1 << 30

// FileStats counts one file's lines.
type FileStats struct {
	Path    string `json:"path"`
	Bytes   int64  `json:"bytes"`
	Lines   int    `json:"lines"`
	Skipped int    `json:"skipped"` // damaged, cut, too long or not an export request
	// FirstProblem is the first skipped line, as FILE:LINE: reason.
	FirstProblem string `json:"first_problem,omitempty"`
}

// ResolveDir returns the folder holding a job's JSONL files: dir itself when
// it holds one of them, else dir/otel.
func ResolveDir(dir string) (string, error) {
	for _, d := range []string{dir, filepath.Join(dir, "otel")} {
		for _, f := range signalFiles {
			if st, err := os.Stat(filepath.Join(d, f)); err == nil && st.Mode().IsRegular() {
				return d, nil
			}
		}
	}
	return "", fmt.Errorf("report: %s: no metrics.jsonl, traces.jsonl or logs.jsonl in it or in %s", dir, filepath.Join(dir, "otel"))
}

// readFile reads one JSONL file in one pass, handing each decoded export
// request to the job. Lines that cannot be decoded are counted and skipped.
func (j *jobReader) readFile(ctx context.Context, path string) (FileStats, error) {
	st := FileStats{Path: path}
	f, err := os.Open(path)
	if err != nil {
		return st, fmt.Errorf("report: open %w", err)
	}
	defer f.Close()
	lr := lines.NewReader(f, 1<<20, j.maxLine, 0)
	for no := 1; ; no++ {
		if err := ctx.Err(); err != nil {
			return st, fmt.Errorf("report: %s:%d: %w", path, no, err)
		}
		data, _, newline, tooLong, err := lr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return st, fmt.Errorf("report: read %s:%d: %w", path, no, err)
		}
		st.Lines++
		skip := func(reason string) {
			st.Skipped++
			if st.FirstProblem == "" {
				st.FirstProblem = fmt.Sprintf("%s:%d: %s", path, no, reason)
			}
		}
		switch {
		case tooLong:
			skip(fmt.Sprintf("line longer than %d bytes", j.maxLine))
			continue
		case len(bytes.TrimSpace(data)) == 0:
			st.Lines--
			continue
		}
		if err := j.decodeLine(data); err != nil {
			if !newline {
				skip("cut short (no newline at the end of the file)")
			} else {
				skip(err.Error())
			}
		}
	}
	st.Bytes = lr.Offset()
	return st, nil
}

// decodeLine decodes one export request and hands it on.
func (j *jobReader) decodeLine(data []byte) error {
	switch sniff(data) {
	case "resourceMetrics", "resource_metrics":
		req, err := otlpwire.DecodeMetrics(data)
		if err != nil {
			return err
		}
		j.onMetrics(req.ResourceMetrics)
	case "resourceSpans", "resource_spans":
		req, err := otlpwire.DecodeTraces(data)
		if err != nil {
			return err
		}
		j.onTraces(req.ResourceSpans)
	case "resourceLogs", "resource_logs":
		req, err := otlpwire.DecodeLogs(data)
		if err != nil {
			return err
		}
		j.onLogs(req.ResourceLogs)
	default:
		return errors.New("not an OTLP export request")
	}
	return nil
}

// sniff returns the first key of a JSON object, without decoding it.
func sniff(data []byte) string {
	i := 0
	for i < len(data) && isSpace(data[i]) {
		i++
	}
	if i >= len(data) || data[i] != '{' {
		return ""
	}
	i++
	for i < len(data) && isSpace(data[i]) {
		i++
	}
	if i >= len(data) || data[i] != '"' {
		return ""
	}
	end := bytes.IndexByte(data[i+1:], '"')
	if end < 0 {
		return ""
	}
	return string(data[i+1 : i+1+end])
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }
