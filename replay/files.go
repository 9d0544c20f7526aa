package replay

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// input is one JSONL file to replay.
type input struct {
	path string // as the user named it (or as found in a folder), for messages
	abs  string // absolute, the identity used by the checkpoint
	size int64  // at resolution time; the file may still grow
}

// resolve turns the command line's paths into the files to replay, in the
// order given, each once. A path is a file, a folder (a job's otel folder:
// every *.jsonl in it, sorted), or a glob over either (for shells that pass
// an unmatched pattern through, and for quoting many jobs' folders). Every
// path must name something: a typo is an error before anything is sent.
func resolve(paths []string) ([]input, error) {
	if len(paths) == 0 {
		return nil, errors.New("no PATH given: name JSONL files or a job's otel folder")
	}
	var out []input
	seen := map[string]bool{}
	add := func(p string, fi fs.FileInfo) error {
		abs, err := filepath.Abs(p)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if seen[abs] {
			return nil
		}
		seen[abs] = true
		out = append(out, input{path: p, abs: abs, size: fi.Size()})
		return nil
	}
	for _, p := range paths {
		matches := []string{p}
		if _, err := os.Stat(p); err != nil && strings.ContainsAny(p, "*?[") {
			m, gerr := filepath.Glob(p)
			if gerr != nil {
				return nil, fmt.Errorf("%s: bad pattern: %w", p, gerr)
			}
			if len(m) == 0 {
				return nil, fmt.Errorf("%s: the pattern matches nothing", p)
			}
			matches = m
		}
		for _, m := range matches {
			fi, err := os.Stat(m)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", m, unwrapPathError(err))
			}
			if !fi.IsDir() {
				if !fi.Mode().IsRegular() {
					return nil, fmt.Errorf("%s: not a regular file", m)
				}
				if err := add(m, fi); err != nil {
					return nil, err
				}
				continue
			}
			files, err := filepath.Glob(filepath.Join(m, "*.jsonl"))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", m, err)
			}
			sort.Strings(files)
			n := 0
			for _, f := range files {
				fi, err := os.Stat(f)
				if err != nil || !fi.Mode().IsRegular() {
					continue
				}
				if err := add(f, fi); err != nil {
					return nil, err
				}
				n++
			}
			if n == 0 {
				return nil, fmt.Errorf("%s: a folder with no .jsonl files", m)
			}
		}
	}
	return out, nil
}

// unwrapPathError drops *fs.PathError's repetition of the path, which the
// caller already names.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
