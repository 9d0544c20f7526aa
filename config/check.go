package config

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Problem is one finding of Check: an error the run would stop on, or a
// warning (accepted, likely a mistake, or true here and not where the
// job's collector will run).
type Problem struct {
	Warning bool
	Err     *Error
}

func (p Problem) String() string {
	if !p.Warning {
		return p.Err.Error()
	}
	e := *p.Err
	e.Msg = "warning: " + e.Msg
	return e.Error()
}

// Check reports, beyond the errors Parse refuses a file for, what would
// meet the run on this machine: a JSONL or log file whose folder cannot
// be created or written (an error, as the run stops on it), a listening port
// already in use (a warning: a job's collector runs later, elsewhere),
// and c.Warnings. Nothing is created: the folders are checked from their
// first existing parent.
func Check(c *Config) []Problem {
	out := append([]Problem(nil), c.Warnings...)
	for _, id := range sortedKeys(c.Files) {
		f := c.Files[id]
		if err := writable(f.Path); err != nil {
			out = append(out, Problem{Err: &Error{File: c.File, Line: f.Line, Path: "exporters." + id + ".path", Msg: err.Error()}})
		}
	}
	for key, paths := range map[string][]string{"output_paths": c.Service.Logs.OutputPaths, "error_output_paths": c.Service.Logs.ErrorOutputPaths} {
		for _, p := range paths {
			if p == "stderr" || p == "stdout" {
				continue
			}
			if err := writable(p); err != nil {
				path := "service.telemetry.logs." + key
				out = append(out, Problem{Err: &Error{File: c.File, Line: c.lineOf(path), Path: path, Msg: err.Error()}})
			}
		}
	}
	for _, l := range c.listeners() {
		if err := portFree(l.addr); err != nil {
			out = append(out, Problem{Warning: true, Err: &Error{File: c.File, Line: c.lineOf(l.path), Path: l.path,
				Msg: fmt.Sprintf("%s: %v (the run would fail here and now; where the job's collector runs, the port may be free)", l.addr, err)}})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Err.Line < out[j].Err.Line })
	return out
}

// writable says why a file at path could not be created or appended to.
func writable(path string) error {
	if fi, err := os.Stat(path); err == nil {
		if fi.IsDir() {
			return fmt.Errorf("%s is a folder, not a file", path)
		}
		if err := unix.Access(path, unix.W_OK); err != nil {
			return fmt.Errorf("%s cannot be written: %w", path, err)
		}
		return nil
	}
	// The nearest folder that exists must let the rest be made in it.
	dir := filepath.Dir(path)
	for {
		fi, err := os.Stat(dir)
		if err == nil {
			if !fi.IsDir() {
				return fmt.Errorf("the folder of %s cannot be created: %s is a file", path, dir)
			}
			if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
				return fmt.Errorf("the folder of %s cannot be created or written: %s: %w", path, dir, err)
			}
			return nil
		}
		if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return fmt.Errorf("the folder of %s: %w", path, err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return nil
		}
		dir = parent
	}
}

// portFree reports an address already in use (any other failure to
// listen, a host not of this machine say, is not this check's to report).
func portFree(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		return ln.Close()
	}
	if errors.Is(err, syscall.EADDRINUSE) {
		return errors.New("the port is already in use on this machine")
	}
	return nil
}

type listener struct{ path, addr string }

// listeners are the addresses the run would listen on.
func (c *Config) listeners() []listener {
	var out []listener
	for _, id := range sortedKeys(c.HealthCheck) {
		if contains(c.Service.Extensions, id) {
			out = append(out, listener{"extensions." + id + ".endpoint", c.HealthCheck[id].Endpoint})
		}
	}
	used := map[string]bool{}
	for _, p := range c.Service.Pipelines {
		for _, r := range p.Receivers {
			used[r] = true
		}
	}
	for _, id := range sortedKeys(c.OTLP) {
		o := c.OTLP[id]
		if !used[id] || o == nil {
			continue
		}
		if o.GRPCEndpoint != "" {
			out = append(out, listener{"receivers." + id + ".protocols.grpc.endpoint", o.GRPCEndpoint})
		}
		if o.HTTPEndpoint != "" {
			out = append(out, listener{"receivers." + id + ".protocols.http.endpoint", o.HTTPEndpoint})
		}
	}
	for _, r := range c.Service.Telemetry.Readers {
		if r.Pull != nil && r.Pull.Port != 0 {
			out = append(out, listener{r.Path + ".pull", net.JoinHostPort(r.Pull.Host, strconv.Itoa(r.Pull.Port))})
		}
	}
	return out
}

// lineOf is the line of the key at path, or of its nearest parent read.
func (c *Config) lineOf(path string) int {
	for path != "" {
		if l := c.lines[path]; l > 0 {
			return l
		}
		i := strings.LastIndexByte(path, '.')
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return 0
}
