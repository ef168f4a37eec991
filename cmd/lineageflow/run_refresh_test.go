package main

import (
	"testing"
	"time"
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
