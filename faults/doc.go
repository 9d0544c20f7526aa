// Package faults is otelstep's fault suite: tests that run the built binary
// against a backend and scrape targets on loopback that the test controls,
// and break things the way a bad day on a cluster or a hostile client does
// (a backend down, hung, slow or failing; a file system full; a client that
// never finishes; malformed and oversized input), then check the promise:
// nothing answered 200 is lost, nothing leaks, memory stays bounded, and a
// stop ends in time with exit 0.
//
// The package holds no code but its tests. Each case reports one line of
// the suite's closing table (fault | figure | lost) and fails when lost is
// not 0. README.md lists the cases.
//
// A short version runs with every go test; the long one, with more data and
// longer faults, behind a flag:
//
//	go test ./faults/ -faults.long -v -run . -timeout 30m
//
// The binary is built once per run as otelstep is released (no cgo,
// -pgo=off), so that the memory figures are the release's, not the race
// detector's; -faults.race builds it with the race detector instead.
package faults
