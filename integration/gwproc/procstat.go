package gwproc

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
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

// clockTicks is the unit of /proc/<pid>/stat's CPU times (USER_HZ, 100
// on every Linux architecture Go supports).
const clockTicks = 100

// CPUTime is the CPU time pid has used so far, user and system, summed
// over its threads (/proc/<pid>/stat utime + stime; 10 ms resolution).
func CPUTime(pid int) (time.Duration, error) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// the fields after it start past the last ')'.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}
