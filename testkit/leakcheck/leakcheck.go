// Package leakcheck (test-only) fails a test that leaves goroutines
// running: call [Check] at the start of a test of any package that starts
// goroutines.
package leakcheck

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// Check fails t if goroutines started during the test are still
// running once it ends (waiting up to 5 s for them to wind down).
// Goroutines whose stack contains one of the except substrings are not
// counted (known leaks inside dependencies, named where they are used).
func Check(t testing.TB, except ...string) {
	before := countGoroutines(except)
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for {
			n := countGoroutines(except)
			if n <= before {
				return
			}
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				t.Errorf("%d goroutines leaked (before %d, after %d):\n%s", n-before, before, n, buf)
				return
			}
			runtime.Gosched()
			time.Sleep(10 * time.Millisecond) // polling for exit, not synchronising
		}
	})
}

// countGoroutines counts the running goroutines, less those whose stack
// holds one of except.
func countGoroutines(except []string) int {
	if len(except) == 0 {
		return runtime.NumGoroutine()
	}
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
next:
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.TrimSpace(g) == "" {
			continue
		}
		for _, e := range except {
			if strings.Contains(g, e) {
				continue next
			}
		}
		count++
	}
	return count
}
