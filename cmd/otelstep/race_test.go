//go:build race

package main

// raceBuild: under go test -race the end-to-end binary is built with the race
// detector too, so a data race anywhere in the running pipeline fails the
// test (the binary then exits 66).
const raceBuild = true
