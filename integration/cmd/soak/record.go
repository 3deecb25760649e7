package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// sample is one reading of the gateway and the traffic so far.
type sample struct {
	at         time.Duration // since the traffic started
	rssMiB     float64
	goroutines int     // -1 without the debug build
	heapMiB    float64 // heap in use; -1 without the debug build
	threads    int
	fds        int
	requests   int64 // sent so far
	unexpected int64 // of which ended unexpectedly
	events     string
}

// fault is a Redis restart or a users-file edit, for the chart.
type fault struct {
	at   time.Duration
	name string
}

// recorder writes every sample to the CSV as it comes (a run cut short
// keeps what it measured) and keeps them for the verdict and the chart.
type recorder struct {
	f       *os.File
	start   time.Time
	samples []sample

	mu      sync.Mutex
	pending []string
	faults  []fault
}

const csvHeader = "minutes,rss_mib,goroutines,heap_inuse_mib,threads,fds,requests,unexpected,events\n"

func newRecorder(path string) (*recorder, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if _, err := f.WriteString(csvHeader); err != nil {
		f.Close()
		return nil, err
	}
	return &recorder{f: f, start: time.Now()}, nil
}

// event notes a fault; it is written with the next sample.
func (r *recorder) event(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending = append(r.pending, name)
	r.faults = append(r.faults, fault{at: time.Since(r.start), name: name})
}

func (r *recorder) count(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, f := range r.faults {
		if f.name == name {
			n++
		}
	}
	return n
}

func (r *recorder) add(s sample) error {
	r.mu.Lock()
	s.events = strings.Join(r.pending, " ")
	r.pending = nil
	r.mu.Unlock()
	r.samples = append(r.samples, s)
	_, err := fmt.Fprintf(r.f, "%.2f,%.1f,%d,%.1f,%d,%d,%d,%d,%s\n",
		s.at.Minutes(), s.rssMiB, s.goroutines, s.heapMiB, s.threads, s.fds, s.requests, s.unexpected, s.events)
	return err
}

func (r *recorder) close() { r.f.Close() }
