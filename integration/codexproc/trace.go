package codexproc

import (
	"context"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Connect is one connect(2) call seen by strace.
type Connect struct {
	// PID is the calling process.
	PID int
	// Family is the address family: "AF_INET", "AF_INET6", "AF_UNIX", ...
	Family string
	// Addr is the IP address (AF_INET, AF_INET6) or the socket path
	// (AF_UNIX); empty for other families.
	Addr string
	// Port is the TCP or UDP port (AF_INET, AF_INET6).
	Port int
	// Line is strace's line, for messages.
	Line string
}

// IP reports whether c is an AF_INET or AF_INET6 connect.
func (c Connect) IP() bool { return c.Family == "AF_INET" || c.Family == "AF_INET6" }

// Loopback reports whether c stays on this machine: a socket that is not
// an IP one (a Unix socket, say) or an IP address in 127.0.0.0/8 or ::1.
func (c Connect) Loopback() bool {
	if !c.IP() {
		return true
	}
	ip := net.ParseIP(c.Addr)
	return ip != nil && ip.IsLoopback()
}

// Outbound returns the connects that leave the machine (not Loopback).
func Outbound(connects []Connect) []Connect {
	var out []Connect
	for _, c := range connects {
		if !c.Loopback() {
			out = append(out, c)
		}
	}
	return out
}

var (
	traceLine   = regexp.MustCompile(`^(\d+)\s+connect\(\d+, \{sa_family=(AF_[A-Z0-9]+)(.*)$`)
	traceInet   = regexp.MustCompile(`sin_port=htons\((\d+)\), sin_addr=inet_addr\("([^"]+)"\)`)
	traceInet6  = regexp.MustCompile(`sin6_port=htons\((\d+)\).*inet_pton\(AF_INET6, "([^"]+)"`)
	traceUnix   = regexp.MustCompile(`sun_path=(@?"[^"]*")`)
	traceNoPIDs = regexp.MustCompile(`^connect\(`)
)

// ParseConnects reads the connect calls out of the output of
// `strace -f -e trace=connect -o FILE` (lines start with the pid).
// Resumed and unrecognised lines are skipped.
func ParseConnects(out string) []Connect {
	var connects []Connect
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if traceNoPIDs.MatchString(line) {
			line = "0 " + line
		}
		m := traceLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		c := Connect{Family: m[2], Line: line}
		c.PID, _ = strconv.Atoi(m[1])
		rest := m[3]
		switch c.Family {
		case "AF_INET":
			if a := traceInet.FindStringSubmatch(rest); a != nil {
				c.Port, _ = strconv.Atoi(a[1])
				c.Addr = a[2]
			}
		case "AF_INET6":
			if a := traceInet6.FindStringSubmatch(rest); a != nil {
				c.Port, _ = strconv.Atoi(a[1])
				c.Addr = a[2]
			}
		case "AF_UNIX":
			if a := traceUnix.FindStringSubmatch(rest); a != nil {
				c.Addr = strings.Trim(a[1], `@"`)
			}
		}
		connects = append(connects, c)
	}
	return connects
}

// requireStrace returns the strace binary after checking that it can
// trace a child here (ptrace may be forbidden in a container). Without it
// tb is skipped, or failed when LLMGW_REQUIRE_CODEX=1.
func requireStrace(tb testing.TB) string {
	tb.Helper()
	bin, err := exec.LookPath("strace")
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		var out []byte
		out, err = exec.CommandContext(ctx, bin, "-f", "-qq", "-e", "trace=connect", "-o", os.DevNull, "true").CombinedOutput()
		if err != nil {
			err = &traceError{err: err, out: string(out)}
		}
	}
	if err == nil {
		return bin
	}
	if os.Getenv(RequireEnv) == "1" {
		tb.Fatalf("%s=1 but strace cannot trace Codex: %v (Debian: apt-get install -y strace)", RequireEnv, err)
	}
	tb.Skipf("strace cannot trace Codex (%v): skipping", err)
	return ""
}

type traceError struct {
	err error
	out string
}

func (e *traceError) Error() string {
	return "strace: " + e.err.Error() + ": " + strings.TrimSpace(e.out)
}
