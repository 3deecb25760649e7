package gwproc

import (
	"os"
	"strings"
	"testing"
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
