package shellquote

import (
	"os/exec"
	"testing"
)

func TestQuote(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"/var/log/job-1/otel", "/var/log/job-1/otel"},
		{"--since=2026-01-02T03:04:05Z", "--since=2026-01-02T03:04:05Z"},
		{"", "''"},
		{"a b", "'a b'"},
		{"it's", `'it'\''s'`},
		{"$HOME", "'$HOME'"},
	} {
		got := Quote(c.in)
		if got != c.want {
			t.Errorf("Quote(%q) = %s, want %s", c.in, got, c.want)
		}
		// The shell reads it back as the one word.
		out, err := exec.Command("sh", "-c", "printf %s "+got).Output()
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != c.in {
			t.Errorf("sh reads %s as %q, want %q", got, out, c.in)
		}
	}
}
