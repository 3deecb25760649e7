package gateway

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// logger writes the gateway's own lines as
// "2026-01-02T15:04:05Z llmgw[name] LEVEL message". Its contract: never
// log key material — callers pass names, digests never, keys never.
type logger struct {
	mu     sync.Mutex
	out    io.Writer
	prefix string
	now    func() time.Time
}

func newLogger(name string, out io.Writer) *logger {
	if name == "" {
		name = "gateway"
	}
	if out == nil {
		out = os.Stderr
	}
	return &logger{out: out, prefix: "llmgw[" + name + "]", now: time.Now}
}

func (l *logger) write(level, format string, args []interface{}) {
	l.line(level, fmt.Sprintf(format, args...))
}

// line writes msg as it is: the per-request lines build msg by
// concatenation (strconv.Quote for quoted values), which under Yaegi is
// far cheaper than a variadic Sprintf call.
func (l *logger) line(level, msg string) {
	s := l.now().UTC().Format(time.RFC3339) + " " + l.prefix + " " + level + " " + msg + "\n"
	l.mu.Lock()
	_, _ = io.WriteString(l.out, s)
	l.mu.Unlock()
}

func (l *logger) infof(format string, args ...interface{})  { l.write("INFO", format, args) }
func (l *logger) warnf(format string, args ...interface{})  { l.write("WARN", format, args) }
func (l *logger) errorf(format string, args ...interface{}) { l.write("ERROR", format, args) }
