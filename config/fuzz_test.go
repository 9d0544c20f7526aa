package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkParse parses data and checks that a refused config lists at least
// one error, each naming the file. A panic fails the test.
func checkParse(t *testing.T, what string, data []byte) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("%s: panic: %v\n%s", what, p, data)
		}
	}()
	_, err := Parse("f.yaml", data, jobEnv)
	if err == nil {
		return
	}
	errs := Errors(err)
	if len(errs) == 0 {
		t.Fatalf("%s: refused with no error listed: %v", what, err)
	}
	for _, e := range errs {
		if !strings.HasPrefix(e.Error(), "f.yaml") {
			t.Fatalf("%s: error does not name the file: %v", what, e)
		}
	}
}

// The decoder goes on past errors with what it has decoded so far: every
// line of the real configs deleted, or its value made a list,
// must not panic it.
func TestParseMutations(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		for i, l := range lines {
			key, _, hasValue := strings.Cut(l, ": ")
			muts := []string{""}
			if hasValue {
				muts = append(muts, key+": [1, 2]")
			}
			for _, m := range muts {
				edited := append(append(append([]string(nil), lines[:i]...), m), lines[i+1:]...)
				checkParse(t, fmt.Sprintf("%s:%d as %q", p, i+1, m), []byte(strings.Join(edited, "\n")))
			}
		}
	}
}

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkParse(t, "input", data) })
}
