package harness

import "syscall"

// procAttr puts a worker process in a process group of its own (Kill ends
// the group: anything the worker started goes with it) and has the kernel
// kill it when the test process dies, however it dies: a `go test`
// timeout panics past every Cleanup, and its workers must not outlive it.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
