//go:build !linux

package harness

import "syscall"

// procAttr puts a worker process in a process group of its own (Kill ends
// the group). Only Linux also kills it when the test process dies.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
