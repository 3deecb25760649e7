package gwproc

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmgateway/llmgateway/integration/logbuf"
)

func TestPeakRSSOfSelf(t *testing.T) {
	peak, err := PeakRSSKB(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	cur, err := RSSKB(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if peak <= 0 || cur <= 0 {
		t.Fatalf("VmHWM %d KiB, VmRSS %d KiB", peak, cur)
	}
	if _, err := PeakRSSKB(-1); err == nil {
		t.Fatal("no error for a missing process")
	}
}

func TestStartReportsEarlyExit(t *testing.T) {
	_, err := Start(Config{Binary: "/bin/sh", Args: []string{"-c", "echo boom >&2; exit 3"}})
	if err == nil || !strings.Contains(err.Error(), "exited before ready") || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("err = %v", err)
	}
}

func TestFreeAddrIsLoopback(t *testing.T) {
	addr, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("addr %q", addr)
	}
}

func TestKillEndsAProcessThatIgnoresSIGTERM(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "trap '' TERM; while :; do sleep 1; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &Process{cmd: cmd, done: make(chan struct{}), logs: &logbuf.Buffer{Max: 1 << 20}}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	killed := make(chan error, 1)
	go func() { killed <- p.Kill() }()
	select {
	case err := <-killed:
		if err != nil {
			t.Fatalf("Kill: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Kill did not return within 5s")
	}
	if !p.Exited() {
		t.Fatal("not exited after Kill")
	}
	var exitErr *exec.ExitError
	if !errors.As(p.err, &exitErr) || exitErr.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("wait error %v, want killed by SIGKILL", p.err)
	}
	if err := p.Kill(); err != nil {
		t.Fatalf("second Kill: %v", err)
	}
	if err := p.Stop(); err != nil {
		t.Fatalf("Stop after Kill: %v", err)
	}
}

// CPUTime counts the CPU the process burns: a busy loop moves it by two
// clock ticks long before a 10 s wall-clock bound.
func TestCPUTimeOfSelfGrows(t *testing.T) {
	before, err := CPUTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	x := 0
	for {
		for i := 0; i < 1e6; i++ {
			x += i
		}
		after, err := CPUTime(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if after-before >= 20*time.Millisecond {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("CPU time moved %v in 10 s of a busy loop", after-before)
		}
	}
	_ = x
}

// With LogFile the child writes its output to the file itself, and Logs
// reads it back.
func TestLogFileTakesTheOutput(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/out.log"
	p, err := Start(Config{Binary: "/bin/sh", Args: []string{"-c", "echo hello-from-the-child; exit 3"}, LogFile: file})
	if err == nil {
		p.Stop()
		t.Fatal("a process that exited was reported ready")
	}
	if !strings.Contains(err.Error(), "hello-from-the-child") {
		t.Fatalf("the error carries no output of the child: %v", err)
	}
	data, _ := os.ReadFile(file)
	if !strings.Contains(string(data), "hello-from-the-child") {
		t.Fatalf("log file holds %q", data)
	}
}
