package gwproc

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ProcSample is one reading of a process's resources from /proc.
type ProcSample struct {
	// RSSKB is the resident set size (VmRSS) in KiB.
	RSSKB int64
	// Threads is the number of OS threads (/proc/<pid>/status Threads).
	Threads int
	// FDs is the number of open file descriptors (/proc/<pid>/fd).
	FDs int
}

// SampleProc reads pid's RSS, thread count and open file descriptors.
func SampleProc(pid int) (ProcSample, error) {
	var s ProcSample
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return s, err
	}
	rss, threads := false, false
	for _, line := range strings.Split(string(status), "\n") {
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		fields := strings.Fields(value)
		if len(fields) == 0 {
			continue
		}
		switch key {
		case "VmRSS":
			s.RSSKB, err = strconv.ParseInt(fields[0], 10, 64)
			rss = err == nil
		case "Threads":
			s.Threads, err = strconv.Atoi(fields[0])
			threads = err == nil
		}
	}
	if !rss || !threads {
		return s, fmt.Errorf("VmRSS or Threads missing from /proc/%d/status", pid)
	}
	fds, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		return s, err
	}
	s.FDs = len(fds)
	return s, nil
}
