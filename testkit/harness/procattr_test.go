//go:build linux

package harness

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// A test process that dies abruptly (as a `go test -timeout` panic does,
// past every Cleanup) takes the processes it started with procAttr along.
func TestWorkerDiesWithTest(t *testing.T) {
	if os.Getenv("HARNESS_PROCATTR_CHILD") == "1" {
		c := exec.Command("sleep", "300")
		c.SysProcAttr = procAttr()
		if err := c.Start(); err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString(strconv.Itoa(c.Process.Pid) + "\n")
		panic("test timed out") // no Cleanup, no Kill
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestWorkerDiesWithTest$")
	cmd.Env = append(os.Environ(), "HARNESS_PROCATTR_CHILD=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(line[:len(line)-1])
	if err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait() // the child test panicked
	// The kernel delivers SIGKILL at the parent's death; the orphan is
	// reaped by init. Poll until the pid is gone (bounded).
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := syscall.Kill(pid, 0)
		if errors.Is(err, syscall.ESRCH) {
			return
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("worker pid %d still alive 10 s after its test process died", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
