// Package logbuf is the integration tests' one goroutine-safe buffer for
// a child process's or a component's output, read back for assertions
// and failure messages.
package logbuf

import (
	"bytes"
	"sync"
)

// Buffer collects writes from several goroutines. With Max > 0 it keeps
// only the newest output: once it holds more than Max bytes, the oldest
// half is dropped before the next write (so it holds at most about
// Max + the largest write).
type Buffer struct {
	Max int

	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Max > 0 && b.buf.Len() > b.Max {
		rest := append([]byte(nil), b.buf.Bytes()[b.buf.Len()-b.Max/2:]...)
		b.buf.Reset()
		b.buf.Write(rest)
	}
	return b.buf.Write(p)
}

// String is what the buffer holds.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
