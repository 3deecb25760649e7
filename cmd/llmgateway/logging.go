package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// level orders the binary's lifecycle log lines.
type level int

const (
	levelDebug level = iota
	levelInfo
	levelWarn
	levelError
)

var levelNames = []string{"DEBUG", "INFO", "WARN", "ERROR"}

func (l level) String() string {
	if l < levelDebug || l > levelError {
		return fmt.Sprintf("level(%d)", int(l))
	}
	return levelNames[l]
}

// parseLevel accepts debug, info, warn (or warning) and error, in any case.
func parseLevel(v string) (level, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "debug":
		return levelDebug, nil
	case "info":
		return levelInfo, nil
	case "warn", "warning":
		return levelWarn, nil
	case "error":
		return levelError, nil
	}
	return 0, errors.New("must be one of debug, info, warn, error")
}

// logger writes the binary's own lifecycle lines in the gateway's format,
// "2026-01-02T15:04:05Z llmgw[name] LEVEL message", dropping lines below its minimum level. The
// gateway core writes its own lines to the same stream, unfiltered.
//
// Lines never carry config values: a config value may be key material.
type logger struct {
	mu     sync.Mutex
	out    io.Writer
	prefix string
	min    level
	now    func() time.Time
}

func newLogger(out io.Writer, name string, min level) *logger {
	return &logger{out: out, prefix: "llmgw[" + name + "] ", min: min, now: time.Now}
}

func (l *logger) logf(lv level, format string, args ...interface{}) {
	if lv < l.min {
		return
	}
	line := l.now().UTC().Format(time.RFC3339) + " " + l.prefix + lv.String() + " " + fmt.Sprintf(format, args...)
	line = strings.TrimRight(line, "\n") + "\n"
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = io.WriteString(l.out, line)
}

func (l *logger) debugf(format string, args ...interface{}) { l.logf(levelDebug, format, args...) }
func (l *logger) infof(format string, args ...interface{})  { l.logf(levelInfo, format, args...) }
func (l *logger) warnf(format string, args ...interface{})  { l.logf(levelWarn, format, args...) }

// levelWriter adapts the logger to an io.Writer at a fixed level, for
// http.Server's ErrorLog.
type levelWriter struct {
	l     *logger
	level level
}

func (w levelWriter) Write(p []byte) (int, error) {
	w.l.logf(w.level, "%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
