package web_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/chromedp/chromedp"
)

// chromiumCPUms is the CPU time (user + system, ms) used so far by the
// browser of ctx and all its descendant processes (renderer, GPU, network
// service), from /proc. Unlike wall time it hardly depends on what else
// the machine runs; 0 when /proc is not there.
func chromiumCPUms(ctx context.Context) float64 {
	c := chromedp.FromContext(ctx)
	if c == nil || c.Browser == nil || c.Browser.Process() == nil {
		return 0
	}
	root := c.Browser.Process().Pid
	type proc struct{ ppid, ticks int }
	procs := map[int]proc{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(s[i+1:]) // state ppid ... utime(12) stime(13)
		if len(fields) < 13 {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		ppid, _ := strconv.Atoi(fields[1])
		ut, _ := strconv.Atoi(fields[11])
		st, _ := strconv.Atoi(fields[12])
		procs[pid] = proc{ppid, ut + st}
	}
	in := func(pid int) bool {
		for n := 0; pid > 1 && n < 64; n++ {
			if pid == root {
				return true
			}
			pid = procs[pid].ppid
		}
		return false
	}
	total := 0
	for pid, p := range procs {
		if in(pid) {
			total += p.ticks
		}
	}
	return float64(total) * 10 // USER_HZ is 100 on Linux
}
