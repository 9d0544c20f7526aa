package main

import (
	"strings"
	"testing"
	"time"
)

func TestTimerSlackFrom(t *testing.T) {
	for _, c := range []struct {
		env  string
		set  bool
		want time.Duration
		bad  bool
	}{
		{set: false, want: defaultTimerSlack},
		{env: "0", set: true, want: 0},
		{env: " 0 ", set: true, want: 0},
		{env: "2ms", set: true, want: 2 * time.Millisecond},
		{env: "750us", set: true, want: 750 * time.Microsecond},
		{env: "1s", set: true, want: time.Second},
		{env: "", set: true, bad: true},
		{env: "5", set: true, bad: true}, // a unit is wanted
		{env: "abc", set: true, bad: true},
		{env: "-1ms", set: true, bad: true},
		{env: "500ns", set: true, bad: true},
		{env: "2s", set: true, bad: true},
	} {
		got, err := timerSlackFrom(func(k string) (string, bool) {
			if k != timerSlackEnv {
				t.Fatalf("looked up %q", k)
			}
			return c.env, c.set
		})
		if c.bad {
			if err == nil {
				t.Errorf("%q: %v, want an error", c.env, got)
			} else if !strings.Contains(err.Error(), timerSlackEnv) || !strings.Contains(err.Error(), c.env) {
				t.Errorf("%q: error %q does not name the variable and its value", c.env, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q (set %v): %v, %v; want %v", c.env, c.set, got, err, c.want)
		}
	}
}

func TestTimerSlackRefused(t *testing.T) {
	code, out := runBinary(t, []string{timerSlackEnv + "=5"}, "validate", "--config", "testdata/collector-v1.yaml")
	if code != exitUsage {
		t.Fatalf("%s=5: exit %d, want %d\n%s", timerSlackEnv, code, exitUsage, out)
	}
	if !strings.Contains(out, timerSlackEnv+`="5"`) {
		t.Errorf("the error does not name the variable and its value: %q", out)
	}
}
