package main

import (
	"flag"
	"testing"
	"time"

	"github.com/lineageflow/lineageflow/internal/cli"
)

// The refresh lane is on by default with 30 s over the default 10 s window,
// three windows where 30 s is not a whole multiple greater than the window,
// and off below the lane's resolution.
func TestDefaultRefreshFor(t *testing.T) {
	for _, c := range []struct{ size, want time.Duration }{
		{10 * time.Second, 30 * time.Second},
		{5 * time.Second, 30 * time.Second},
		{7 * time.Second, 21 * time.Second},
		{30 * time.Second, 90 * time.Second},
		{time.Minute, 3 * time.Minute},
		{time.Millisecond, 0},
	} {
		if got := defaultRefreshFor(c.size); got != c.want {
			t.Errorf("window %v: refresh %v, want %v", c.size, got, c.want)
		}
	}
}

// A -refresh-window given on the command line or in the environment is
// kept, 0 (off) included; unset, the default for the window applies.
func TestResolveRefresh(t *testing.T) {
	parse := func(args ...string) (*flag.FlagSet, *time.Duration) {
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		v := fs.Duration("refresh-window", defaultRefresh, "")
		if err := cli.Parse(fs, args); err != nil {
			t.Fatal(err)
		}
		return fs, v
	}
	fs, v := parse()
	if got := resolveRefresh(fs, 7*time.Second, *v); got != 21*time.Second {
		t.Errorf("unset: %v, want 21s", got)
	}
	fs, v = parse("-refresh-window", "0")
	if got := resolveRefresh(fs, 10*time.Second, *v); got != 0 {
		t.Errorf("-refresh-window 0: %v, want 0", got)
	}
	t.Setenv(cli.EnvName("refresh-window"), "0")
	fs, v = parse()
	if got := resolveRefresh(fs, 10*time.Second, *v); got != 0 {
		t.Errorf("%s=0: %v, want 0", cli.EnvName("refresh-window"), got)
	}
}
