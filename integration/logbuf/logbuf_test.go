package logbuf

import (
	"strings"
	"sync"
	"testing"
)

func TestConcurrentWritesAllKept(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				_, _ = b.Write([]byte("x\n"))
			}
		}()
	}
	wg.Wait()
	if got := strings.Count(b.String(), "x\n"); got != 800 {
		t.Fatalf("kept %d lines, want 800", got)
	}
}

func TestMaxKeepsTheNewest(t *testing.T) {
	b := Buffer{Max: 100}
	for i := 0; i < 50; i++ {
		_, _ = b.Write([]byte("old-line\n"))
	}
	_, _ = b.Write([]byte("newest\n"))
	s := b.String()
	if len(s) > 100+len("newest\n") {
		t.Fatalf("holds %d bytes, want at most %d", len(s), 100+len("newest\n"))
	}
	if !strings.HasSuffix(s, "old-line\nnewest\n") {
		t.Fatalf("does not end with the newest output: %q", s)
	}
}
