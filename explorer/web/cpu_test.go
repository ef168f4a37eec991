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

// rendererMainCPUms is the CPU time (ms) used so far by the main threads
// of the browser's renderer processes (a renderer's main thread has the
// process's id): the thread that runs the page's JavaScript, style, layout
// and canvas drawing, whose work is the critical path to interactive on an
// idle machine. 0 when /proc is not there.
func rendererMainCPUms(ctx context.Context) float64 {
	c := chromedp.FromContext(ctx)
	if c == nil || c.Browser == nil || c.Browser.Process() == nil {
		return 0
	}
	root := c.Browser.Process().Pid
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	total := 0
	for _, f := range cmdlines {
		b, err := os.ReadFile(f)
		if err != nil || !strings.Contains(string(b), "--type=renderer") {
			continue
		}
		dir := filepath.Dir(f)
		pid, _ := strconv.Atoi(filepath.Base(dir))
		if !descends(pid, root) {
			continue
		}
		st, err := os.ReadFile(filepath.Join(dir, "task", strconv.Itoa(pid), "stat"))
		if err != nil {
			continue
		}
		s := string(st)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(s[i+1:])
		if len(fields) < 13 {
			continue
		}
		ut, _ := strconv.Atoi(fields[11])
		stime, _ := strconv.Atoi(fields[12])
		total += ut + stime
	}
	return float64(total) * 10 // USER_HZ is 100 on Linux
}

// descends reports whether process pid is root or a descendant of it.
func descends(pid, root int) bool {
	for n := 0; pid > 1 && n < 64; n++ {
		if pid == root {
			return true
		}
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return false
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			return false
		}
		fields := strings.Fields(s[i+1:])
		if len(fields) < 2 {
			return false
		}
		pid, _ = strconv.Atoi(fields[1])
	}
	return false
}
