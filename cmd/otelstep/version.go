package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

// version is the module version and source revision the binary was built
// from, as the build info holds them: "(devel)" for a build in a working
// copy, the revision when the go command could read the VCS, "+modified"
// when the working copy had changes.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown: no build info)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+modified"
			}
		}
	}
	if rev != "" && !strings.Contains(v, rev[:min(12, len(rev))]) {
		v += " revision " + rev + modified
	}
	return v
}

// runVersion is `otelstep version` and `otelstep --version`.
func runVersion(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		if args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
			fmt.Fprintln(stdout, "usage: otelstep version\n\nPrints the module version and the source revision (from the build info) and the Go version.")
			return exitOK
		}
		fmt.Fprintf(stderr, "otelstep version: unexpected argument %q\n", args[0])
		return exitUsage
	}
	bi, _ := debug.ReadBuildInfo()
	goVersion := "unknown"
	if bi != nil {
		goVersion = bi.GoVersion
	}
	fmt.Fprintf(stdout, "otelstep %s %s\n", version(), goVersion)
	return exitOK
}
